"""Batch invariance of every model stage: a record's output must not depend on how the input was
cut. One helper runs a stage on the same fixture records under each cut and compares the records
(floats within 1e-5, everything else equal, same order):

  batch-1     --batch-size 1 (the reference)
  batch-4     --batch-size 4 (records meet other batch mates and padding would differ)
  shards      --shard 0/2 and 1/2 (each with --resume OUT.i), then `cq merge`
  tear        --resume after a kill that tore a line inside a batch (the rest forms new batches)
  accelerate  `accelerate launch --multi_gpu --num_processes 2` (two processes on CPU; slow)

Tiny local models stand in for the LLM and the classifier (built here, never downloaded); rerank
uses the offline INT8 ONNX cross-encoder, whose dynamic quantisation is what made scores move
with the batch, and dense retrieval the offline MiniLM encoder.
"""
from __future__ import annotations

import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from cqtools.cli import cli

from .conftest import ROOT, jsonl, parse_jsonl

N_RECORDS = 6
TOL = 1e-5

# stage -> (command line with {placeholders}, the input it reads)
STAGES = {
    "rerank": (["rerank", "--top", "4"], "retrieved"),
    "detect-llm": (["detect", "--method", "llm", "--model", "{causal}"], "retrieved"),
    "detect-classifier": (["detect", "--method", "classifier", "--model", "{classifier}", "--passages", "2"],
                          "retrieved"),
    "gen-cq": (["gen-cq", "--method", "llm", "--model", "{causal}", "--max-new-tokens", "8", "--all"], "retrieved"),
    "answer": (["answer", "--mode", "single", "--model", "{causal}", "--max-new-tokens", "6"], "retrieved"),
    "disambiguate": (["disambiguate", "--method", "rac", "--model", "{causal}", "--max-new-tokens", "16",
                      "--passages", "2", "--prune"], "retrieved"),
    "oracle": (["oracle", "--method", "llm", "--model", "{causal}", "--max-new-tokens", "6"], "with_cq"),
    "retrieve-dense": (["retrieve", "--index", "{index}", "--method", "dense", "--hits", "5"], "questions"),
}


# --- fixtures ---------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def inputs(fixture_index, questions) -> dict[str, str]:
    """JSONL inputs: the first fixture questions, with 5 BM25 passages, and oracle records with a CQ."""
    runner = CliRunner()
    first = jsonl(questions[:N_RECORDS])
    retrieved = runner.invoke(cli, ["retrieve", "--index", fixture_index, "--hits", "5", "-q"], input=first)
    assert retrieved.exit_code == 0, retrieved.stderr
    expanded = runner.invoke(cli, ["oracle", "--expand", "-q"], input=jsonl(questions))
    with_cq = runner.invoke(cli, ["gen-cq", "--method", "from-dqs", "-q"], input=expanded.stdout)
    assert with_cq.exit_code == 0, with_cq.stderr
    asked = [r for r in parse_jsonl(with_cq.stdout) if r.get("cq")][:N_RECORDS]
    return {"questions": first, "retrieved": retrieved.stdout, "with_cq": jsonl(asked)}


@pytest.fixture(scope="module")
def models(tiny_causal, tiny_classifier, fixture_index) -> dict[str, str]:
    return {"causal": tiny_causal, "classifier": tiny_classifier, "index": fixture_index}


def command(stage: str, models: dict[str, str]) -> list[str]:
    return [arg.format(**models) for arg in STAGES[stage][0]]


# --- the comparison ---------------------------------------------------------------------------------

def max_diff(a, b, path: str = "") -> float:
    """Largest |difference| between two JSON values' floats; raises if anything else differs."""
    if isinstance(a, float) or isinstance(b, float):
        assert isinstance(a, (int, float)) and isinstance(b, (int, float)), f"{path}: {a!r} != {b!r}"
        return 0.0 if a == b else abs(a - b) if math.isfinite(a - b) else math.inf
    if isinstance(a, dict):
        assert isinstance(b, dict) and list(a) == list(b), f"{path}: {a!r} != {b!r}"
        return max([max_diff(a[k], b[k], f"{path}.{k}") for k in a], default=0.0)
    if isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), f"{path}: {a!r} != {b!r}"
        return max([max_diff(x, y, f"{path}[{i}]") for i, (x, y) in enumerate(zip(a, b))], default=0.0)
    assert a == b, f"{path}: {a!r} != {b!r}"
    return 0.0


def records_diff(a: list[dict], b: list[dict]) -> float:
    assert [r["id"] for r in a] == [r["id"] for r in b], "records out of order"
    return max([max_diff(x, y, f"[{x['id']}]") for x, y in zip(a, b)], default=0.0)


def _invoke(args: list[str], text: str):
    result = CliRunner().invoke(cli, args if args[0] == "merge" else [*args, "-q"], input=text)
    assert result.exit_code == 0, f"{args}: {result.stderr}{result.exception!r}"
    return result


def run_cut(args: list[str], text: str, cut: str, tmp_path: Path) -> list[dict]:
    """The records ``cq <args>`` writes for ``text`` under one cut."""
    # a cut sets records per stream batch and items per model pass alike (they differ only when padded)
    if cut == "batch-1":
        return parse_jsonl(_invoke([*args, "--batch-size", "1", "--model-batch-size", "1"], text).stdout)
    if cut == "batch-4":
        return parse_jsonl(_invoke([*args, "--batch-size", "4", "--model-batch-size", "4"], text).stdout)
    if cut == "shards":
        outs = [str(tmp_path / f"out.{i}.jsonl") for i in range(2)]
        for i, out in enumerate(outs):
            _invoke([*args, "--batch-size", "4", "--model-batch-size", "4", "--shard", f"{i}/2", "--resume", out],
                    text)
        return parse_jsonl(_invoke(["merge", *outs], "").stdout)
    if cut == "tear":
        out = tmp_path / "torn.jsonl"
        _invoke([*args, "--batch-size", "4", "--model-batch-size", "4", "--resume", str(out)], text)
        lines = out.read_text().splitlines(keepends=True)
        out.write_text("".join(lines[:2]) + lines[2][: len(lines[2]) // 2])  # killed inside the first batch
        _invoke([*args, "--batch-size", "4", "--model-batch-size", "4", "--resume", str(out)], text)
        return parse_jsonl(out.read_text())
    if cut == "accelerate":
        return run_accelerate(args, text, tmp_path)
    raise ValueError(cut)


def _accelerate() -> str:
    path = os.path.join(os.path.dirname(sys.executable), "accelerate")
    return path if os.path.exists(path) else shutil.which("accelerate")


def run_accelerate(args: list[str], text: str, tmp_path: Path) -> list[dict]:
    """Two processes on CPU (torchrun + gloo), each with one thread, batches of 2."""
    source = tmp_path / "in.jsonl"
    source.write_text(text)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "CQ_ORT_THREADS": "1"}
    with open(source) as fh:
        done = subprocess.run([_accelerate(), "launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1",
                               "--main_process_port", "0",  # another job may hold the default port
                               "--mixed_precision", "no", "--dynamo_backend", "no", "-m", "cqtools", *args,
                               "--batch-size", "2", "-q"], stdin=fh, capture_output=True, cwd=ROOT, env=env,
                              timeout=600)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    return parse_jsonl(done.stdout.decode())


def check_invariant(stage: str, models: dict, inputs: dict, cuts: list[str], tmp_path: Path) -> dict[str, float]:
    """Run ``stage`` under batch-1 and each cut; every cut must give the same records. Returns the
    max |diff| per cut (bench/determinism.py prints them)."""
    args = command(stage, models)
    text = inputs[STAGES[stage][1]]
    reference = run_cut(args, text, "batch-1", tmp_path)
    assert len(reference) == len(parse_jsonl(text))
    diffs = {}
    for cut in cuts:
        work = tmp_path / cut
        work.mkdir()
        diffs[cut] = records_diff(reference, run_cut(args, text, cut, work))
        assert diffs[cut] <= TOL, f"{stage} under {cut}: max |diff| {diffs[cut]:.3g}"
    return diffs


# --- tests ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("stage", list(STAGES))
def test_stage_output_does_not_depend_on_batching(stage, models, inputs, tmp_path):
    check_invariant(stage, models, inputs, ["batch-4", "shards", "tear"], tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("stage", list(STAGES))
def test_stage_output_is_the_same_under_accelerate_launch(stage, models, inputs, tmp_path):
    check_invariant(stage, models, inputs, ["accelerate"], tmp_path)


def test_int8_cross_encoder_scores_do_not_depend_on_batch_mates():
    """The bug itself: the same pair scored alone and among long passages (padded batches moved
    scores by up to 0.9 before)."""
    from cqtools.models.load import load_cross_encoder

    ce = load_cross_encoder("cross-encoder/ms-marco-MiniLM-L-12-v2", "cpu")
    pair = ("who played the joker", "Heath Ledger played the Joker in The Dark Knight.")
    long = ("who played the joker", "The Joker is a supervillain. " * 40)
    alone = ce.predict([pair], batch_size=1)[0]
    among = ce.predict([long, pair, long, long], batch_size=32)[1]
    assert alone == among


# --- inputs longer than the model's context ----------------------------------------------------------

def test_cut_middle_keeps_start_and_end():
    from cqtools.models.cutting import cut_middle

    assert cut_middle(list(range(10)), 4) == [0, 1, 8, 9]
    assert cut_middle(list(range(10)), 5) == [0, 1, 7, 8, 9]
    assert cut_middle([1, 2], 4) == [1, 2]


@pytest.mark.parametrize("stage", ["detect-llm", "gen-cq", "answer"])
def test_a_huge_question_is_cut_with_a_warning(stage, models, inputs, caplog):
    """A 100k-character question used to run for minutes and take GBs: it is refused by default
    (tests/test_reliability.py); with CQ_MAX_QUESTION_CHARS raised, it is cut to the model's context
    (here the tiny model's 512 tokens, or --max-input-tokens) and stderr says so."""
    record = parse_jsonl(inputs["retrieved"])[0]
    record["question"] = "who played the joker " * 5000
    args = command(stage, models)
    raised = {"CQ_MAX_QUESTION_CHARS": "200000"}
    result = CliRunner().invoke(cli, args, input=jsonl([record]), env=raised)
    assert result.exit_code == 0, result.stderr
    assert "-token limit cut in the middle" in result.stderr and "--max-input-tokens" in result.stderr
    result = CliRunner().invoke(cli, [*args, "--max-input-tokens", "64"], input=jsonl([record]), env=raised)
    assert result.exit_code == 0, result.stderr
    assert "over the 64-token limit cut" in result.stderr
    assert len(parse_jsonl(result.stdout)) == 1


def test_max_input_tokens_cuts_scored_prompts_to_the_limit(tiny_causal):
    from cqtools.config import RunConfig
    from cqtools.models.load import load_generator

    long = "the joker " * 400
    capped = load_generator(tiny_causal, "cpu", config=RunConfig.from_env().replace(max_input_tokens=32))
    cut = capped.score([long], [" yes"])
    gen = load_generator(tiny_causal, "cpu", config=RunConfig.from_env())
    full = gen.score([long], [" yes"])
    assert capped.score([long], [" yes"]) == cut  # a model keeps the cap of the configuration it is loaded under
    assert capped is not gen and len(gen._ids(long)) > 32 and cut != full  # scored on the cut prompt


def test_repeated_prompts_run_once_with_the_same_outputs(tiny_causal, monkeypatch):
    """Prompts run alone (the default), so a prompt repeated in a call (CLAM's expanded records share
    their question's CQ prompt) is generated once and its output copied: same outputs, fewer runs."""
    from cqtools.models.load import load_generator

    gen = load_generator(tiny_causal, "cpu")
    prompts = ["who played the joker", "capital of france", "who played the joker", "capital of france", "x"]
    alone = [gen.generate([p], max_new_tokens=5)[0] for p in prompts]
    calls = []
    real = gen.model.generate
    monkeypatch.setattr(gen.model, "generate", lambda **kw: calls.append(kw["input_ids"].shape[0]) or real(**kw))
    assert gen.generate(prompts, max_new_tokens=5) == alone
    assert calls == [1, 1, 1]
