"""Tree of Clarifications' retrieval-augmented clarification (``--method rac``): a few-shot prompt (k shots picked by
question similarity, :mod:`..shots`) with the top passages, answered by a list of "DQ? Answer: A" lines. ``tree``
expands every DQ again with the record's passages reranked for it (:mod:`..tree`); ``prune`` asks the model whether
each node's answer could answer the original question, given the best passage holding that answer (log p(" True")
against log p(" False")), and drops the nodes it rejects. The tree is written to the record (``tree``) and ``dqs``
are its surviving nodes in BFS order. With ``reuse_tree`` (CLI ``--reuse-tree``) prune reads the tree an earlier
``--tree`` run wrote into the record (grown with the same settings, checked against its ``meta.disambiguate``)
instead of growing it again; each node's passages are reranked again as growth did, so the records are those of
growing and pruning in one run (``meta.disambiguate.reused_tree`` marks them)."""
from __future__ import annotations

import functools
from dataclasses import dataclass

from ...errors import InputError
from ...records import PASSAGES, require, set_meta, snippets
from ...registry import option
from .. import prompts_disamb as P, templates
from ..options import CommandSettings, encoder_option, reranker_option
from ..templates import Template
from ..tree import MAX_DEPTH, MAX_FAILURES, MAX_NODES, Tree, TreeLimits, answer_passage, grow
from .parsing import (DQS, NEED_PASSAGES, TREE, loaded, method_info, model_option, parse_pairs, passage_words_option,
                      passages_option, require_questions, template_option, tokens_option)

@dataclass(frozen=True)
class RacOptions:
    """few-shot DQ/answer pairs from the passages (Tree of Clarifications)"""

    model: str = model_option()
    n_passages: int = passages_option()
    passage_words: int = passage_words_option()
    max_new_tokens: int = tokens_option(128)
    prompt: str | None = template_option()
    shots_file: str | None = option(None, "JSONL records with gold.dqs to pick k-shot examples from by question "
                                          "similarity [default: built-in examples]", flag="--shots", metavar="FILE")
    k_shots: int = option(3, "examples per prompt", min=0)
    encoder: str | None = encoder_option("--shots: bi-encoder that embeds questions to pick the nearest shots "
                                         "[default: sentence-transformers/all-MiniLM-L6-v2]")
    tree: bool = option(False, "expand every DQ again, breadth first (Tree of Clarifications)")
    max_nodes: int = option(MAX_NODES, "stop at this many valid DQ nodes", min=1)
    max_depth: int = option(MAX_DEPTH, "--tree: deepest level of a DQ node (1 = plain rac)", min=1)
    max_failures: int = option(MAX_FAILURES, "--tree: stop after this many expansions in a row that add no valid node", min=1)
    prune: bool = option(False, "drop nodes whose answer the model judges no answer (True/False)")
    reuse_tree: bool = option(False, "--prune: prune the tree an earlier --tree run wrote")
    reranker: str | None = reranker_option(None, "--tree: cross-encoder that reranks the record's passages per DQ "
                                                 "[default: cross-encoder/ms-marco-MiniLM-L-12-v2]")
    rerank_depth: int = option(20, "--tree: passages of the record reranked for each DQ", min=1)

    @property
    def new_tokens(self) -> int:
        return self.max_new_tokens

    @property
    def limits(self) -> TreeLimits:
        # without --tree only the root is expanded (one RAC prompt per question)
        return TreeLimits(self.max_nodes, self.max_depth if self.tree else 1, self.max_failures)

    def params(self) -> dict:
        out = {"method": "rac", "passages": self.n_passages, "passage_words": self.passage_words,
               "max_new_tokens": self.new_tokens, "tree": self.tree, "prune": self.prune, "max_nodes": self.max_nodes,
               "max_depth": self.limits.max_depth, "max_failures": self.max_failures}
        if self.tree:
            out["rerank_depth"] = self.rerank_depth
        return out


class Clarifier:
    """Runs RAC expansions and the pruning verification for batches of trees."""

    def __init__(self, generator, config: RacOptions, selector, cross_encoder=None, tpl: Template | None = None,
                 batch_size: int = 32):
        self.generator = generator
        self.config = config
        self.batch_size = batch_size
        self.template = tpl or templates.builtin("rac")
        self.selector = selector
        self.cross_encoder = cross_encoder
        self._reranked: dict[int, list[dict]] = {}

    def expand(self, items: list[tuple[Tree, object]]) -> list[tuple[list, list[dict]]]:
        c = self.config
        passages = [self._passages(tree, node) for tree, node in items]
        shots = self.selector.select([node.question for _, node in items], c.k_shots)
        prompts = [P.rac_prompt(node.question, snippets(ps, c.n_passages, c.passage_words), sh, self.template)
                   for (_, node), ps, sh in zip(items, passages, shots)]
        raw = self.generator.generate(prompts, max_new_tokens=c.new_tokens, chat=False,
                                      stop=["\n\n", "Question:", "Passage:"])
        out = []
        for ps, generation in zip(passages, raw):
            pairs = []
            for question, answer in parse_pairs(self.template.text("primer") + generation):
                holder = answer_passage(answer, ps[: c.n_passages])
                pairs.append((question, answer, str(holder["id"]) if holder and "id" in holder else None))
            out.append((pairs, ps[: c.n_passages]))
        return out

    def _passages(self, tree: Tree, node) -> list[dict]:
        """The root reads the record's passages as given; a DQ reads them reranked for itself."""
        c = self.config
        if node.parent is None or self.cross_encoder is None or not c.n_passages:
            return tree.root.passages[: c.n_passages]
        return self._reranked.get(id(node)) or tree.root.passages[: c.n_passages]

    def rerank_for(self, items: list[tuple[Tree, object]]) -> None:
        """Rerank each non-root node's record passages for its question, in one model call."""
        from ..rerank import rerank_lists

        todo = [(t, n) for t, n in items if n.parent is not None]
        if not todo or self.cross_encoder is None or not self.config.n_passages:
            return
        lists = rerank_lists(self.cross_encoder, [n.question for _, n in todo],
                             [t.root.passages[: self.config.rerank_depth] for t, _ in todo],
                             self.config.n_passages, self.batch_size)
        for (_, node), ranked in zip(todo, lists):
            self._reranked[id(node)] = ranked

    def restore(self, trees: list[Tree]) -> None:
        """Give every non-root node of ``trees`` (rebuilt from an earlier run's records) the passages
        its parent's expansion read: the root's as given, a DQ's reranked for it again (the same
        call as in :meth:`grow`, so the same passages, each input scored alone)."""
        parents = [(t, t.nodes[p]) for t in trees for p in sorted({n.parent for n in t.valid})]
        self._reranked = {}
        self.rerank_for(parents)
        for tree in trees:
            for node in tree.valid:
                node.passages = self._passages(tree, tree.nodes[node.parent])[: self.config.n_passages]
        self._reranked = {}

    def grow(self, trees: list[Tree]) -> None:
        self._reranked = {}

        def expand(items):
            self.rerank_for(items)
            return self.expand(items)

        grow(trees, expand)
        self._reranked = {}

    def prune(self, trees: list[Tree]) -> None:
        """Mark ``pruned`` the nodes whose answer the model judges not an answer of the AQ."""
        items = []
        for tree in trees:
            for node in tree.valid:
                holder = next((p for p in node.passages if str(p.get("id")) == node.passage_id), None)
                holder = holder or (node.passages[0] if node.passages else None)
                text = snippets([holder], 1, self.config.passage_words)[0] if holder else "(none)"
                items.append((node, P.verify_prompt(tree.root.question, node.question, node.answer, text,
                                                     self.template)))
        if not items:
            return
        prompts = [p for _, p in items]
        true, false = P.verify_labels(self.template)
        scores = self.generator.score(prompts + prompts, [true] * len(prompts) + [false] * len(prompts))
        for k, (node, _) in enumerate(items):
            node.verify = round(scores[k] - scores[k + len(prompts)], 4)
            node.pruned = node.verify < 0


# meta.disambiguate keys that count what a run did, not how its trees were grown
_COUNTS = ("model_calls", "expansions", "valid_nodes", "pruned", "rejected_pairs", "stop", "reused_tree")
NEED_TREE = "run `cq disambiguate --method rac --tree` first, or drop --reuse-tree to grow the tree here"


def grown_tree(record: dict, passages: list[dict], config: RacOptions, info: dict) -> Tree:
    """The tree an earlier ``--tree`` run wrote into ``record``, checked to be grown with this run's
    settings (model, device, dtype, batching, passages, limits, shots, reranker, seed: every
    setting in ``meta.disambiguate`` but ``prune`` and the counts)."""
    rid = record.get("id")
    meta = record.get("meta")
    earlier = meta.get("disambiguate") if isinstance(meta, dict) else None
    if not isinstance(record.get(TREE), list) or not isinstance(earlier, dict) or not earlier.get("tree"):
        raise InputError(f"record {rid} has no '{TREE}' from a --tree run; {NEED_TREE}", record_id=rid)
    same_source = {"hf-cache": "hub"}  # downloaded by the first run, read from the hub cache by the next
    for key in sorted((set(info) | set(earlier)) - set(_COUNTS) - {"prune"}):
        mine, theirs = info.get(key), earlier.get(key)
        if key == "source":
            mine, theirs = same_source.get(mine, mine), same_source.get(theirs, theirs)
        if mine != theirs:
            raise InputError(f"record {rid}: its tree was grown with {key}={earlier.get(key)!r}, this run has "
                             f"{info.get(key)!r}; pass the same settings, or drop --reuse-tree", record_id=rid)
    try:
        return Tree.from_json(str(record["question"]), passages, config.limits, record[TREE],
                              int(earlier.get("expansions", 0)), int(earlier.get("rejected_pairs", 0)),
                              earlier.get("stop"))
    except (ValueError, TypeError, AttributeError) as err:
        raise InputError(f"record {rid}: its '{TREE}' is not one cq wrote ({err}); {NEED_TREE}",
                         record_id=rid) from None


def rac_batch(records: list[dict], clarifier: Clarifier, info: dict | None = None) -> list[tuple[list[dict], int, Tree]]:
    c = clarifier.config
    trees = []
    for record in records:
        passages = list(require(record, PASSAGES, NEED_PASSAGES)) if c.n_passages else []
        trees.append(grown_tree(record, passages, c, info or {}) if c.reuse_tree
                     else Tree(str(record["question"]), passages, c.limits))
    if c.reuse_tree:
        clarifier.restore(trees)
    else:
        clarifier.grow(trees)
    if c.prune:
        clarifier.prune(trees)
    out = []
    for tree in trees:
        dqs = [{"question": n.question, "answer": n.answer, "node": n.id, "depth": n.depth,
                "passage_id": n.passage_id} for n in tree.surviving()]
        calls = tree.expansions + (len(tree.valid) if c.prune else 0)
        out.append((dqs, calls, tree))
    return out


def rac_disambiguator(options: RacOptions, run, *, seed: int = CommandSettings.seed, batch_size: int = 32):
    """The batch function of ``--method rac`` (the registry's factory)."""
    from ...models.load import load_cross_encoder
    from ..rerank import DEFAULT_RERANKER
    from ..shots import DEFAULT_ENCODER, ShotSelector, builtin_shots, load_shots

    if options.reuse_tree and run.padded_batches:  # growth reranked round by round; padded scores depend on the batch
        raise InputError("--reuse-tree restores each node's passages exactly only with each input alone; "
                         "unset CQ_PADDED_BATCHES (or grow and prune in one run)")
    generator, tpl = loaded(options.model, run, seed, "rac", options.prompt)
    info = method_info(generator, options, seed, tpl)
    shots = load_shots(options.shots_file) if options.shots_file else builtin_shots()
    selector = ShotSelector(shots, encoder_name=options.encoder or DEFAULT_ENCODER, device=run.device, config=run)
    cross_encoder = (load_cross_encoder(options.reranker or DEFAULT_RERANKER, run.device, run)
                     if options.tree and options.n_passages else None)
    clarifier = Clarifier(generator, options, selector, cross_encoder, tpl, batch_size)
    info.update(selector.info(options.k_shots), shots_file=options.shots_file)
    if cross_encoder is not None:
        info["reranker"] = cross_encoder.info["model"]
    return functools.partial(_batch, clarifier=clarifier, info=info)


def _batch(records: list[dict], clarifier: Clarifier, info: dict) -> list[dict]:
    require_questions(records)
    reused = {"reused_tree": True} if clarifier.config.reuse_tree else {}
    for record, (dqs, calls, tree) in zip(records, rac_batch(records, clarifier, info)):
        record[DQS] = dqs
        record[TREE] = tree.to_json()
        set_meta(record, "disambiguate", {**info, "model_calls": calls, "expansions": tree.expansions,
                                          "valid_nodes": len(tree.valid), "pruned": sum(n.pruned for n in tree.valid),
                                          "rejected_pairs": tree.rejected, "stop": tree.stop_reason, **reused})
    return records
