"""``cq disambiguate --method toc``: Tree of Clarifications as its released code runs it
(gankim/tree-of-clarifications @75a3ddd, ``run_toc.py``; docs/audit/toc-clam.md §1,
docs/methods-toc.md for what still differs).

One tree per question, grown breadth first from the ambiguous question (the root, level 0):

- each loop step pops the next node (a pop counts even when the node is too deep to expand: level
  ``max_depth`` and below are created but never expanded); when the queue is empty the root and
  every valid node are queued again (a restart); the loop runs while there are fewer than
  ``max_restarts`` restarts, fewer than ``max_nodes`` valid nodes and fewer than ``max_pops`` pops;
- an expansion shows the node's question with the top ``n_passages`` of the question's current
  passage pool reranked for it, and ``k_shots`` demos picked by kNN from the current demo pool;
- under ``verify`` (the documented run) every expansion then removes from the demo pool the demos
  one of whose gold answers matches a generated answer (token F1 > ``demo_f1``) and from the
  passage pool the shown passages that hold a generated answer; while pruning is on, each parsed
  pair that survives the duplicate rule (an earlier valid pair with the same question whose answer
  is part of this answer) is verified with one model call, and only verified pairs become nodes;
- an expansion that adds nothing after ``max_restarts`` restarts or ``unprune_after`` pops turns
  pruning (verification and the duplicate rule) off for the rest of the tree and resets the
  restart count.

All trees of a batch advance together, one loop step per round, so every model call of a round is
one batch; what a tree does never depends on its batch mates. The long answer (:mod:`.toc_answer`)
is written at the end, as in the released run.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields

from ...registry import option

from . import prompt as TP
from ..options import encoder_option, llm_option, prompt_option, reranker_option
from .match import answer_f1, holds


@dataclass(frozen=True)
class TocOptions:
    """Tree of Clarifications as its released code runs it: verify each pair during growth, restarts, the long answer at the end"""

    model: str = llm_option()
    n_passages: int = option(5, "passages shown per expansion: the question's pool reranked for the node, top N",
                             min=1, flag="--passages")  # --top_k_reranked
    shots_file: str | None = option(None, "JSONL records with gold.dqs and gold.long_answers (`cq convert asqa` "
                                          "train) to pick demos from by kNN [default: built-in demos]", flag="--shots",
                                    metavar="FILE")
    k_shots: int = option(5, "demos per prompt (nearest last)", min=0)  # --n_shot
    encoder: str | None = encoder_option("bi-encoder for the demos' kNN, L2 on raw vectors [default: "
                                         "sentence-transformers/all-MiniLM-L6-v2]")
    reranker: str | None = reranker_option(None, "cross-encoder that reranks the pool per node and picks the "
                                                 "verification evidence [default: cross-encoder/ms-marco-MiniLM-L-12-v2]")
    tie_order: str = option("earlier", "equal reranker scores: earlier (pool order) or argsort (numpy's argsort "
                                       "reversed, as the released code: the later first in a short list)",
                            choices=("earlier", "argsort"))
    prompt: str | None = prompt_option()
    max_nodes: int = option(10, "valid nodes before growth stops (checked before each expansion; the long answer "
                                "uses the first N)", min=1)
    max_depth: int = option(3, "deepest level of a node (root 0); nodes on it are not expanded", min=1)
    max_pops: int = option(16, "queue pops per question, skipped too-deep nodes included", min=1)  # n_expansions <= 15
    max_restarts: int = option(3, "re-queue the root and every valid node when the queue empties, at most N times",
                               min=1)  # --max_trials
    unprune_after: int = option(10, "a failed expansion after this many pops (or N restarts) turns verification and "
                                    "dedup off", min=1)
    verify: bool = option(True, "verify each new pair during growth (and prune the demo and passage pools); off: the "
                                "paper's RAC+TS", flag="--verify/--no-verify")
    verify_rule: str = option("generate", "generate: keep iff the greedy completion contains True; logprob: log "
                                          "p(True) > log p(False)", choices=("generate", "logprob"))
    evidence_match: str = option("tokens", "which shown passages hold the answer for the evidence: tokens (the "
                                           "answer's token sequence) or chars (each character, as the released code "
                                           "calls it)", choices=("tokens", "chars"))
    demo_f1: float = option(0.8, "a demo whose gold answer matches a generated one above this token F1 leaves the "
                                 "question's demo pool", min=0)
    temperature: float = option(0.7, "expansion sampling temperature (0: greedy)", min=0)
    top_p: float = option(1.0, "expansion nucleus sampling", min=0, max=1)
    max_new_tokens: int = option(300, "tokens per expansion", min=1)
    verify_max_new_tokens: int = option(300, "tokens per verification (greedy)", min=1)
    answer_max_new_tokens: int = option(300, "tokens of the long answer (greedy)", min=1)
    long_answer: bool = option(True, "write the long answer (record key long_answer) at the end of the run",
                               flag="--long-answer/--no-long-answer")

    LOADING = ("model", "shots_file", "encoder", "reranker", "prompt")  # what is loaded, noted apart in meta

    def params(self) -> dict:
        """The loop's settings as ``meta.disambiguate`` holds them."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name not in self.LOADING}


TocConfig = TocOptions  # the name the loop's code and tests used


EXPAND_STOP = ["\n\n---", "\n\nQuestion:", "\n\nContext:"]
VERIFY_STOP = ["\nContext:", "\nQuestion:", "\nProposed Answer:"]


@dataclass
class TocNode:
    id: int
    parent: int | None
    question: str
    answer: str | None
    depth: int
    passage_id: str | None = None    # the verification's evidence passage
    verified: bool | None = None     # None: added while pruning was off
    verify_score: float | None = None

    def to_json(self) -> dict:
        out = {"id": self.id, "parent": self.parent, "question": self.question, "answer": self.answer,
               "depth": self.depth, "pruned": False, "passage_id": self.passage_id, "verified": self.verified}
        if self.verify_score is not None:
            out["verify"] = self.verify_score
        return out


@dataclass
class TocTree:
    """One question's loop state (``run_toc.py:190-254``)."""

    question: str
    passages: list[dict]             # the record's whole pool (all_passages)
    demos: list[int]                 # indices of the demos still in this question's pool (cur_demos)
    pruning: bool
    seed: int = 0
    pool: list[dict] = field(default_factory=list)       # cur_passages
    shown: list[dict] = field(default_factory=list)      # slt_psgs: every passage shown in an expansion
    nodes: list[TocNode] = field(default_factory=list)
    queue: list[TocNode] = field(default_factory=list)
    pops: int = 0
    restarts: int = 0
    counts: dict = field(default_factory=lambda: dict.fromkeys(
        ("expansions", "verifications", "restarts", "skipped", "deduplicated", "rejected"), 0))
    pruning_off_at: int | None = None
    removed_demos: list[int] = field(default_factory=list)
    removed_passages: int = 0
    stop: str | None = None

    def __post_init__(self):
        self.pool = list(self.passages)
        self.nodes = [TocNode(0, None, self.question, None, 0)]
        self.queue = [self.nodes[0]]

    @property
    def valid(self) -> list[TocNode]:
        return self.nodes[1:]

    def next_node(self, c: TocConfig) -> TocNode | None:
        """The next node to expand (``run_toc.py:204-217``), or None when the loop ends."""
        while self.stop is None:
            if self.restarts >= c.max_restarts:
                self.stop = "restarts"
            elif len(self.valid) >= c.max_nodes:
                self.stop = "max_nodes"
            elif self.pops >= c.max_pops:
                self.stop = "max_pops"
            else:
                self.pops += 1
                if not self.queue:
                    self.queue = [self.nodes[0], *self.valid]
                    self.restarts += 1
                    self.counts["restarts"] += 1
                node = self.queue.pop(0)
                if node.depth < c.max_depth:
                    return node
                self.counts["skipped"] += 1
        return None

    def is_new(self, question: str, answer: str) -> bool:
        """``check_unique``: False when an earlier valid pair has this very question and its answer
        is a substring of ``answer``."""
        return not any(n.question == question and n.answer in answer for n in self.valid)

    def prune_pools(self, shown: list[dict], answers: list[str], demo_answers, c: TocConfig) -> None:
        """``remove_dup_demos`` and ``remove_dup_psgs`` (run_toc.py:94-123) after one expansion."""
        if not answers:
            return
        drop = [d for d in self.demos if any(answer_f1(gold, answers) > c.demo_f1 for gold in demo_answers(d))]
        self.demos = [d for d in self.demos if d not in drop]
        self.removed_demos += drop
        keys = {TP.passage_string(p) for p in shown}
        keep = [p for p in self.pool if not (TP.passage_string(p) in keys and holds(TP.passage_string(p), answers))]
        self.removed_passages += len(self.pool) - len(keep)
        self.pool = keep

    def evidence_pool(self, answer: str, c: TocConfig) -> list[dict]:
        """``get_evidence``: the shown passages (deduplicated) that hold ``answer``, else all of them."""
        seen, distinct = set(), []
        for p in self.shown:
            key = TP.passage_string(p)
            if key not in seen:
                seen.add(key)
                distinct.append(p)
        answers = list(answer) if c.evidence_match == "chars" else [answer]
        holding = [p for p in distinct if holds(TP.passage_string(p), answers)]
        return holding or distinct

    def add(self, parent: TocNode, kept: list[dict], c: TocConfig) -> None:
        """Add the kept pairs as children of ``parent`` (all of them, past ``max_nodes`` too); an
        expansion that keeps nothing may turn pruning off (run_toc.py:246-254)."""
        for item in kept:
            node = TocNode(len(self.nodes), parent.id, item["question"], item["answer"], parent.depth + 1,
                           item.get("passage_id"), item.get("verified"), item.get("score"))
            self.nodes.append(node)
            self.queue.append(node)
        if not kept and self.pruning and (self.restarts >= c.max_restarts or self.pops >= c.unprune_after):
            self.restarts = 0
            self.pruning = False
            self.pruning_off_at = self.pops

    def answer_pairs(self, c: TocConfig) -> list[tuple[str, str]]:
        """The first ``max_nodes`` valid nodes, in the order they were added (``_get_tree``)."""
        return [(n.question, n.answer or "") for n in self.valid[: c.max_nodes]]

    def meta(self) -> dict:
        return {**self.counts, "pops": self.pops, "valid_nodes": len(self.valid), "stop": self.stop,
                "pruning_off_at": self.pruning_off_at, "removed_passages": self.removed_passages}
