"""The Tree of Clarifications: BFS bookkeeping, stops, deduplication, parsing, pruning (fake models)."""
from __future__ import annotations

import itertools

import pytest

from cqtools.stages.disambiguate import Clarifier, RacOptions, clean_question, parse_pairs, rac_batch
from cqtools.stages.shots import ShotSelector, builtin_shots
from cqtools.stages.tree import Tree, TreeLimits, answer_passage, grow

from .fakes import FakeCrossEncoder, FakeGenerator, shared_tokens

PASSAGES = [{"id": f"p{i}", "title": f"Title {i}", "text": f"Passage {i} mentions answer {i}."} for i in range(8)]


def fresh_pairs(per_expansion: int):
    """An expander that invents ``per_expansion`` new (question, answer) pairs every time."""
    counter = {"n": 0}

    def expand(items):
        out = []
        for _, node in items:
            pairs = []
            for _ in range(per_expansion):
                counter["n"] += 1
                k = counter["n"]
                pairs.append((f"{node.question.rstrip('?')} variant {k}?", f"answer {k}", None))
            out.append((pairs, PASSAGES[:2]))
        return out

    return expand


def test_tree_stops_at_max_nodes():
    tree = Tree("Who won?", PASSAGES, TreeLimits(max_nodes=10, max_depth=5, max_failures=3))
    grow([tree], fresh_pairs(4))
    assert len(tree.valid) == 10
    assert tree.stop_reason == "max_nodes"
    ids = [n.id for n in tree.nodes]
    assert ids == list(range(11))
    depths = [n.depth for n in tree.nodes]
    assert depths == sorted(depths), "nodes are added in BFS order"
    assert all(tree.nodes[n.parent].depth == n.depth - 1 for n in tree.valid)


def test_tree_respects_max_depth():
    tree = Tree("Who won?", PASSAGES, TreeLimits(max_nodes=100, max_depth=2, max_failures=3))
    grow([tree], fresh_pairs(2))
    assert max(n.depth for n in tree.nodes) == 2
    assert len(tree.valid) == 2 + 4  # two children, two grandchildren each
    assert tree.expansions == 3  # the root and its two children; depth-2 nodes are not expanded
    assert tree.stop_reason == "max_depth"


def test_depth_one_is_plain_rac():
    tree = Tree("Who won?", PASSAGES, TreeLimits(max_nodes=10, max_depth=1))
    grow([tree], fresh_pairs(3))
    assert tree.expansions == 1 and len(tree.valid) == 3


def test_tree_stops_after_three_failed_expansions():
    calls = {"n": 0}

    def expand(items):
        calls["n"] += len(items)
        out = []
        for _, node in items:
            if node.parent is None:  # the root finds five DQs, every later expansion only repeats them
                out.append(([(f"Who won in {y}?", str(y), None) for y in range(2000, 2005)], []))
            else:
                out.append(([("Who won in 2000?", "2000", None), ("who won in 2001", "something new", None)], []))
        return out

    tree = Tree("Who won?", PASSAGES, TreeLimits(max_nodes=10, max_depth=3, max_failures=3))
    grow([tree], expand)
    assert tree.stop_reason == "failures"
    assert tree.expansions == calls["n"] == 4  # the root, then three failures in a row
    assert len(tree.valid) == 5
    assert tree.rejected == 6


def test_deduplication_by_question_and_answer():
    tree = Tree("Who played the Joker?", PASSAGES, TreeLimits())
    added = tree.add_children(tree.root, [
        ("Who played the Joker?", "Heath Ledger", None),             # echoes the AQ
        ("Who played the Joker in 2008?", "Heath Ledger", None),
        ("who played the joker in 2008", "Someone else", None),      # same question, normalised
        ("Who played the Joker in 2019?", "heath ledger.", None),    # same answer, normalised
        ("Who played the Joker in 1989?", "", None),                 # no answer
        ("Who played the Joker in 2016?", "Jared Leto", "p3"),
    ], PASSAGES)
    assert added == 2
    assert [(n.question, n.answer, n.passage_id) for n in tree.valid] == [
        ("Who played the Joker in 2008?", "Heath Ledger", None), ("Who played the Joker in 2016?", "Jared Leto", "p3")]
    assert tree.to_json()[0] == {"id": 0, "parent": None, "question": "Who played the Joker?", "answer": None,
                                 "depth": 0, "pruned": False, "passage_id": None}


def test_many_trees_grow_as_if_alone():
    alone = []
    for q in ("A?", "B?"):
        t = Tree(q, PASSAGES, TreeLimits(max_nodes=5, max_depth=3))
        grow([t], fresh_pairs(2))
        alone.append([(n.parent, n.depth) for n in t.nodes])
    together = [Tree(q, PASSAGES, TreeLimits(max_nodes=5, max_depth=3)) for q in ("A?", "B?")]
    grow(together, fresh_pairs(2))
    assert [[(n.parent, n.depth) for n in t.nodes] for t in together] == alone


def test_parse_pairs_reads_numbered_lines_and_drops_junk():
    raw = ("1. Who played the Joker in 2008? Answer: Heath Ledger.\n"
           "2. Who played the Joker in 2019? answer: \"Joaquin Phoenix\"\n"
           "3) Who played the Joker in 2016 Answer: Jared Leto\n"
           "This line is not a pair\n"
           "4. Who? Answer: x\n"
           "5. Who played the Joker in a film? Answer: " + "word " * 20)
    assert parse_pairs(raw) == [("Who played the Joker in 2008?", "Heath Ledger"),
                                ("Who played the Joker in 2019?", "Joaquin Phoenix"),
                                ("Who played the Joker in 2016?", "Jared Leto")]


def test_clean_question():
    assert clean_question(" Who played the Joker in 2008? Because...\nmore") == "Who played the Joker in 2008?"
    assert clean_question("Rewritten question: Who won in 2019") == "Who won in 2019?"
    assert clean_question("\n") == ""


def test_answer_passage():
    assert answer_passage("answer 3", PASSAGES)["id"] == "p3"
    assert answer_passage("Title 5", PASSAGES)["id"] == "p5"
    assert answer_passage("nowhere", PASSAGES) is None


def scripted_lm() -> FakeGenerator:
    """Each expansion invents two DQs of the question it is asked about (numbered across calls);
    verification says True for answers ending in an even number."""
    counter = itertools.count(1)

    def reply(p: str) -> str:
        question = p.rsplit("Question: ", 1)[1].split("\n", 1)[0].rstrip("?")
        lines = []
        for _ in range(2):
            n = next(counter)
            lines.append(f"{question} part {n}? Answer: answer {n}")
        return " " + "\n".join(f"{k}. {line}" if k > 1 else line for k, line in enumerate(lines, 1))

    def verify(p: str, c: str) -> float:
        answer = p.split("Proposed answer: ", 1)[1].split(" (", 1)[0]
        even = int(answer.split()[-1]) % 2 == 0
        return -1.0 if (c == " True") == even else -3.0

    return FakeGenerator(reply, verify)


@pytest.mark.parametrize("prune", [False, True])
def test_clarifier_counts_calls_and_prunes(prune):
    gen, ce = scripted_lm(), FakeCrossEncoder(shared_tokens)
    config = RacOptions(tree=True, prune=prune, max_nodes=5, max_depth=2, n_passages=3)
    clarifier = Clarifier(gen, config, ShotSelector(builtin_shots()), ce)
    records = [{"id": "a", "question": "Who won?", "passages": PASSAGES}]
    ((dqs, calls, tree),) = rac_batch(records, clarifier)
    assert len(tree.valid) == 5 and tree.stop_reason == "max_nodes"
    assert tree.expansions == 3  # root (2 nodes), then two children (2 + 1 kept)
    assert calls == len(gen.prompts) + len(gen.scored) // 2
    assert ce.pairs == 2 * min(len(PASSAGES), config.rerank_depth)  # the two expanded DQs were reranked for
    if prune:
        assert [n.pruned for n in tree.valid] == [int(n.answer.split()[-1]) % 2 == 1 for n in tree.valid]
        assert all(n.verify is not None for n in tree.valid)
        assert [d["answer"] for d in dqs] == [n.answer for n in tree.valid if not n.pruned]
    else:
        assert len(dqs) == 5 and not gen.scored
    # the shots are in every prompt, the query last
    assert all(p.count("Disambiguations:") == len(builtin_shots()) + 1 for p in gen.prompts)
