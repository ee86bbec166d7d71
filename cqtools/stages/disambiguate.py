"""Disambiguation stage: ``dqs: [{question, answer, ...}]`` per record.

Methods:
  qd   AmbigQA question disambiguation: one minimal edit of the prompt question per predicted
       answer (``answers`` from ``cq answer --mode multi``), conditioned on the question, that
       answer, the other answers and the passages. A record with one answer keeps the question as
       its only DQ (``"unchanged": true``); no answer gives no DQ. By default (cq's own variant) the
       prompt shows the passages first, then question, answer and at most 5 other answers; the top
       passages holding the answer are moved first; and a generation that echoes the question (or
       repeats an earlier DQ, or is empty) is replaced by a built-in rewrite, "AQ (title of the
       passage holding the answer)?", marked ``"fallback": true``. As AmbigQA's released model
       reads it (``--preset ambigqa``): ``layout="ambigqa"`` (target answer, question, other answers,
       passages), ``max_others=0`` (every other answer), ``passage_order="reranked"``,
       ``max_passage_tokens`` (passages in order up to the budget) and ``duplicates="keep"`` (a DQ
       stays as generated).
  disambig-first  AmbigQA's DISAMBIG-FIRST baseline, steps 1-2: a question ``cq detect`` labelled
       ambiguous is rewritten into its readings closed-book (no passages, no answers); any other
       keeps its question as its one DQ. DQs carry no answer (step 3: ``cq answer --mode dqs``).
  rac  Tree of Clarifications' retrieval-augmented clarification: a few-shot prompt (k shots
       picked by question similarity, :mod:`.shots`) with the top passages, answered by a list of
       "DQ? Answer: A" lines. ``tree`` expands every DQ again with the record's passages
       reranked for it (:mod:`.tree`); ``prune`` asks the model whether each node's answer could
       answer the original question, given the best passage holding that answer (log p(" True")
       against log p(" False")), and drops the nodes it rejects. The tree is written to the record
       (``tree``) and ``dqs`` are its surviving nodes in BFS order. With ``reuse_tree`` (CLI
       ``--reuse-tree``) prune reads the tree an earlier ``--tree`` run wrote into the record
       (grown with the same settings, checked against its ``meta.disambiguate``) instead of growing
       it again; each node's passages are reranked again as growth did, so the records are those of
       growing and pruning in one run (``meta.disambiguate.reused_tree`` marks them).

Every LLM prompt (a generation or a True/False verification) counts as one model call; the count
is written to ``meta.disambiguate.model_calls`` per record (ToC promises fewer than 20).
"""
from __future__ import annotations

import dataclasses
import functools
import re
from dataclasses import dataclass
from typing import Callable

from ..errors import InputError
from ..metrics.normalize import normalize_answer
from ..models.roles import role
from ..records import PASSAGES, answer_texts, distinct_texts, require, set_meta, snippets
from . import prompts_disamb as P, templates
from .templates import Template
from .tree import Tree, TreeLimits, answer_passage, grow

DEFAULT_MODEL = role("disambiguator").default
DQS = "dqs"
TREE = "tree"
NEED_PASSAGES = "run `cq retrieve` (and `cq rerank`) first, or pass --passages 0"
NEED_ANSWERS = "run `cq answer --mode multi` first: --method qd writes one DQ per predicted answer"


# qd's settings as they were before the AmbigQA preset: a run record names only those that differ
QD_DEFAULTS = {"layout": "cq", "passage_order": "answer-first", "duplicates": "fallback", "max_others": 5,
               "max_passage_tokens": None}


@dataclass
class DisambigConfig:
    method: str = "rac"          # qd | disambig-first | rac
    n_passages: int = 5          # top passages in each prompt (--passages)
    passage_words: int = 80      # each passage's text cut to this many words
    max_new_tokens: int | None = None  # None: 40 for qd, 128 for rac
    k_shots: int = 3
    tree: bool = False
    max_nodes: int = 10
    max_depth: int = 2
    max_failures: int = 3
    prune: bool = False
    rerank_depth: int = 20       # --tree: passages of the record reranked for each DQ
    reuse_tree: bool = False     # --prune: prune the tree an earlier --tree run wrote, do not grow it
    batch_size: int = 32
    # qd: today's behaviour by default; the released AmbigQA QD input under --preset ambigqa
    layout: str = "cq"                   # cq (passages first) | ambigqa (answer, question, others, passages)
    passage_order: str = "answer-first"  # answer-first (passages holding the answer moved first) | reranked
    duplicates: str = "fallback"         # fallback ("AQ (title)?" for an echo or repeat) | keep (as generated)
    max_others: int = 5                  # other answers shown (0: all of them)
    max_passage_tokens: int | None = None  # passages in order up to this many prompt tokens (evidence.fit)

    @property
    def new_tokens(self) -> int:
        return self.max_new_tokens or (40 if self.method == "qd" else 128)

    @property
    def limits(self) -> TreeLimits:
        # without --tree only the root is expanded (one RAC prompt per question)
        return TreeLimits(self.max_nodes, self.max_depth if self.tree else 1, self.max_failures)

    def params(self) -> dict:
        out = {"method": self.method, "passages": self.n_passages, "passage_words": self.passage_words,
               "max_new_tokens": self.new_tokens}
        if self.method == "qd":  # only the settings that differ from today's, so default records stay as they were
            out.update({k: getattr(self, k) for k, v in QD_DEFAULTS.items() if getattr(self, k) != v})
        if self.method == "disambig-first":
            return {"method": self.method, "max_new_tokens": self.new_tokens}
        if self.method == "rac":
            out.update(tree=self.tree, prune=self.prune, max_nodes=self.max_nodes,
                       max_depth=self.limits.max_depth, max_failures=self.max_failures)
            if self.tree:
                out["rerank_depth"] = self.rerank_depth
        return out


# --- parsing generations -------------------------------------------------------------------------

_NUMBER = re.compile(r"^\s*(?:\d+\s*[.)]|[-*•]|DQ\s*\d*\s*:|Q\s*\d*\s*:)\s*", re.I)
_PAIR = re.compile(r"^(?P<q>.+?\?)\s*(?:\(?\s*(?:answer|a)\s*[:=-]\s*)?(?P<a>.*)$", re.I)
_ANSWER_TAG = re.compile(r"\s*\b(?:answer|a)\s*:\s*", re.I)


def clean_short(text: str, max_words: int = 10) -> str:
    """A generated short answer: first clause, no quotes, no trailing punctuation; '' if too long."""
    text = text.strip().strip("\"'`*()[]").strip()
    text = re.sub(r"[.!;,:)\]]+$", "", text).strip().strip("\"'`*").strip()
    return text if 0 < len(text.split()) <= max_words else ""


def parse_pairs(raw: str) -> list[tuple[str, str]]:
    """"1. DQ? Answer: A" lines -> [(DQ, A)]; lines without a question mark and an answer are dropped."""
    pairs = []
    for line in raw.splitlines():
        line = _NUMBER.sub("", line.strip())
        if not line:
            continue
        match = _PAIR.match(line)
        if match:
            question, answer = match.group("q").strip(), match.group("a")
        elif _ANSWER_TAG.search(line):  # "DQ Answer: A" without a question mark
            question, answer = _ANSWER_TAG.split(line, maxsplit=1)
            question = question.strip().rstrip(".") + "?"
        else:
            continue
        answer = clean_short(_ANSWER_TAG.sub("", answer, count=1))
        question = question.strip(" \"'`*")
        if answer and len(question.split()) >= 3:
            pairs.append((question, answer))
    return pairs


def clean_question(raw: str) -> str:
    """First line of a generation, cut after its first "?" (one added if missing)."""
    lines = [x.strip() for x in raw.strip().splitlines() if x.strip()]
    if not lines:
        return ""
    line = re.sub(r"^(?:rewritten question|question)\s*:\s*", "", lines[0], flags=re.I).strip(" \"'`*")
    cut = line.find("?")
    line = line[: cut + 1] if cut >= 0 else line.rstrip(".") + "?"
    return line.strip(" \"'`*")


# --- qd --------------------------------------------------------------------------------------------

def distinct_answers(record: dict) -> list[str]:
    """The record's predicted answers without repeats (normalised), stripped."""
    return [text.strip() for text in distinct_texts(answer_texts(record, NEED_ANSWERS))]


def fallback_question(question: str, answer: str, passages: list[dict], used: set[str]) -> str:
    """The built-in rewrite: "AQ (context)?" where context is the title of the first passage
    holding the answer, or the answer itself when there is no such title (or it is taken)."""
    base = question.strip().rstrip("?").strip()
    passage = answer_passage(answer, passages)
    title = (passage or {}).get("title")
    for context in (title, answer):
        if not context:
            continue
        candidate = f"{base} ({context})?"
        if normalize_answer(context) not in normalize_answer(base) and normalize_answer(candidate) not in used:
            return candidate
    return f"{base} ({answer})?"


def qd_batch(records: list[dict], generator, config: DisambigConfig,
             tpl: Template | None = None) -> list[tuple[list[dict], int]]:
    """(dqs, model calls) per record: one prompt per predicted answer of a record with several.

    Each prompt conditions on the question, the target answer, the other answers (``max_others``
    of them, 0: all) and passages: the top ``n_passages`` with those holding the answer moved first
    (``passage_order="answer-first"``) or in the record's (reranked) order (``"reranked"``), and with
    ``max_passage_tokens`` only as many as fit that budget beside the question and answers
    (:func:`.evidence.fit`; the count per DQ goes to ``meta.passages_read.disambiguate``). A DQ that
    echoes the question or an earlier DQ becomes "AQ (title)?" (``duplicates="fallback"``) or stays
    as generated (``"keep"``, as AmbigQA's released model writes it)."""
    from . import evidence

    count = evidence.token_counter(generator) if config.max_passage_tokens else None
    jobs = []  # (record index, answer, others, passages shown, the record's passages)
    per_record: list[list[dict]] = [[] for _ in records]
    calls = [0] * len(records)
    for n, record in enumerate(records):
        answers = distinct_answers(record)
        passages = list(require(record, PASSAGES, NEED_PASSAGES)) if config.n_passages else []
        if len(answers) == 1:
            per_record[n] = [{"question": record["question"], "answer": answers[0], "unchanged": True}]
            continue
        for answer in answers:
            others = [a for a in answers if a != answer]
            others = others[:config.max_others] if config.max_others else others
            if config.passage_order == "answer-first":
                holding = [p for p in passages if answer_passage(answer, [p])]
                ordered = holding + [p for p in passages if p not in holding]
            else:
                ordered = passages
            shown = ordered[: config.n_passages]
            if count is not None and shown:
                used = count(P.qd_prompt(record["question"], answer, others, [], tpl, config.layout))
                shown = evidence.fit(shown, config.max_passage_tokens, count, used,
                                     render=lambda p: snippets([p], 1, config.passage_words)[0])
            jobs.append((n, answer, others, shown, passages))
    prefix = P.qd_prefix(tpl, config.layout)
    prompts = [prefix + P.qd_prompt(records[n]["question"], a, o, snippets(s, len(s), config.passage_words),
                                    tpl, config.layout)
               for n, a, o, s, _ in jobs]
    raw = generator.generate(prompts, max_new_tokens=config.new_tokens, chat=False, stop=["\n"]) if prompts else []
    used_dqs: dict[int, set[str]] = {}
    read: dict[int, list[int]] = {}
    for (n, answer, _, shown, passages), generation in zip(jobs, raw):
        calls[n] += 1
        read.setdefault(n, []).append(len(shown))
        question = records[n]["question"]
        seen = used_dqs.setdefault(n, {normalize_answer(question)})
        dq = clean_question(generation)
        entry = {"question": dq, "answer": answer}
        if config.duplicates == "fallback" and (not normalize_answer(dq) or normalize_answer(dq) in seen):
            entry = {"question": fallback_question(question, answer, passages, seen), "answer": answer,
                     "fallback": True, "generated": generation.strip()}
        seen.add(normalize_answer(entry["question"]))
        per_record[n].append(entry)
    if count is not None:
        for n, record in enumerate(records):
            evidence.note_read(record, "disambiguate", read.get(n, []))
    return list(zip(per_record, calls))


# --- DISAMBIG-FIRST (AmbigQA's baseline, steps 1-2) ----------------------------------------------

NEED_AMBIGUITY = ("run `cq detect` first (AmbigQA's DISAMBIG-FIRST: `cq detect --method classifier --passages 0`): "
                  "--method disambig-first rewrites only the questions it labels ambiguous")


def parse_readings(raw: str, question: str) -> list[str]:
    """Numbered (or bulleted) lines of a generation -> distinct questions, each cut after its "?";
    an echo of ``question``, a repeat, or a line of fewer than 3 words is dropped."""
    seen = {normalize_answer(question)}
    out = []
    for line in raw.splitlines():
        text = clean_question(_NUMBER.sub("", line.strip())) if line.strip() else ""
        key = normalize_answer(text)
        if len(text.split()) >= 3 and key and key not in seen:
            seen.add(key)
            out.append(text)
    return out


def ambiguity_label(record: dict) -> bool:
    amb = record.get("ambiguity")
    if not isinstance(amb, dict) or not isinstance(amb.get("label"), bool):
        raise InputError(f"record {record.get('id')} has no ambiguity label; {NEED_AMBIGUITY}",
                         record_id=record.get("id"))
    return amb["label"]


def disambig_first_batch(records: list[dict], generator, config: DisambigConfig,
                         tpl: Template | None = None) -> list[tuple[list[dict], int]]:
    """(dqs, model calls) per record: a question the detector labelled ambiguous is rewritten into
    its readings closed-book (the question alone: no passages, no answers), one prompt; any other
    keeps its question as its single DQ (``"unchanged": true``). DQs carry no answer: ``cq answer
    --mode dqs`` retrieves and reads for each. A generation with no usable reading keeps the question
    (``"fallback": true``)."""
    todo = [n for n, r in enumerate(records) if ambiguity_label(r)]
    primer = _tpl_text(tpl, "primer")
    prompts = [P.disambig_first_prompt(records[n]["question"], tpl) for n in todo]
    raw = generator.generate(prompts, max_new_tokens=config.new_tokens, chat=False,
                             stop=["\n\n", "Question:"]) if prompts else []
    out: list[tuple[list[dict], int]] = [([{"question": r["question"], "unchanged": True}], 0) for r in records]
    for n, generation in zip(todo, raw):
        question = records[n]["question"]
        readings = parse_readings(primer + generation, question)
        dqs = [{"question": q} for q in readings] or [{"question": question, "fallback": True,
                                                       "generated": generation.strip()}]
        out[n] = (dqs, 1)
    return out


def _tpl_text(tpl: Template | None, part: str) -> str:
    return (tpl or templates.builtin("disambig_first")).text(part)


# --- rac (+ tree, + prune) -------------------------------------------------------------------------

class Clarifier:
    """Runs RAC expansions and the pruning verification for batches of trees."""

    def __init__(self, generator, config: DisambigConfig, selector, cross_encoder=None, tpl: Template | None = None):
        self.generator = generator
        self.config = config
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
        from .rerank import rerank_lists

        todo = [(t, n) for t, n in items if n.parent is not None]
        if not todo or self.cross_encoder is None or not self.config.n_passages:
            return
        lists = rerank_lists(self.cross_encoder, [n.question for _, n in todo],
                             [t.root.passages[: self.config.rerank_depth] for t, _ in todo],
                             self.config.n_passages, self.config.batch_size)
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


def grown_tree(record: dict, passages: list[dict], config: DisambigConfig, info: dict) -> Tree:
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


# --- the stage ------------------------------------------------------------------------------------

def build(method: str = "rac", config=None, **options) -> Callable[[list[dict]], list[dict]]:
    """The disambiguate stage as a batch function (records -> records); ``options`` are the method's
    (its schema in the DISAMBIGUATORS registry: n_passages, tree, prune, ...; a misspelled one is an
    error), ``seed`` and ``batch_size`` among them."""
    from ..registry import DISAMBIGUATORS
    from .common import stage_fn

    return stage_fn(None, "disambiguate", method, DISAMBIGUATORS, config, options, None)


def disambiguator(method: str, run, *, model: str = DEFAULT_MODEL, seed: int = 0, shots_file: str | None = None,
                  encoder: str | None = None, reranker: str | None = None, prompt: str | None = None, **options):
    """The batch function of ``method`` (qd, disambig-first or rac) with its checked options (the registry's factories)."""
    from ..models import load_cross_encoder, load_generator
    from ..models.backends import set_seed
    from .rerank import DEFAULT_RERANKER
    from .shots import DEFAULT_ENCODER, ShotSelector, builtin_shots, load_shots

    names = {f.name for f in dataclasses.fields(DisambigConfig)}
    config = DisambigConfig(method=method, **{k: v for k, v in options.items() if k in names})
    if config.reuse_tree:
        if run.padded_batches:  # growth reranked round by round; padded scores depend on the batch
            raise InputError("--reuse-tree restores each node's passages exactly only with each input alone; "
                             "unset CQ_PADDED_BATCHES (or grow and prune in one run)")
    set_seed(seed)
    device = run.device
    generator = load_generator(model, device, run.dtype)
    tpl = templates.load(method.replace("-", "_"), prompt)
    info = {**generator.info, **config.params(), "seed": seed, **templates.meta(tpl)}
    clarifier = None
    if method == "rac":
        shots = load_shots(shots_file) if shots_file else builtin_shots()
        selector = ShotSelector(shots, encoder_name=encoder or DEFAULT_ENCODER, device=device)
        cross_encoder = (load_cross_encoder(reranker or DEFAULT_RERANKER, device)
                         if config.tree and config.n_passages else None)
        clarifier = Clarifier(generator, config, selector, cross_encoder, tpl)
        info.update(selector.info(config.k_shots), shots_file=shots_file)
        if cross_encoder is not None:
            info["reranker"] = cross_encoder.info["model"]
    return functools.partial(disambiguate_batch, generator=generator, config=config, info=info, clarifier=clarifier,
                             tpl=tpl)


def disambiguate_batch(records: list[dict], generator, config: DisambigConfig, info: dict,
                       clarifier: Clarifier | None = None, tpl: Template | None = None) -> list[dict]:
    for record in records:
        require(record, "question", "every record needs a question")
    if config.method in ("qd", "disambig-first"):
        batch = qd_batch if config.method == "qd" else disambig_first_batch
        for record, (dqs, calls) in zip(records, batch(records, generator, config, tpl)):
            record[DQS] = dqs
            set_meta(record, "disambiguate", {**info, "model_calls": calls,
                                              "fallbacks": sum(bool(d.get("fallback")) for d in dqs)})
        return records
    if clarifier is None:
        raise ValueError("--method rac needs a Clarifier")
    reused = {"reused_tree": True} if config.reuse_tree else {}
    for record, (dqs, calls, tree) in zip(records, rac_batch(records, clarifier, info)):
        record[DQS] = dqs
        record[TREE] = tree.to_json()
        set_meta(record, "disambiguate", {**info, "model_calls": calls, "expansions": tree.expansions,
                                          "valid_nodes": len(tree.valid), "pruned": sum(n.pruned for n in tree.valid),
                                          "rejected_pairs": tree.rejected, "stop": tree.stop_reason, **reused})
    return records
