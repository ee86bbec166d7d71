"""The fixture pipeline replayed: every stage's records equal those in fixtures/replay/pipeline.jsonl
(first written by commit 755bc9a's code, the last before the registry redesign; rewritten with a float
reranker, see fixtures/replay/README.md). Tiny seeded models stand in for real ones, the reranker
included, so the run is fast and the same on any CPU (floats within 1e-4: float32 kernels differ in
their last bits between instruction sets)."""
import os

import orjson
import pytest
from click.testing import CliRunner

from cqtools.cli import cli

from .conftest import FIXTURES, jsonl, parse_jsonl

EXPECTED = FIXTURES / "replay" / "pipeline.jsonl"
N = 6


def _run(args, records):
    result = CliRunner().invoke(cli, [*args, "-q"], input=jsonl(records))
    assert result.exit_code == 0, (args, result.stderr)
    return parse_jsonl(result.stdout)


def _steps(index, tiny):
    """(name, args) of the replayed pipeline, each step reading the one before (or the input)."""
    return [
        ("retrieve", ["retrieve", "--index", index, "--hits", "5"], "input"),
        ("rerank", ["rerank", "--top", "3", "--batch-size", "4"], "retrieve"),
        ("detect-llm", ["detect", "--method", "llm", "--model", tiny], "rerank"),
        ("detect-always", ["detect", "--method", "always"], "rerank"),
        ("gen-cq-llm", ["gen-cq", "--method", "llm", "--model", tiny, "--max-new-tokens", "12"], "detect-llm"),
        ("gen-cq-from-dqs", ["gen-cq", "--method", "from-dqs", "--all"], "detect-always"),
        ("oracle-expand", ["oracle", "--expand"], "gen-cq-from-dqs"),
        ("oracle-overlap", ["oracle"], "oracle-expand"),
        ("answer-cq", ["answer", "--mode", "cq", "--model", tiny, "--max-new-tokens", "6", "--selected"],
         "oracle-overlap"),
        ("answer-multi", ["answer", "--mode", "multi", "--model", tiny, "--max-new-tokens", "6"], "rerank"),
        ("detect-answers", ["detect", "--method", "answers"], "answer-multi"),
        ("disambiguate-qd", ["disambiguate", "--method", "qd", "--model", tiny, "--max-new-tokens", "12"],
         "answer-multi"),
        ("disambiguate-rac", ["disambiguate", "--method", "rac", "--model", tiny, "--max-new-tokens", "12",
                              "--passages", "2"], "rerank"),
    ]


def _normalise(record, index, tiny, reranker):
    """Paths of this run's temporary index and models are not part of the behaviour."""
    text = orjson.dumps(record).decode().replace(index, "<index>").replace(tiny, "<tiny>")
    return orjson.loads(text.replace(reranker, "<tiny-reranker>"))


def replay(index, tiny, reranker, monkeypatch):
    monkeypatch.setenv("CQ_MODEL_RERANKER", reranker)  # cq rerank's and cq answer --mode cq's
    out = {"input": parse_jsonl((FIXTURES / "questions.jsonl").read_text())[:N]}
    for name, args, source in _steps(index, tiny):
        out[name] = _run(args, out[source])
    return [{"step": name, "records": [_normalise(r, index, tiny, reranker) for r in out[name]]}
            for name, _, _ in _steps(index, tiny)]


@pytest.mark.skipif(not EXPECTED.exists() and not os.environ.get("CQ_REPLAY_WRITE"), reason="no replay file")
def test_pipeline_records_unchanged(fixture_index, tiny_causal, tiny_cross_encoder, monkeypatch):
    steps = replay(fixture_index, tiny_causal, tiny_cross_encoder, monkeypatch)
    target = os.environ.get("CQ_REPLAY_WRITE")
    if target:
        with open(target, "wb") as fh:
            for step in steps:
                fh.write(orjson.dumps(step, option=orjson.OPT_SORT_KEYS) + b"\n")
        return
    expected = [orjson.loads(line) for line in EXPECTED.read_bytes().splitlines()]
    assert [s["step"] for s in steps] == [s["step"] for s in expected]
    for got, want in zip(steps, expected):
        assert len(got["records"]) == len(want["records"]), got["step"]
        for a, b in zip(got["records"], want["records"]):
            assert _same(a, b), (got["step"], a["id"])


FLOAT_TOLERANCE = 1e-4  # float32 kernels differ in their last bits between CPUs (AVX2 / AVX-512)


def _same(a, b) -> bool:
    """Equal, floats within :data:`FLOAT_TOLERANCE` (texts, ids, order and keys exactly)."""
    if isinstance(a, float) and isinstance(b, float):
        return abs(a - b) <= FLOAT_TOLERANCE * max(1.0, abs(b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b and type(a) is type(b)


def test_same_allows_float_noise_only():
    assert _same({"p": [{"score": 0.0237941, "rank": 1}]}, {"p": [{"score": 0.0237951, "rank": 1}]})
    assert not _same({"p": [{"score": 0.02, "rank": 1}]}, {"p": [{"score": 0.02, "rank": 2}]})
    assert not _same({"p": [{"score": 9.06}]}, {"p": [{"score": 9.28}]})
    assert not _same({"t": "Savannah"}, {"t": "About"})
    assert not _same({"a": 1}, {"a": 1, "b": 2})
    assert not _same({"a": 1}, {"a": 1.0})
