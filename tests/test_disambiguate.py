"""`cq disambiguate` (qd, rac, --tree, --prune, --shots) and `cq answer --mode long` end to end on
the fixtures, with fake models behind the real loaders' interface (one real-model test, slow)."""
from __future__ import annotations

import re

import pytest

from cqtools.cli import cli

from .conftest import FIXTURES, jsonl, parse_jsonl


class FakeGenerator:
    """The Generator interface (generate/score) with scripted, prompt-dependent outputs."""

    name = "fake-lm"
    kind = "causal"
    info = {"model": "fake-lm", "source": "test", "device": "cpu", "dtype": "float32", "kind": "causal"}
    batch_size = 16

    def __init__(self, echo: bool = False):
        self.echo = echo
        self.prompts: list[str] = []
        self.n = 0

    def generate(self, prompts, max_new_tokens=32, chat=None, stop=None, batch_size=None):
        out = []
        for p in prompts:
            self.prompts.append(p)
            if p.rstrip().endswith("Rewritten question:"):  # qd
                question = p.rsplit("Question: ", 1)[1].split("\n", 1)[0]
                answer = p.rsplit("Answer: ", 1)[1].split("\n", 1)[0]
                out.append(question if self.echo else f"{question.rstrip('?')} with the answer {answer}?")
            elif p.rstrip().endswith("Long answer:"):
                pairs = re.findall(r"^- (.+?\?) Answer: (.+)$", p, re.M)
                out.append(" ".join(f"{q} {a}." for q, a in pairs) or "No answer.")
            else:  # rac: two new DQs of whatever question is asked
                question = p.rsplit("Question: ", 1)[1].split("\n", 1)[0].rstrip("?")
                lines = []
                for _ in range(2):
                    self.n += 1
                    lines.append(f"{question} in case {self.n}? Answer: answer {self.n}")
                out.append(" " + lines[0] + "\n2. " + lines[1])
        return out

    def score(self, prompts, continuations, prefix="", batch_size=None):
        return [-1.0 if c == " True" else -2.0 for c in continuations]


class FakeCrossEncoder:
    info = {"model": "fake-ce", "source": "test"}

    def predict(self, pairs, batch_size=32):
        return [float(len(set(q.lower().split()) & set(p.lower().split()))) for q, p in pairs]


class FakeEncoder:
    """Hashed bag-of-words vectors: questions that share words are similar."""

    def encode(self, texts, batch_size=32, normalize_embeddings=True, **_):
        import zlib

        import numpy as np

        out = np.zeros((len(texts), 1024), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                out[i, zlib.crc32(word.encode()) % 1024] += 1
        return out / np.clip(np.linalg.norm(out, axis=1, keepdims=True), 1e-9, None)


@pytest.fixture
def fakes(monkeypatch):
    import cqtools.models as models

    gen = FakeGenerator()
    made = {"generator": gen, "cross_encoder": 0, "encoder": 0}

    def load_generator(name, device="auto", dtype="auto", kind="auto"):
        return made["generator"]

    def load_cross_encoder(name, device="auto"):
        made["cross_encoder"] += 1
        return FakeCrossEncoder()

    def load_encoder(name, device="auto"):
        made["encoder"] += 1
        return FakeEncoder()

    monkeypatch.setattr(models, "load_generator", load_generator)
    monkeypatch.setattr(models, "load_cross_encoder", load_cross_encoder)
    monkeypatch.setattr(models, "load_encoder", load_encoder)
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

    fakes["generator"] = FakeGenerator(echo=True)  # a model that repeats the question
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
    assert "--tree goes with --method rac" in result.stderr


@pytest.mark.slow
def test_real_model_tree(runner, retrieved):
    """SmolLM2 through the whole ToC path on two fixture questions: structure only (it is weak)."""
    text = jsonl(parse_jsonl(retrieved)[:2])
    args = ["disambiguate", "--tree", "--prune", "--max-nodes", "3", "--max-new-tokens", "48", "--passages", "3",
            "--rerank-depth", "5", "-q"]
    result, records = run(runner, args, text)
    assert result.exit_code == 0, result.stderr
    for record in records:
        assert record["tree"][0]["question"] == record["question"]
        assert len(record["tree"]) <= 4
        assert 1 <= record["meta"]["disambiguate"]["model_calls"] < 20
    result, out = run(runner, ["answer", "--mode", "long", "--max-new-tokens", "32", "-q"], jsonl(records))
    assert result.exit_code == 0, result.stderr
    assert all(isinstance(r["long_answer"], str) for r in out)
