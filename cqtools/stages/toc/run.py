"""The model side of ``--method toc`` (:mod:`.toc` has the loop's bookkeeping): reranking, demo
selection, expansions, verifications and the long answer, each one batched call per round over
every tree of the batch, and the stage's batch function."""
from __future__ import annotations

from dataclasses import dataclass

from ...models.runtime import prompt_seed
from ...records import PASSAGES, require, set_meta
from ..options import CommandSettings
from . import prompt as TP
from . import EXPAND_STOP, VERIFY_STOP, TocConfig, TocTree

NEED_PASSAGES = "run `cq retrieve --hits 100` first (keep the pool: no `cq rerank --top 5` before toc)"
ANSWER_STOP = EXPAND_STOP


def tie_ranked(scores: list[float], tie_order: str) -> list[int]:
    """Indices by descending score. ``earlier``: equal scores keep pool order; ``argsort``: the released
    ``np.argsort(scores)[::-1]`` (toc/retrieval/combine.py:5 @75a3ddd) over float64 scores (sbert.py's
    ``.tolist()``), numpy's unstable default sort: a short list's ties come out later first."""
    if tie_order == "argsort":
        import numpy

        return [int(n) for n in numpy.argsort(numpy.asarray(scores, dtype=numpy.float64))[::-1]]
    return sorted(range(len(scores)), key=lambda n: (-scores[n], n))


@dataclass
class TocRunner:
    generator: object
    cross_encoder: object
    selector: object          # a ShotSelector over the demo pool (metric l2)
    template: object
    config: TocConfig
    seed: int = 0
    batch_size: int = 32      # items per model call (the run configuration's model batch size)

    # -- shared pieces -------------------------------------------------------------------------

    def rank(self, queries: list[str], lists: list[list[dict]], top: int | None) -> list[list[dict]]:
        """Each list reranked by the cross-encoder for its query (one call); equal scores as ``tie_order`` says."""
        pairs = [(q, TP.passage_string(p)) for q, ps in zip(queries, lists) for p in ps]
        scores = iter(self.cross_encoder.predict(pairs, batch_size=self.batch_size) if pairs else [])
        out = []
        for ps in lists:
            values = [float(next(scores)) for _ in ps]
            out.append([ps[n] for n in tie_ranked(values, self.config.tie_order)][:top])
        return out

    def demos(self, questions: list[str], trees: list[TocTree]) -> list[list]:
        picked = self.selector.nearest(questions, self.config.k_shots, [t.demos for t in trees])
        return [[self.selector.shots[i] for i in idx] for idx in picked]

    def demo_answers(self, index: int) -> list[str]:
        return [a for _, a in self.selector.shots[index][1]]

    def _generate(self, prompts: list[str], trees: list[TocTree], tokens: int, stop, sample: bool) -> list[str]:
        if not prompts:
            return []
        c = self.config
        decoding = {"temperature": c.temperature, "top_p": c.top_p, "seed": [t.seed for t in trees]} if sample \
            else {}
        return self.generator.generate(prompts, max_new_tokens=tokens, chat=False, stop=stop,
                                       batch_size=self.batch_size, **decoding)

    # -- one round of the loop -------------------------------------------------------------------

    def round(self, trees: list[TocTree]) -> bool:
        """One loop step of every unfinished tree; False when none was left."""
        c = self.config
        items = [(t, n) for t in trees if (n := t.next_node(c)) is not None]
        if not items:
            return False
        questions = [n.question for _, n in items]
        shown = self.rank(questions, [t.pool for t, _ in items], c.n_passages)
        demos = self.demos(questions, [t for t, _ in items])
        prompts = [TP.expansion_prompt(self.template, q, s, d) for q, s, d in zip(questions, shown, demos)]
        raw = self._generate(prompts, [t for t, _ in items], c.max_new_tokens, EXPAND_STOP, c.temperature > 0)
        candidates = [(tree, node, self.read(tree, passages, text))
                      for (tree, node), passages, text in zip(items, shown, raw)]
        self.verify([(t, p) for t, _, ps in candidates if t.pruning for p in ps])
        for tree, node, pairs in candidates:
            kept = [p for p in pairs if p.get("verified") is not False]
            tree.counts["rejected"] += len(pairs) - len(kept)
            tree.add(node, kept, c)
        return True

    def read(self, tree: TocTree, passages: list[dict], text: str) -> list[dict]:
        """One expansion's pairs, after the pool pruning (``--verify``) and, while pruning is on, the
        duplicate rule: those left go to verification (run_toc.py:220-236)."""
        c = self.config
        tree.shown += passages
        tree.counts["expansions"] += 1
        pairs = [{"question": q, "answer": a} for q, a in TP.read_expansion(text)[0]]
        if c.verify:
            tree.prune_pools(passages, [p["answer"] for p in pairs], self.demo_answers, c)
        if tree.pruning:
            new = [p for p in pairs if tree.is_new(p["question"], p["answer"])]
            tree.counts["deduplicated"] += len(pairs) - len(new)
            pairs = new
        return pairs

    def verify(self, items: list[tuple[TocTree, dict]]) -> None:
        """Mark each pair ``verified`` True/False: the evidence is the cross-encoder's top passage for
        the DQ among the tree's shown passages holding the answer; the prompt asks about the AQ."""
        if not items:
            return
        c = self.config
        pools = [t.evidence_pool(p["answer"], c) for t, p in items]
        evidence = [ranked[0] if ranked else None
                    for ranked in self.rank([p["question"] for _, p in items], pools, 1)]
        prompts = [TP.verify_prompt(self.template, t.question, e, p["answer"]) for (t, p), e in zip(items, evidence)]
        keep, verdicts = self.verdicts(prompts, [t for t, _ in items])
        for (tree, pair), passage, ok, score in zip(items, evidence, keep, verdicts):
            tree.counts["verifications"] += 1
            pair.update(verified=ok, passage_id=None if passage is None or "id" not in passage else str(passage["id"]))
            if score is not None:
                pair["score"] = round(score, 4)

    def verdicts(self, prompts: list[str], trees: list[TocTree]) -> tuple[list[bool], list]:
        """(keep, score or None) per verification prompt: greedy text holding the yes label, or
        log p(yes) > log p(no) under ``verify_rule=logprob``."""
        c = self.config
        yes, no = self.template("yes").strip(), self.template("no").strip()
        if c.verify_rule == "logprob":
            n = len(prompts)
            scores = self.generator.score(prompts + prompts, [" " + yes] * n + [" " + no] * n,
                                          batch_size=self.batch_size)
            margins = [scores[k] - scores[k + n] for k in range(n)]
            return [m > 0 for m in margins], margins
        raw = self._generate(prompts, trees, c.verify_max_new_tokens, VERIFY_STOP, False)
        return [yes in text for text in raw], [None] * len(raw)

    # -- the long answer -------------------------------------------------------------------------

    def long_answers(self, trees: list[TocTree]) -> list[tuple[str, dict]]:
        """(long answer, what made it) per tree: kNN demos for the AQ from the tree's demo pool, the
        first ``max_nodes`` valid pairs, the whole pool reranked for the AQ (top ``n_passages``), greedy."""
        c = self.config
        questions = [t.question for t in trees]
        shown = self.rank(questions, [t.passages for t in trees], c.n_passages)
        demos = self.demos(questions, trees)
        prompts = [TP.answer_prompt(self.template, t.question, s, d, t.answer_pairs(c))
                   for t, s, d in zip(trees, shown, demos)]
        raw = self._generate(prompts, trees, c.answer_max_new_tokens, ANSWER_STOP, False)
        return [(text.strip(), {"dqs_used": len(t.answer_pairs(c)), "demos": [getattr(x, "id", None) for x in d],
                                "passage_ids": [str(p.get("id")) for p in s]})
                for t, s, d, text in zip(trees, shown, demos, raw)]

    # -- the stage -------------------------------------------------------------------------------

    def trees(self, records: list[dict]) -> list[TocTree]:
        """One tree per record; its pool is the record's passages reranked for the question (what
        ``dsp.retrieve`` hands the loop: the order that breaks later ties)."""
        for record in records:
            require(record, "question", "every record needs a question")
        questions = [str(r["question"]) for r in records]
        pools = self.rank(questions, [list(require(r, PASSAGES, NEED_PASSAGES)) for r in records], None)
        keys = [str(r.get("id") if r.get("id") is not None else r["question"]) for r in records]
        return [TocTree(q, pool, list(range(len(self.selector.shots))), self.config.verify, prompt_seed(self.seed, k))
                for q, pool, k in zip(questions, pools, keys)]

    def run(self, records: list[dict], info: dict) -> list[dict]:
        trees = self.trees(records)
        while self.round(trees):
            pass
        answers = self.long_answers(trees) if self.config.long_answer else [None] * len(trees)
        for record, tree, answer in zip(records, trees, answers):
            self.write(record, tree, answer, info)
        return records

    def write(self, record: dict, tree: TocTree, answer, info: dict) -> None:
        c = self.config
        record["dqs"] = [{"question": n.question, "answer": n.answer, "node": n.id, "depth": n.depth,
                          "passage_id": n.passage_id} for n in tree.valid[: c.max_nodes]]
        record["tree"] = [n.to_json() for n in tree.nodes]
        removed = [getattr(self.selector.shots[d], "id", None) or d for d in tree.removed_demos]
        calls = tree.counts["expansions"] + tree.counts["verifications"] + (answer is not None)
        set_meta(record, "disambiguate", {**info, **tree.meta(), "removed_demos": removed, "model_calls": calls})
        if answer is not None:
            text, used = answer
            record["long_answer"] = text
            set_meta(record, "answer", {"mode": "long", "by": "disambiguate --method toc",
                                        "model": info.get("model"), "template": info.get("template"),
                                        "max_new_tokens": c.answer_max_new_tokens, "passages": c.n_passages,
                                        **used})


def toc_disambiguator(options: TocConfig, run, *, seed: int = CommandSettings.seed, batch_size: int = 32):
    """The batch function of ``--method toc`` with its checked options (the registry's factory)."""
    import functools

    from ...models.load import load_cross_encoder, load_generator
    from ...models.load import set_seed
    from .. import templates
    from ..rerank import DEFAULT_RERANKER
    from ..shots import DEFAULT_ENCODER, ShotSelector, load_shots

    shots_file = options.shots_file
    template = templates.load("toc", options.prompt)
    set_seed(seed)
    generator = load_generator(options.model, run.device, run.dtype, config=run)
    shots = load_shots(shots_file, max_pairs=None, min_pairs=1, need_long=True) if shots_file \
        else TP.builtin_demos()
    selector = ShotSelector(shots, encoder_name=options.encoder or DEFAULT_ENCODER, device=run.device, metric="l2",
                           config=run)
    cross_encoder = load_cross_encoder(options.reranker or DEFAULT_RERANKER, run.device, run)
    runner = TocRunner(generator, cross_encoder, selector, template, options, seed, batch_size)
    info = {**generator.info, "method": "toc", **options.params(), "seed": seed, "shots": len(shots),
            "shots_file": shots_file, "shot_encoder": selector.encoder_name,
            "reranker": cross_encoder.info.get("model"), "template": template.digest,
            "template_source": template.source}
    return functools.partial(_run, runner=runner, info=info)


def _run(records: list[dict], runner: TocRunner, info: dict) -> list[dict]:
    return runner.run(records, info)
