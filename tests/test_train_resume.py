"""`cq train` on accelerate (issue 45): checkpoints and --resume give the weights of an uninterrupted run, gradient
accumulation and two processes give those of one big batch (where the algorithm allows), and bad settings are
one-line errors. Tiny models built from configurations (random weights), CPU only."""
import json
import os

import orjson
import pytest

from cqtools.cli import cli

from .conftest import FIXTURES, _save_tiny_model

QUESTIONS = str(FIXTURES / "questions.jsonl")


class Killed(Exception):
    """What the simulated kill raises inside the training loop."""


def weights(out: str) -> dict:
    from safetensors.torch import load_file

    return load_file(os.path.join(out, "model.safetensors"))


def assert_equal_weights(a: str, b: str) -> None:
    import torch

    first, second = weights(a), weights(b)
    assert first.keys() == second.keys()
    unequal = [k for k in first if not torch.equal(first[k], second[k])]
    assert not unequal, f"{len(unequal)} of {len(first)} tensors differ, e.g. {unequal[:3]}"


def report(out: str) -> dict:
    with open(os.path.join(out, "cq_train.json")) as fh:
        return json.load(fh)


@pytest.fixture(scope="module")
def still_classifier(tmp_path_factory) -> str:
    """A tiny 2-label BERT without dropout (a big batch and its halves then see the same network)."""
    from transformers import BertConfig, BertForSequenceClassification

    return _save_tiny_model(str(tmp_path_factory.mktemp("still")), lambda tok: BertForSequenceClassification(
        BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                   intermediate_size=64, num_labels=2, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)))


@pytest.fixture(scope="module")
def reader_case(tmp_path_factory) -> tuple[str, str]:
    """(a tiny random BERT span reader, the fixture questions each with its 5 corpus passages sharing most words)."""
    from transformers import BertConfig, BertForQuestionAnswering

    where = tmp_path_factory.mktemp("reader")
    model = _save_tiny_model(str(where / "model"), lambda tok: BertForQuestionAnswering(
        BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                   intermediate_size=64)))
    return model, with_near_passages(where / "retrieved.jsonl")


def with_near_passages(path) -> str:
    """Write the fixture questions to ``path``, each with the 5 corpus passages sharing most of its words."""
    corpus = [orjson.loads(line) for line in (FIXTURES / "corpus.jsonl").read_text().splitlines()]
    with open(path, "wb") as fh:
        for line in (FIXTURES / "questions.jsonl").read_text().splitlines():
            record = orjson.loads(line)
            words = set(record["question"].lower().split())
            near = sorted(corpus, key=lambda p: (-len(words & set(f"{p['title']} {p['text']}".lower().split())),
                                                 p["id"]))
            fh.write(orjson.dumps({**record, "passages": near[:5]}) + b"\n")
    return str(path)


def _args(kind: str, model: str) -> list[str]:
    """A run of 6 steps of a tiny model (10 for gen-cq), with dropout (the RNG state must resume too)."""
    if kind == "reader":
        model, records = model
        return ["train", "reader", "--model", model, "--train", records, "--holdout", "5", "--batch-size", "4",
                "--max-steps", "6", "--eval-every", "1", "--seed", "5"]
    if kind == "detect":
        return ["train", "detect", "--model", model, "--train", QUESTIONS, "--dev", QUESTIONS, "--dev-limit", "6",
                "--passages", "0", "--batch-size", "4", "--max-steps", "6", "--eval-every", "1", "--patience", "9",
                "--seed", "5"]
    return ["train", "gen-cq", "--model", model, "--train", QUESTIONS, "--dev", QUESTIONS, "--dev-limit", "2",
            "--batch-size", "3", "--epochs", "2", "--max-steps", "10", "--seed", "5"]


@pytest.mark.parametrize("kind", ["detect", "gen-cq", "reader"])
def test_a_killed_run_resumed_from_its_checkpoint_equals_an_uninterrupted_one(runner, tmp_path, monkeypatch, kind,
                                                                               request):
    """Killed before its last step (the newest checkpoint two steps back), then --resume: the same weights
    (torch.equal on every tensor) and the same report history as a run never stopped. gen-cq resumes at step 8,
    inside its second epoch (18 CQs, 6 batches an epoch): it must find its place in that epoch's shuffle."""
    from cqtools.train import loop

    model = request.getfixturevalue({"detect": "tiny_classifier", "gen-cq": "tiny_seq2seq"}.get(kind, "reader_case"))
    whole, parted = str(tmp_path / "whole"), str(tmp_path / "parted")
    done = runner.invoke(cli, [*_args(kind, model), "--out", whole, "-q"])
    assert done.exit_code == 0, done.stderr

    why = loop.Budget.why

    steps = 10 if kind == "gen-cq" else 6

    def killed_before_the_last_step(budget, step):
        if step == steps - 1:
            raise Killed(f"killed before step {step + 1}")
        return why(budget, step)

    monkeypatch.setattr(loop.Budget, "why", killed_before_the_last_step)
    first = runner.invoke(cli, [*_args(kind, model), "--out", parted, "--save-every", "2", "-q"])
    assert isinstance(first.exception, Killed)
    assert sorted(os.listdir(os.path.join(parted, "checkpoints"))) == (
        ["step-6", "step-8"] if kind == "gen-cq" else ["step-2", "step-4"])
    monkeypatch.setattr(loop.Budget, "why", why)
    again = runner.invoke(cli, [*_args(kind, model), "--out", parted, "--save-every", "2", "--resume", "-q"])
    assert again.exit_code == 0, again.stderr
    assert_equal_weights(whole, parted)
    resumed, uninterrupted = report(parted), report(whole)
    assert resumed["steps"] == uninterrupted["steps"] == steps
    if kind == "detect":
        assert resumed["history"] == uninterrupted["history"] and len(resumed["history"]) == 6
    elif kind == "reader":
        assert resumed["history"] == uninterrupted["history"] and len(resumed["history"]) == 5
        assert resumed["losses"] == uninterrupted["losses"] and resumed["validation"] == uninterrupted["validation"]
    else:
        assert resumed["final_loss"] == uninterrupted["final_loss"] and resumed["dev"] == uninterrupted["dev"]
    assert os.path.isdir(os.path.join(parted, "checkpoints", f"step-{steps}"))  # checkpoints move into the model


def test_resume_from_a_named_checkpoint_and_refusals(runner, tmp_path, tiny_classifier):
    """--resume-from DIR continues that checkpoint; a run with other settings, a folder that is no checkpoint,
    or new checkpoints over an earlier run's are one-line errors."""
    out = str(tmp_path / "m")
    args = _args("detect", tiny_classifier)
    assert runner.invoke(cli, [*args, "--out", out, "--save-every", "3", "-q"]).exit_code == 0
    step3 = os.path.join(out, "checkpoints", "step-3")
    again = runner.invoke(cli, [*args, "--out", str(tmp_path / "n"), "--resume-from", step3, "-q"])
    assert again.exit_code == 0, again.stderr
    assert_equal_weights(out, str(tmp_path / "n"))
    other = runner.invoke(cli, [*args, "--batch-size", "2", "--out", str(tmp_path / "o"), "--resume-from", step3,
                                "-q"])
    assert other.exit_code == 1 and "batch_size=4" in other.stderr and "Traceback" not in other.stderr
    assert len(other.stderr.strip().splitlines()) == 1
    missing = runner.invoke(cli, [*args, "--out", str(tmp_path / "p"), "--resume-from", str(tmp_path), "-q"])
    assert missing.exit_code == 1 and "not a complete checkpoint" in missing.stderr
    os.makedirs(str(tmp_path / "q" / "checkpoints"))
    os.rename(os.path.join(out, "checkpoints"), str(tmp_path / "q" / "checkpoints" / "old"))
    os.rename(str(tmp_path / "q" / "checkpoints" / "old" / "step-6"), str(tmp_path / "q" / "checkpoints" / "step-6"))
    over = runner.invoke(cli, [*args, "--out", str(tmp_path / "q"), "--save-every", "3", "-q"])
    assert over.exit_code == 1 and "pass --resume" in over.stderr and "Traceback" not in over.stderr


def test_fp16_on_a_cpu_is_a_one_line_error(runner, tmp_path, tiny_classifier):
    result = runner.invoke(cli, [*_args("detect", tiny_classifier), "--device", "cpu", "--mixed-precision", "fp16",
                                 "--out", str(tmp_path / "m"), "-q"])
    assert result.exit_code == 1 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines() == [result.stderr.strip()] and "pass bf16 or no" in result.stderr


def test_bf16_on_a_cpu_trains_another_model(runner, tmp_path, tiny_seq2seq):
    """bf16 autocast reaches the model (gen-cq keeps its last weights; detect would keep its best, which after
    a few steps may be the first, taken at a warm-up learning rate of 0)."""
    outs = {}
    for precision in ("no", "bf16"):
        outs[precision] = str(tmp_path / precision)
        done = runner.invoke(cli, [*_args("gen-cq", tiny_seq2seq), "--max-steps", "4", "--mixed-precision",
                                   precision, "--out", outs[precision], "-q"])
        assert done.exit_code == 0, done.stderr
        assert report(outs[precision])["config"]["mixed_precision"] == precision
    with pytest.raises(AssertionError, match="tensors differ"):
        assert_equal_weights(outs["no"], outs["bf16"])


def test_accumulating_two_half_batches_is_one_batch(runner, tmp_path, still_classifier):
    """--batch-size 4 --grad-accum 2 takes the steps of --batch-size 8 (the same 8 records a step, the mean of the
    two halves' mean losses): equal up to float rounding (no dropout; the classifier's loss is a mean over
    records, so equal halves weigh alike)."""
    outs = []
    for batch in (["--batch-size", "8"], ["--batch-size", "4", "--grad-accum", "2"], ["--batch-size", "4"]):
        outs.append(str(tmp_path / f"b{len(outs)}"))
        args = ["train", "detect", "--model", still_classifier, "--train", QUESTIONS, "--dev", QUESTIONS, "--limit",
                "16", "--dev-limit", "4", "--passages", "0", "--max-steps", "4", "--epochs", "2", "--lr", "1e-3",
                "--seed", "2", *batch]
        done = runner.invoke(cli, [*args, "--out", outs[-1], "-q"])
        assert done.exit_code == 0, done.stderr
        assert orjson.loads(done.stdout)["steps"] == 4
    one, two, small = (weights(out) for out in outs)
    assert max((one[k] - two[k]).abs().max().item() for k in one) < 1e-6
    assert max((one[k] - small[k]).abs().max().item() for k in one) > 1e-3  # batches of 4 without accumulation


def test_two_processes_with_half_batches_train_the_model_of_one(runner, tmp_path, still_classifier):
    """`accelerate launch --multi_gpu --num_processes 2 -m cqtools train detect --batch-size 4` (torchrun's
    processes, gloo on CPU; accelerate's DataLoader gives process p the batches p, p+2, ...; DDP averages the
    gradients) takes the steps of one process with --batch-size 8: the same weights up to the order of float
    sums (measured: 4e-9), the same dev history. It holds for a loss that is a mean over examples, batches
    that divide the records, and no dropout. (`accelerate launch --cpu --num_processes 2` starts one process.)"""
    import subprocess
    import sys

    args = ["train", "detect", "--model", still_classifier, "--train", QUESTIONS, "--dev", QUESTIONS, "--limit", "16",
            "--dev-limit", "4", "--passages", "0", "--epochs", "2", "--max-steps", "4", "--lr", "1e-3", "--seed", "2",
            "--device", "cpu", "-q"]
    one, two = str(tmp_path / "one"), str(tmp_path / "two")
    done = runner.invoke(cli, [*args, "--batch-size", "8", "--out", one])
    assert done.exit_code == 0, done.stderr
    env = {**os.environ, "CQ_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    launch = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2",
              "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port", "0"]
    launched = subprocess.run([*launch, "-m", "cqtools", *args, "--batch-size", "4", "--out", two], env=env,
                              capture_output=True, text=True, timeout=300)
    assert launched.returncode == 0, launched.stderr[-3000:]
    assert len(launched.stdout.splitlines()) == 1  # the main process alone prints (and writes)
    summary = orjson.loads(launched.stdout)
    assert summary["processes"] == 2 and summary["steps"] == 4
    a, b = weights(one), weights(two)
    assert max((a[k] - b[k]).abs().max().item() for k in a) < 1e-6
    assert [(h["step"], h["epoch"], round(h["loss"], 5)) for h in report(one)["history"]] == \
        [(h["step"], h["epoch"], round(h["loss"], 5)) for h in report(two)["history"]]
    assert not [n for n in os.listdir(tmp_path) if n.startswith(".two.training")]  # no other process wrote a model


@pytest.mark.slow  # three cq processes: about 45 s here
def test_sigterm_saves_a_checkpoint_and_the_resumed_run_equals_an_uninterrupted_one(tmp_path, tiny_seq2seq):
    """SLURM's SIGTERM (pre-emption, time limit, requeue) during a run with --save-every: the step under way ends,
    its checkpoint is saved, the run stops with a one-line message and exit 143; --resume then ends with the
    weights of a run never stopped (byte-equal), though the signal came between two periodic checkpoints."""
    import signal
    import subprocess
    import sys
    import time

    env = {**os.environ, "CQ_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    args = [sys.executable, "-m", "cqtools", "train", "gen-cq", "--model", tiny_seq2seq, "--train", QUESTIONS, "--dev",
            QUESTIONS, "--dev-limit", "2", "--batch-size", "2", "--epochs", "30", "--seed", "7", "--save-every", "50",
            "-q"]
    whole, parted = str(tmp_path / "whole"), str(tmp_path / "parted")
    assert subprocess.run([*args, "--out", whole], env=env, capture_output=True, timeout=600).returncode == 0
    running = subprocess.Popen([*args, "--out", parted], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    first = os.path.join(parted, "checkpoints", "step-50", "cq_checkpoint.json")
    deadline = time.monotonic() + 300
    while not os.path.exists(first) and running.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    running.send_signal(signal.SIGTERM)
    _, stderr = running.communicate(timeout=300)
    assert running.returncode == 143, stderr[-2000:]
    assert len(stderr.strip().splitlines()) == 1 and "stopped by SIGTERM after step" in stderr and "--resume" in stderr
    saved = sorted(int(n.split("-")[1]) for n in os.listdir(os.path.join(parted, "checkpoints")))
    assert saved[0] == 50 and len(saved) == 2 and 50 < saved[1] < 270  # the step the signal ended (270 in all)
    again = subprocess.run([*args, "--out", parted, "--resume"], env=env, capture_output=True, timeout=600)
    assert again.returncode == 0, again.stderr[-2000:]
    with open(os.path.join(whole, "model.safetensors"), "rb") as a, open(os.path.join(parted, "model.safetensors"),
                                                                          "rb") as b:
        assert a.read() == b.read()
