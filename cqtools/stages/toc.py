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

from dataclasses import dataclass, field

from . import toc_prompt as TP
from .toc_match import answer_f1, holds


@dataclass(frozen=True)
class TocConfig:
    n_passages: int = 5              # passages shown per expansion (--top_k_reranked)
    k_shots: int = 5                 # demos per prompt (--n_shot)
    max_nodes: int = 10              # valid nodes before the loop stops (checked before each pop)
    max_depth: int = 3               # nodes sit on levels 1..max_depth; level max_depth is not expanded
    max_pops: int = 16               # queue pops, too-deep ones included (n_expansions <= 15)
    max_restarts: int = 3            # (--max_trials)
    unprune_after: int = 10          # pops after which a failed expansion turns pruning off
    verify: bool = True              # (--verify)
    verify_rule: str = "generate"    # generate: keep iff the completion holds "True"; logprob: log p(True) > log p(False)
    evidence_match: str = "tokens"   # tokens: answer's token sequence; chars: each character (as the code calls it)
    demo_f1: float = 0.8
    temperature: float = 0.7
    top_p: float = 1.0
    max_new_tokens: int = 300
    verify_max_new_tokens: int = 300
    answer_max_new_tokens: int = 300
    long_answer: bool = True
    batch_size: int = 32

    def params(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "batch_size"}


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
