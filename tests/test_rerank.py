"""cq rerank: cross-encoder reranking, top K, order, errors."""
import pytest

from cqtools.cli import cli
from cqtools.stages.rerank import rerank_batch

from .conftest import jsonl, parse_jsonl
from .conftest_models import FakeCrossEncoder, bm25_index, cross_encoder, retrieved  # noqa: F401


def _records():
    passages = [{"id": f"p{i}", "title": t, "text": x, "score": 1.0, "rank": i + 1} for i, (t, x) in enumerate([
        ("Zebra", "A striped animal."), ("Joker", "Joker played by Joaquin Phoenix."),
        ("Joker (2019)", "Joker joker played."), ("Batman", "Played Joker."), ("A", "Joker played.")])]
    return [{"id": "q1", "question": "Joker played", "passages": passages, "extra": [1]},
            {"id": "q2", "question": "striped", "revised": "Joker", "passages": passages[:2]}]


def test_rerank_sorts_cuts_and_renumbers():
    fake = FakeCrossEncoder()
    out = rerank_batch(_records(), fake, 3, "question", 32, {"model": "fake"})
    assert fake.calls == [7]  # pairs of both records in one call
    first = out[0]["passages"]
    assert [p["id"] for p in first] == ["p1", "p2", "p3"]  # ties on 2.0 broken by id
    assert [p["rank"] for p in first] == [1, 2, 3]
    assert [p["rerank_score"] for p in first] == [2.0, 2.0, 2.0]
    assert out[0]["extra"] == [1] and out[0]["meta"]["rerank"] == {"model": "fake"}
    assert out[1]["passages"][0]["id"] == "p0"


def test_query_field_reranks_for_another_key():
    records = _records()
    records[0]["revised"] = "zebra"
    out = rerank_batch(records, FakeCrossEncoder(), None, "revised", 32, {})
    assert out[0]["passages"][0]["id"] == "p0" and len(out[0]["passages"]) == 5
    assert out[1]["passages"][0]["id"] == "p1"


@pytest.mark.heavy(reason="cq rerank loads the INT8 reranker before it reads the record")
def test_missing_passages_is_a_one_line_error(runner):
    result = runner.invoke(cli, ["rerank"], input=jsonl([{"id": "a", "question": "q"}]))
    assert result.exit_code == 1
    assert "run `cq retrieve` first" in result.stderr
    assert "line 1" in result.stderr and "Traceback" not in result.stderr
    assert result.stdout == ""


def test_unknown_model_is_a_one_line_error(runner):
    result = runner.invoke(cli, ["rerank", "--model", "no-such-org/no-such-model"], input="")
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1 and "no-such-org/no-such-model" in result.stderr
    assert "Traceback" not in result.stderr


def test_onnx_cross_encoder_logits(cross_encoder):
    relevant, unrelated = cross_encoder.predict([
        ("who played the joker in 2019", "Joaquin Phoenix played the Joker in the 2019 film Joker."),
        ("who played the joker in 2019", "Canberra is the capital city of Australia.")])
    assert relevant > 5 > 0 > unrelated  # raw logits, not probabilities
    # INT8 ONNX quantises activations per batch, so a pair's score moves slightly with its batch
    # neighbours (same input and batch size -> same scores); the ranking signal does not
    alone = cross_encoder.predict([("who played the joker in 2019", "Canberra is the capital city of Australia.")])
    assert alone[0] == pytest.approx(unrelated, abs=0.2)


@pytest.mark.slow
def test_rerank_cli_on_fixtures(runner, retrieved):
    result = runner.invoke(cli, ["rerank", "--top", "3", "-q"], input=jsonl(retrieved[:6]))
    assert result.exit_code == 0, result.stderr
    out = parse_jsonl(result.stdout)
    assert [r["id"] for r in out] == [r["id"] for r in retrieved[:6]]
    for record in out:
        passages = record["passages"]
        assert len(passages) == 3 and [p["rank"] for p in passages] == [1, 2, 3]
        scores = [p["rerank_score"] for p in passages]
        assert scores == sorted(scores, reverse=True)
        assert record["meta"]["rerank"]["model"] == "cross-encoder/ms-marco-MiniLM-L-12-v2"
    by_id = {r["id"]: r for r in out}
    assert by_id["fx05"]["passages"][0]["title"] == "Canberra"


@pytest.mark.heavy(reason="loads the offline INT8 reranker in a subprocess")
def test_the_onnx_reranker_runs_without_importing_torch_or_transformers():
    """Issue 37 item 2: importing torch and transformers was 1-3 s of a rerank process that never used them
    (its --device auto asked torch for a GPU); onnxruntime is asked instead."""
    import json
    import subprocess
    import sys

    from .conftest import ROOT

    script = ("import sys, json\nfrom click.testing import CliRunner\nfrom cqtools.cli import cli\n"
              "out = CliRunner().invoke(cli, ['rerank', '--top', '2', '--model', "
              "'cross-encoder/ms-marco-MiniLM-L-12-v2', '--device', 'auto'], input=sys.stdin.read())\n"
              "print(json.dumps([out.exit_code, 'torch' in sys.modules, 'transformers' in sys.modules]))\n")
    proc = subprocess.run([sys.executable, "-c", script], input=jsonl(_records()), capture_output=True, text=True,
                          cwd=ROOT, timeout=300)
    assert json.loads(proc.stdout.splitlines()[-1]) == [0, False, False], proc.stderr
