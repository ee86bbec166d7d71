"""The Tree of Clarifications (Kim et al. 2023): breadth-first expansion of disambiguations.

The root is the ambiguous question (AQ). Expanding a node asks the model for disambiguated
questions (DQs) with answers; each new, valid DQ becomes a child one level deeper, and is itself
expanded later (with passages reranked for it). Expansion stops when the tree holds
``max_nodes`` valid nodes, when no node above ``max_depth`` is left to expand, or after
``max_failures`` expansions in a row that added nothing. A node is valid when its question
differs from every question in the tree and its answer from every answer in the tree (both
normalised), and it has an answer.

This module holds the tree and its bookkeeping only; what an expansion is (a prompt, a model)
is the caller's (:mod:`cqtools.stages.disambiguate`). :func:`grow` runs many trees together:
each round expands the next node of every unfinished tree in one call, so the order and the
stops within a tree are exactly those of a one-tree-at-a-time BFS.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Sequence

from ..metrics.normalize import normalize_answer


# `cq disambiguate --method rac`'s defaults (its RacOptions declare them from these)
MAX_NODES, MAX_DEPTH, MAX_FAILURES = 10, 2, 3


@dataclass(frozen=True)
class TreeLimits:
    max_nodes: int = MAX_NODES        # valid nodes (the root excluded)
    max_depth: int = MAX_DEPTH        # deepest level a node may sit on (root 0); nodes at it are not expanded
    max_failures: int = MAX_FAILURES  # expansions in a row that added no valid node


@dataclass
class Node:
    id: int
    parent: int | None
    question: str
    answer: str | None
    depth: int
    passage_id: str | None = None
    pruned: bool = False
    verify: float | None = None                          # log p(True) - log p(False) under --prune
    passages: list[dict] = field(default_factory=list)   # what its parent's expansion read (not written)

    def to_json(self) -> dict:
        out = {"id": self.id, "parent": self.parent, "question": self.question, "answer": self.answer,
               "depth": self.depth, "pruned": self.pruned, "passage_id": self.passage_id}
        if self.verify is not None:
            out["verify"] = self.verify
        return out


class Tree:
    def __init__(self, question: str, passages: list[dict], limits: TreeLimits):
        self.limits = limits
        self.root = Node(0, None, question, None, 0, passages=list(passages))
        self.nodes: list[Node] = [self.root]
        self.queue: deque[Node] = deque([self.root])
        self.questions = {normalize_answer(question)}
        self.answers: set[str] = set()
        self.failures_in_row = 0
        self.expansions = 0
        self.rejected = 0          # generated pairs that were duplicates or invalid
        self.stop_reason: str | None = None

    @property
    def valid(self) -> list[Node]:
        return self.nodes[1:]

    def next_node(self) -> Node | None:
        """The next node to expand, or None when the tree is finished (``stop_reason`` says why)."""
        if self.stop_reason is not None:
            return None
        if len(self.valid) >= self.limits.max_nodes:
            self.stop_reason = "max_nodes"
            return None
        if self.failures_in_row >= self.limits.max_failures:
            self.stop_reason = "failures"
            return None
        while self.queue:
            node = self.queue.popleft()
            if node.depth < self.limits.max_depth:
                return node
        self.stop_reason = "max_depth" if any(n.depth >= self.limits.max_depth for n in self.nodes) else "exhausted"
        return None

    def add_children(self, parent: Node, pairs: Sequence[tuple[str, str, str | None]],
                     passages: list[dict]) -> int:
        """Add the valid, new (question, answer, passage_id) pairs as children of ``parent``;
        returns how many were added. Counts the expansion and a failure when none was."""
        self.expansions += 1
        added = 0
        for question, answer, passage_id in pairs:
            if len(self.valid) >= self.limits.max_nodes:
                break
            q_key, a_key = normalize_answer(question or ""), normalize_answer(answer or "")
            if not q_key or not a_key or q_key in self.questions or a_key in self.answers:
                self.rejected += 1
                continue
            self.questions.add(q_key)
            self.answers.add(a_key)
            node = Node(len(self.nodes), parent.id, question, answer, parent.depth + 1, passage_id,
                        passages=passages)
            self.nodes.append(node)
            self.queue.append(node)
            added += 1
        self.failures_in_row = 0 if added else self.failures_in_row + 1
        return added

    @classmethod
    def from_json(cls, question: str, passages: list[dict], limits: TreeLimits, nodes: list[dict],
                  expansions: int, rejected: int, stop: str | None) -> "Tree":
        """A grown tree as :meth:`to_json` wrote it (every node unpruned; ``passages`` of the
        non-root nodes left empty: what their expansions read is the caller's to restore).
        ValueError when ``nodes`` is not such a tree of ``question``."""
        tree = cls(question, passages, limits)
        if not nodes or nodes[0].get("parent") is not None or nodes[0].get("question") != question:
            raise ValueError("its first node is not the root (the record's question)")
        for k, item in enumerate(nodes[1:], start=1):
            parent = item.get("parent")
            if item.get("id") != k or not isinstance(parent, int) or not 0 <= parent < k:
                raise ValueError(f"node {k} is out of order or has no earlier parent")
            tree.nodes.append(Node(k, parent, str(item.get("question")), item.get("answer"),
                                   tree.nodes[parent].depth + 1, item.get("passage_id")))
        tree.queue.clear()
        tree.expansions, tree.rejected, tree.stop_reason = expansions, rejected, stop
        return tree

    def surviving(self) -> list[Node]:
        return [n for n in self.valid if not n.pruned]

    def to_json(self) -> list[dict]:
        return [n.to_json() for n in self.nodes]


def grow(trees: list[Tree], expand: Callable[[list[tuple[Tree, Node]]], list[tuple[list, list[dict]]]]) -> int:
    """Expand every tree to its stop. ``expand(items)`` gets ``(tree, node)`` pairs and returns, for
    each, ``(pairs, passages)``: the generated (question, answer, passage_id) triples and the
    passages the expansion read. Returns the number of rounds."""
    rounds = 0
    while True:
        items = [(t, n) for t in trees if (n := t.next_node()) is not None]
        if not items:
            return rounds
        rounds += 1
        for (tree, node), (pairs, passages) in zip(items, expand(items)):
            tree.add_children(node, pairs, passages)


def answer_passage(answer: str, passages: Sequence[dict]) -> dict | None:
    """The first passage whose normalised "title text" contains the normalised answer."""
    key = normalize_answer(answer or "")
    if not key:
        return None
    for p in passages:
        if key in normalize_answer(f"{p.get('title') or ''} {p.get('text') or ''}"):
            return p
    return None
