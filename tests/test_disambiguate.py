"""`cq disambiguate` (qd, rac, --tree, --prune, --shots) and `cq answer --mode long` end to end on
the fixtures, with fake models behind the real loaders' interface (one real-model test, slow)."""
from __future__ import annotations

import itertools
import re

import pytest

from cqtools.cli import cli

from .conftest import FIXTURES, jsonl, parse_jsonl
from .fakes import FakeCrossEncoder, FakeEncoder, FakeGenerator, shared_words


def scripted_lm(echo: bool = False) -> FakeGenerator:
    """A generator with prompt-dependent outputs: qd rewrites the question with its answer (or, with
    ``echo``, repeats it), the long answer joins the DQs, rac invents two new DQs of whatever question
    is asked (numbered across calls); verification prefers " True"."""
    counter = itertools.count(1)

    def reply(p: str) -> str:
        if p.rstrip().endswith("Rewritten question:"):  # qd
            question = p.rsplit("Question: ", 1)[1].split("\n", 1)[0]
            answer = p.rsplit("Answer: ", 1)[1].split("\n", 1)[0]
            return question if echo else f"{question.rstrip('?')} with the answer {answer}?"
        if p.rstrip().endswith("Long answer:"):
            pairs = re.findall(r"^- (.+?\?) Answer: (.+)$", p, re.M)
            return " ".join(f"{q} {a}." for q, a in pairs) or "No answer."
        question = p.rsplit("Question: ", 1)[1].split("\n", 1)[0].rstrip("?")  # rac
        lines = []
        for _ in range(2):
            n = next(counter)
            lines.append(f"{question} in case {n}? Answer: answer {n}")
        return " " + lines[0] + "\n2. " + lines[1]

    return FakeGenerator(reply, lambda p, c: -1.0 if c == " True" else -2.0, name="fake-lm")


@pytest.fixture
def fakes(monkeypatch):
    from cqtools.models import load as loader

    gen = scripted_lm()
    made = {"generator": gen, "cross_encoder": 0, "encoder": 0}

    def load_generator(name, device="auto", dtype="auto", kind="auto", config=None):
        return made["generator"]

    def load_cross_encoder(name, device="auto", config=None):
        made["cross_encoder"] += 1
        return FakeCrossEncoder(shared_words)

    def load_encoder(name, device="auto", config=None):
        made["encoder"] += 1
        return FakeEncoder()

    monkeypatch.setattr(loader, "load_generator", load_generator)
    monkeypatch.setattr(loader, "load_cross_encoder", load_cross_encoder)
    monkeypatch.setattr(loader, "load_encoder", load_encoder)
    return made


@pytest.fixture(scope="module")
def retrieved(fixture_index, questions_text) -> str:
    from click.testing import CliRunner

    result = CliRunner().invoke(cli, ["retrieve", "--index", fixture_index, "--hits", "10", "-q"],
                                input=questions_text)
    assert result.exit_code == 0, result.output
    return result.stdout


def run(runner, args, text):
    result = runner.invoke(cli, args, input=text)
    return result, (parse_jsonl(result.stdout) if result.exit_code == 0 else None)


def test_rac_end_to_end(runner, fakes, retrieved):
    result, records = run(runner, ["disambiguate", "--method", "rac", "-q"], retrieved)
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
    assert len(records) == len(parse_jsonl(retrieved))
    for record in records:
        assert len(record["dqs"]) == 2
        assert all(d["question"] != record["question"] and d["answer"] for d in record["dqs"])
        assert [n["id"] for n in record["tree"]] == [0, 1, 2]
        assert record["tree"][0]["parent"] is None and record["tree"][0]["depth"] == 0
        meta = record["meta"]["disambiguate"]
        assert meta["model_calls"] == 1 and meta["method"] == "rac" and meta["model"] == "fake-lm"
        assert "passages" in record and "gold" in record  # passed through
    assert fakes["cross_encoder"] == 0, "plain rac reranks nothing"
    assert fakes["encoder"] == 0, "three built-in shots for --k-shots 3: no encoder needed"


@pytest.mark.parametrize("max_nodes,max_depth", [(4, 2), (10, 2), (10, 3), (3, 5)])
def test_tree_is_recorded_and_bounded(runner, fakes, retrieved, max_nodes, max_depth):
    args = ["disambiguate", "--tree", "--prune", "--max-nodes", str(max_nodes), "--max-depth", str(max_depth),
            "--rerank-depth", "5", "-q"]
    result, records = run(runner, args, retrieved)
    assert result.exit_code == 0, result.stderr
    assert fakes["cross_encoder"] == 1
    for record in records:
        tree = record["tree"]
        valid = tree[1:]
        assert 0 < len(valid) <= max_nodes
        assert max(n["depth"] for n in tree) <= max_depth
        by_id = {n["id"]: n for n in tree}
        assert all(by_id[n["parent"]]["depth"] == n["depth"] - 1 for n in valid)
        assert all(n["passage_id"] is None or isinstance(n["passage_id"], str) for n in valid)
        meta = record["meta"]["disambiguate"]
        # one generation per expansion, one verification per valid node
        assert meta["model_calls"] == meta["expansions"] + len(valid)
        assert meta["model_calls"] < 20 or max_nodes > 10
        assert [d["node"] for d in record["dqs"]] == [n["id"] for n in valid if not n["pruned"]]
        assert_tree_shape(record, max_nodes, max_depth, pruned=True)


def test_shots_file_picks_nearest_examples(runner, fakes, retrieved, tmp_path):
    shots = tmp_path / "shots.jsonl"
    shots.write_text((FIXTURES / "questions.jsonl").read_text())
    first = parse_jsonl(retrieved)[:1]
    result, records = run(runner, ["disambiguate", "--shots", str(shots), "--k-shots", "2", "-q"], jsonl(first))
    assert result.exit_code == 0, result.stderr
    assert fakes["encoder"] == 1
    prompt = fakes["generator"].prompts[0]
    shot_questions = re.findall(r"^Question: (.+)$", prompt, re.M)[:-1]
    assert len(shot_questions) == 2
    assert shot_questions[-1] == first[0]["question"], "the most similar shot (the question itself) comes last"
    assert records[0]["meta"]["disambiguate"]["shots_file"] == str(shots)


def test_qd_one_dq_per_answer_and_fallback(runner, fakes, retrieved):
    records = parse_jsonl(retrieved)[:3]
    records[0]["answers"] = [{"text": "Heath Ledger"}, {"text": "Joaquin Phoenix"}, {"text": "heath ledger"}]
    records[1]["answers"] = [{"text": "J. R. R. Tolkien"}]
    records[2]["answers"] = []
    result, out = run(runner, ["disambiguate", "--method", "qd", "-q"], jsonl(records))
    assert result.exit_code == 0, result.stderr
    assert [d["answer"] for d in out[0]["dqs"]] == ["Heath Ledger", "Joaquin Phoenix"]
    assert all(d["question"] != out[0]["question"] and not d.get("fallback") for d in out[0]["dqs"])
    assert out[1]["dqs"] == [{"question": out[1]["question"], "answer": "J. R. R. Tolkien", "unchanged": True}]
    assert out[2]["dqs"] == []
    assert [r["meta"]["disambiguate"]["model_calls"] for r in out] == [2, 0, 0]

    fakes["generator"] = scripted_lm(echo=True)  # a model that repeats the question
    result, out = run(runner, ["disambiguate", "--method", "qd", "-q"], jsonl(records[:1]))
    assert result.exit_code == 0, result.stderr
    dqs = out[0]["dqs"]
    assert all(d["fallback"] is True for d in dqs)
    assert len({d["question"] for d in dqs}) == 2
    assert all(d["question"] != out[0]["question"] and d["question"].startswith("Who played the Joker (")
               for d in dqs)
    assert out[0]["meta"]["disambiguate"]["fallbacks"] == 2


def test_long_answer_from_tree(runner, fakes, retrieved):
    result, records = run(runner, ["disambiguate", "--tree", "--max-nodes", "4", "-q"], retrieved)
    assert result.exit_code == 0, result.stderr
    result, out = run(runner, ["answer", "--mode", "long", "-q"], jsonl(records))
    assert result.exit_code == 0, result.stderr
    for record in out:
        assert record["long_answer"]
        assert all(d["answer"] in record["long_answer"] for d in record["dqs"])
        meta = record["meta"]["answer"]
        assert meta["mode"] == "long" and meta["dqs_used"] == len(record["dqs"]) and meta["passages"] == 5
        assert record["meta"]["disambiguate"]["method"] == "rac"  # earlier stages' meta kept


def test_long_answer_undoes_pruning_when_too_few_survive(runner, fakes):
    tree = [{"id": 0, "parent": None, "question": "Who won?", "answer": None, "depth": 0, "pruned": False},
            {"id": 1, "parent": 0, "question": "Who won in 2000?", "answer": "A", "depth": 1, "pruned": True},
            {"id": 2, "parent": 0, "question": "Who won in 2004?", "answer": "B", "depth": 1, "pruned": False},
            {"id": 3, "parent": 1, "question": "Who won in 2000 at home?", "answer": "C", "depth": 2, "pruned": True}]
    record = {"id": "x", "question": "Who won?", "dqs": [{"question": "Who won in 2004?", "answer": "B"}], "tree": tree}
    result, out = run(runner, ["answer", "--mode", "long", "-q"], jsonl([record]))
    assert result.exit_code == 0, result.stderr
    assert out[0]["meta"]["answer"]["restored_pruned"] == 2
    assert out[0]["long_answer"] == "Who won in 2004? B. Who won in 2000? A. Who won in 2000 at home? C."


def test_long_answer_without_dqs_is_a_clear_error(runner, fakes):
    result = runner.invoke(cli, ["answer", "--mode", "long", "-q"], input=jsonl([{"id": "q1", "question": "Who?"}]))
    assert result.exit_code == 1
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "q1" in lines[0] and "no 'dqs'" in lines[0] and "run `cq disambiguate` first" in lines[0]


@pytest.mark.parametrize("args,record,needle", [
    (["--method", "qd"], {"id": "a1", "question": "Who?", "passages": []}, "cq answer --mode multi"),
    (["--method", "rac"], {"id": "a2", "question": "Who?"}, "cq retrieve"),
    (["--method", "qd", "--passages", "0"], {"id": "a3", "question": "Who?"}, "cq answer --mode multi"),
])
def test_missing_inputs_are_one_line_errors(runner, fakes, args, record, needle):
    result = runner.invoke(cli, ["disambiguate", *args, "-q"], input=jsonl([record]))
    assert result.exit_code == 1
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("cq disambiguate: error: line 1") and record["id"] in lines[0] and needle in lines[0]


def test_rac_without_passages_when_asked_for_none(runner, fakes):
    result, out = run(runner, ["disambiguate", "--passages", "0", "-q"], jsonl([{"id": "a", "question": "Who won?"}]))
    assert result.exit_code == 0, result.stderr
    assert len(out[0]["dqs"]) == 2 and "Passage:" not in fakes["generator"].prompts[-1]


def test_tree_flags_need_rac(runner, fakes):
    result = runner.invoke(cli, ["disambiguate", "--method", "qd", "--tree"], input="")
    assert result.exit_code == 2
    assert "--tree does not apply to --method qd" in result.stderr


def assert_tree_shape(record: dict, max_nodes: int, max_depth: int, pruned: bool) -> None:
    """What holds for any model's output: the root is the question; ids in order; every node's
    parent an earlier node one level up; limits kept; verdicts boolean; dqs = the surviving nodes;
    one generation per expansion (+ one verification per node when pruning)."""
    tree = record["tree"]
    root, valid = tree[0], tree[1:]
    assert root == {"id": 0, "parent": None, "question": record["question"], "answer": None, "depth": 0,
                    "pruned": False, "passage_id": None}
    assert [n["id"] for n in tree] == list(range(len(tree)))
    assert len(valid) <= max_nodes
    by_id = {n["id"]: n for n in tree}
    for n in valid:
        assert isinstance(n["parent"], int) and n["parent"] < n["id"]
        assert n["depth"] == by_id[n["parent"]]["depth"] + 1 <= max_depth
        assert isinstance(n["pruned"], bool) and (pruned or not n["pruned"])
        assert isinstance(n["question"], str) and n["question"].endswith("?") and n["question"] != record["question"]
        assert isinstance(n["answer"], str) and n["answer"].strip()
        assert n["passage_id"] is None or n["passage_id"] in {p["id"] for p in record["passages"]}
        assert ("verify" in n) is pruned
    assert [(d["node"], d["question"], d["answer"]) for d in record["dqs"]] == [
        (n["id"], n["question"], n["answer"]) for n in valid if not n["pruned"]]
    meta = record["meta"]["disambiguate"]
    assert meta["valid_nodes"] == len(valid) and meta["pruned"] == sum(n["pruned"] for n in valid)
    assert meta["model_calls"] == meta["expansions"] + (len(valid) if pruned else 0)
    assert 1 <= meta["expansions"] <= 1 + len(valid)
    assert meta["stop"] in {"max_nodes", "max_depth", "failures", "exhausted"}


@pytest.mark.slow
def test_real_model_tree(runner, retrieved):
    """SmolLM2 through the whole ToC path on two fixture questions: structure only (it is weak)."""
    text = jsonl(parse_jsonl(retrieved)[:2])
    args = ["disambiguate", "--tree", "--prune", "--max-nodes", "3", "--max-new-tokens", "48", "--passages", "3",
            "--rerank-depth", "5", "-q"]
    result, records = run(runner, args, text)
    assert result.exit_code == 0, result.stderr
    assert [r["id"] for r in records] == [r["id"] for r in parse_jsonl(text)]
    for record in records:
        assert_tree_shape(record, max_nodes=3, max_depth=2, pruned=True)
    result, out = run(runner, ["answer", "--mode", "long", "--max-new-tokens", "32", "-q"], jsonl(records))
    assert result.exit_code == 0, result.stderr
    for record, before in zip(out, records):
        assert isinstance(record["long_answer"], str)
        assert record["dqs"] == before["dqs"] and record["tree"] == before["tree"]  # passed through
        meta = record["meta"]["answer"]
        assert meta["mode"] == "long" and meta["dqs_used"] == len(record["dqs"])
        assert meta["model"] == "HuggingFaceTB/SmolLM2-135M-Instruct"


def holder_sensitive_lm() -> FakeGenerator:
    """scripted_lm whose True/False verdict depends on the whole verification prompt, so on the
    passage the node's parent read: pruning with the wrong passage gives other verdicts."""
    import zlib

    lm = scripted_lm()
    lm.scores = lambda p, c: (-1.0 if zlib.crc32(p.encode()) % 2 else -3.0) if c == " True" else -2.0
    return lm


def test_reuse_tree_equals_growing_and_pruning_in_one_run(runner, fakes, retrieved):
    """ToC's tree cell and tree+prune cell share one growth: pruning the tree a --tree run wrote
    gives the records of growing and pruning in one run (meta says reused_tree), with no generation."""
    flags = ["disambiguate", "--tree", "--max-nodes", "6", "--rerank-depth", "5", "-q"]
    fakes["generator"] = holder_sensitive_lm()
    result, at_once = run(runner, flags + ["--prune"], retrieved)
    assert result.exit_code == 0, result.stderr
    fakes["generator"] = holder_sensitive_lm()
    result, grown = run(runner, flags, retrieved)
    assert result.exit_code == 0, result.stderr
    fakes["generator"] = holder_sensitive_lm()
    result, reused = run(runner, flags + ["--prune", "--reuse-tree"], jsonl(grown))
    assert result.exit_code == 0, result.stderr
    assert fakes["generator"].prompts == [], "nothing generated: the tree is read, not grown"
    assert sum(n["pruned"] for r in at_once for n in r["tree"]) > 0 < sum(
        not n["pruned"] for r in at_once for n in r["tree"][1:]), "the fake must both keep and prune"
    assert any(n["depth"] == 2 for r in at_once for n in r["tree"]), "nodes whose parent read reranked passages"
    for a, b in zip(at_once, reused):
        assert b["meta"]["disambiguate"].pop("reused_tree") is True
        assert a == b


def test_reuse_tree_refuses_a_tree_grown_otherwise(runner, fakes, retrieved):
    result, grown = run(runner, ["disambiguate", "--tree", "--max-nodes", "4", "-q"], retrieved)
    assert result.exit_code == 0, result.stderr
    result = runner.invoke(cli, ["disambiguate", "--tree", "--prune", "--reuse-tree", "-q"], input=jsonl(grown))
    assert result.exit_code != 0 and "Traceback" not in result.stderr
    line = result.stderr.strip()
    assert "\n" not in line and grown[0]["id"] in line and "max_nodes=4" in line and "drop --reuse-tree" in line
    plain = parse_jsonl(retrieved)[:1]  # no tree at all
    result = runner.invoke(cli, ["disambiguate", "--tree", "--prune", "--reuse-tree", "-q"], input=jsonl(plain))
    assert result.exit_code != 0 and "has no 'tree'" in result.stderr and "line 1" in result.stderr
    result = runner.invoke(cli, ["disambiguate", "--tree", "--reuse-tree", "-q"], input=jsonl(plain))
    assert result.exit_code == 2 and "--reuse-tree prunes an earlier run's tree" in result.stderr


def test_reuse_tree_takes_a_hub_download_for_its_cache_and_refuses_padded_batches(runner, fakes, retrieved,
                                                                                   monkeypatch):
    result, grown = run(runner, ["disambiguate", "--tree", "-q"], retrieved)
    assert result.exit_code == 0, result.stderr
    for record in grown:  # the first run downloaded the model; the next reads it from the hub cache
        record["meta"]["disambiguate"]["source"] = "hub"
    fakes["generator"].info["source"] = "hf-cache"
    result = runner.invoke(cli, ["disambiguate", "--tree", "--prune", "--reuse-tree", "-q"], input=jsonl(grown))
    assert result.exit_code == 0, result.stderr
    monkeypatch.setenv("CQ_PADDED_BATCHES", "1")
    result = runner.invoke(cli, ["disambiguate", "--tree", "--prune", "--reuse-tree", "-q"], input=jsonl(grown))
    assert result.exit_code != 0 and "unset CQ_PADDED_BATCHES" in result.stderr and "Traceback" not in result.stderr
