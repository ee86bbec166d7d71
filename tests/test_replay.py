"""The fixture pipeline replayed: every stage's records equal those the code produced before the
registry redesign (fixtures/replay/pipeline.jsonl, written by commit 755bc9a's code with
CQ_REPLAY_WRITE=FILE; see fixtures/replay/README.md). Tiny seeded models stand in for real ones,
and the offline INT8 cross-encoder reranks, so the run is fast and exact."""
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


def _normalise(record, index, tiny):
    """Paths of this run's temporary index and model are not part of the behaviour."""
    text = orjson.dumps(record).decode().replace(index, "<index>").replace(tiny, "<tiny>")
    return orjson.loads(text)


def replay(index, tiny):
    out = {"input": parse_jsonl((FIXTURES / "questions.jsonl").read_text())[:N]}
    for name, args, source in _steps(index, tiny):
        out[name] = _run(args, out[source])
    return [{"step": name, "records": [_normalise(r, index, tiny) for r in out[name]]}
            for name, _, _ in _steps(index, tiny)]


@pytest.mark.skipif(not EXPECTED.exists() and not os.environ.get("CQ_REPLAY_WRITE"), reason="no replay file")
def test_pipeline_records_unchanged(fixture_index, tiny_causal):
    steps = replay(fixture_index, tiny_causal)
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
            assert a == b, (got["step"], a["id"])
