"""The recipe audit (issue 55): every trainer trained as its preset says, against the released training scripts.

For each `cq train X --preset P` (and gen-cq's AskCQ layout), one step of a tiny model (random weights, CPU) writes
cq_train.json; the test reads its first batch, decoded, and its schedule, and builds the optimiser and scheduler
that recipe trains with for the recipe's whole length, reading the learning rate at steps 0, 1 and the last and the
weight decay of each parameter group. Each is compared with what the release's own code computes, cited as
repo@commit file:line. docs/benchmarks/train.md shows the table."""
import json
import math
import os

import pytest

from cqtools.cli import cli

from .test_train_paper_models import tiny_bart, with_passages  # noqa: F401 (fixtures)
from .test_train_resume import report

AMBIGQA, REFUEL, ASKCQ = "shmsw25/AmbigQA@5c8cdb1", "amzn/refuel-open-domain-qa@159090e", "DongryeolLee96/AskCQ@d8be017"
QUESTIONS = 9600  # a train set's examples (150 batches of 64): every recipe's length is counted from it


def linear(lr: float, warmup: int, horizon: int):
    """transformers' get_linear_schedule_with_warmup, which every release calls."""
    return lambda k: lr * k / max(1, warmup) if k < warmup else lr * max(0.0, (horizon - k) / max(1, horizon - warmup))


def released(recipe: str, lr: float, epochs: int, batch: int, accum: int):
    """(learning rate of step k, weight decay, decayed biases?) as the release's code sets them, its length counted
    in optimiser steps over QUESTIONS examples."""
    if recipe in ("ambigqa", "askcq"):
        # AmbigQA codes/run.py:99-101 and cli.py:107,117 @5c8cdb1; AskCQ run.py:144-146 and cli.py:96,106 @d8be017:
        # warmup_steps 0, weight_decay 0.0, num_training_steps=100000
        return linear(lr, 0, 100000), 0.0
    if recipe == "refuel":
        # REFUEL run.py:241-245 @159090e: num_training_steps = epochs * int(len(train_data) / train_batch_size),
        # warm-up int(num_training_steps * warmup_proportion 0.1) (train_aq.sh:59-60, train_verification.sh:56-57);
        # weight decay 0.01 except parameters named bias / LayerNorm.weight (run.py:222-226)
        horizon = epochs * int(QUESTIONS / batch)
        return linear(lr, int(horizon * 0.1), horizon), 0.01
    if recipe == "askcq-trainer":
        # AskCQ ambiguity_detection/run_ambiguity_detection.sh:10-37 @d8be017 runs transformers' Trainer with its
        # defaults: warmup_steps 0, weight_decay 0.0, linear decay over epochs * ceil(examples / batch) steps
        return linear(lr, 0, epochs * math.ceil(QUESTIONS / batch / accum)), 0.0
    raise AssertionError(recipe)


def schedule_of(config: dict, trainer: str):
    """The optimiser and scheduler this recipe trains with over QUESTIONS examples (cqtools/train/loop.py), read
    at steps 0, 1 and the last by stepping them; and each parameter group's weight decay on a tiny BART-shaped
    module (a bias, a LayerNorm)."""
    import torch

    from types import SimpleNamespace

    from cqtools.train.loop import make_optimizer, total_steps

    cfg = SimpleNamespace(**config)
    total = total_steps(QUESTIONS, cfg.batch_size, cfg.epochs, None, cfg.grad_accum)
    model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.LayerNorm(2))
    opt, sched = make_optimizer(model, cfg, total)
    rates = {}
    for step in range(total):
        if step in (0, 1, total - 1):
            rates["last" if step == total - 1 else step] = sched.get_last_lr()[0]
        opt.step()
        sched.step()
    decays = {id(p): g["weight_decay"] for g in opt.param_groups for p in g["params"]}
    return rates, total, {n: decays[id(p)] for n, p in model.named_parameters()}


RECIPES = [  # (trainer, --preset or layout flags, release recipe, the model fixture, its other flags)
    ("spanseqgen", ["--preset", "ambigqa"], "ambigqa", "tiny_bart", []),
    ("qd", ["--preset", "ambigqa"], "ambigqa", "tiny_bart", []),
    ("fid", ["--preset", "refuel"], "refuel", "tiny_bart", ["--passages", "5"]),
    ("verifier", ["--preset", "refuel"], "refuel", "tiny_bart", ["--passages", "5"]),
    ("spanseqgen", ["--preset", "askcq"], "askcq", "tiny_bart", []),
    ("gen-cq", ["--input-layout", "askcq", "--two-options", "comma"], "askcq", "tiny_bart", ["--dev-limit", "1"]),
    ("detect", ["--preset", "askcq"], "askcq-trainer", "tiny_classifier", ["--dev-limit", "2", "--passages", "2"]),
]


@pytest.fixture(scope="module")
def trained(tmp_path_factory, request, with_passages):  # noqa: F811
    """cq_train.json of one step of each recipe (the tiny model in place of the paper's)."""
    from click.testing import CliRunner

    runner, out = CliRunner(), {}
    for trainer, recipe, _, fixture, extra in RECIPES:
        where = str(tmp_path_factory.mktemp("recipe"))
        dev = ["--dev", with_passages] if trainer in ("gen-cq", "detect") else []
        done = runner.invoke(cli, ["train", trainer, *recipe, "--model", request.getfixturevalue(fixture), "--train",
                                   with_passages, *dev, *extra, "--max-steps", "1", "--out", where, "-q"])
        assert done.exit_code == 0, (trainer, recipe, done.output)
        out[(trainer, recipe[1])] = report(where)
    return out


@pytest.mark.parametrize("trainer, recipe, release, fixture, extra", RECIPES,
                         ids=[f"{t}-{r[1]}" for t, r, *_ in RECIPES])
def test_the_schedule_is_the_releases(trained, trainer, recipe, release, fixture, extra):
    """The learning rate at steps 0, 1 and the last, and the weight decay of weights and biases, as the release's."""
    config = trained[(trainer, recipe[1])]["config"]
    rates, total, decays = schedule_of(config, trainer)
    rate, decay = released(release, config["lr"], config["epochs"], config["batch_size"], config["grad_accum"])
    assert rates == pytest.approx({0: rate(0), 1: rate(1), "last": rate(total - 1)}, rel=1e-9, abs=1e-15)
    assert decays["0.weight"] == decay
    assert decays["0.bias"] == 0.0  # no release decays a bias (with decay 0 nothing is decayed)


def test_the_first_batch_is_laid_out_as_the_release_lays_it_out(trained, tiny_bart):  # noqa: F811
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_bart)
    first = {key: r["first_batch"] for key, r in trained.items()}
    # AmbigQA QAData.py:129-141 @5c8cdb1: "<s> question?" then each passage "title </s> text", lower-cased
    seqgen = first[("spanseqgen", "ambigqa")]["input"][0]
    words = seqgen.replace("[CLS]", "").replace("[SEP]", "")
    assert seqgen.startswith("[CLS] [CLS] ") and "? [SEP]" in seqgen and words == words.lower()
    # AmbigQA QGData.py:358-366: the answer <SEP> the question <SEP> the other answers, then the passages
    assert "<sep>" in first[("qd", "ambigqa")]["input"][0].lower()
    # REFUEL QAData.py:712-717 @159090e: one row per passage, each question + passage
    fid = first[("fid", "refuel")]["input"]
    assert len(fid) == 5 and len({row.split("[SEP]")[0] for row in fid}) == 1
    # AskCQ CQDataset.py:186-233 @d8be017: the question revised by a gold option ("AQ category option?"), passages
    assert "?" in first[("spanseqgen", "askcq")]["input"][0]
    # AskCQ run_ambiguity_detection.py:441-444: one sequence "question[SEP]passage[SEP]...", segment ids 0
    detect = first[("detect", "askcq")]
    assert detect["segments"] == [0] and detect["input"][0].count("[SEP]") >= 2 and detect["target"] in (0, 1)
    # AskCQ CQDataset.py:97-121: the question, then each passage closed by the separator; the target a CQ
    gen = first[("gen-cq", "askcq")]
    assert gen["input"][0].count("[SEP]") >= 2 and gen["target"].lower().startswith("[cls] which")
    # the batch sizes of the recipes, up to the tiny training set
    assert first[("fid", "refuel")]["size"] <= 64 and first[("detect", "askcq")]["size"] == 8


def test_stopping_and_selection_are_the_releases(trained):
    """What ends a run and which weights are kept: the releases' wait_step, eval_period and best-model choice."""
    config = {key: r["config"] for key, r in trained.items()}
    # AmbigQA README.md:198 @5c8cdb1: --eval_period 500 --wait_step 10
    assert {k: config[("spanseqgen", "ambigqa")][k] for k in ("eval_every", "patience")} == {"eval_every": 500,
                                                                                             "patience": 10}
    assert config[("qd", "ambigqa")]["patience"] == 10  # cli.py:119 --wait_step default 10
    # REFUEL train_aq.sh:64-66 and train_verification.sh:61-63 @159090e: --wait_step=1000000, --eval_period 30 / 10
    assert (config[("fid", "refuel")]["patience"], config[("fid", "refuel")]["eval_every"]) == (None, 30)
    assert (config[("verifier", "refuel")]["patience"], config[("verifier", "refuel")]["eval_every"]) == (None, 10)
    # AskCQ run_cambigqa_train.sh:17-19,39 @d8be017: eval_period 500 batches = 250 steps of 2; --wait_step 10; no
    # shuffle (run.py:84)
    assert {k: config[("spanseqgen", "askcq")][k] for k in ("eval_every", "patience", "shuffle", "accumulate")} == {
        "eval_every": 250, "patience": 10, "shuffle": False, "accumulate": "sum"}
    # AskCQ run_cq_training.sh:17-20,38 and run.py:262-266: the same, dev CQs decoded with beam 4, max_length 128
    assert {k: config[("gen-cq", "askcq")][k] for k in ("eval_every", "patience", "shuffle", "num_beams",
                                                         "max_cq_tokens", "accumulate")} == {
        "eval_every": 250, "patience": 10, "shuffle": False, "num_beams": 4, "max_cq_tokens": 127, "accumulate": "sum"}
    # AskCQ run_ambiguity_detection.sh:31-36: every 500 steps, the lowest dev loss kept, no early stop
    assert {k: config[("detect", "askcq")][k] for k in ("eval_every", "select", "patience", "input_layout")} == {
        "eval_every": 500, "select": "loss", "patience": None, "input_layout": "joined"}
    assert "dev_loss" in trained[("detect", "askcq")]["history"][0]


def test_a_joined_classifier_is_read_joined_by_cq_detect(trained, tiny_classifier):
    """cq detect reads the layout the classifier was trained on (cq_train.json input_layout)."""
    from transformers import AutoTokenizer

    from cqtools.stages.detect import encode_pairs

    tok = AutoTokenizer.from_pretrained(tiny_classifier)
    joined = encode_pairs(tok, [("Who?", "A: x [SEP] B: y")], 64, "joined")
    assert tok.decode(joined.input_ids[0]) == "[CLS] who? [SEP] a : x [SEP] b : y [SEP]"
    assert set(joined.token_type_ids[0].tolist()) == {0}
    assert set(encode_pairs(tok, [("Who?", "A: x")], 64).token_type_ids[0].tolist()) == {0, 1}


def test_the_report_says_the_schedule_a_run_trained_with(trained):
    schedule = trained[("spanseqgen", "ambigqa")]["schedule"]
    assert schedule["warmup_steps"] == 0 and schedule["decay_steps"] == 100000
    assert schedule["lr"]["0"] == 5e-6 and schedule["lr"]["1"] == pytest.approx(5e-6 * (1 - 1e-5))
    assert json.dumps(schedule)  # plain JSON
    assert not os.path.isabs(schedule.get("no_decay", ""))


def test_a_trainer_is_one_registered_settings_class():
    """`cq train X`'s flags are its settings class's declared fields; presets read them from the registry."""
    from cqtools.cli.train import trainer_command
    from cqtools.cli.trainers import settings_classes
    from cqtools.presets import command_settings
    from cqtools.registry import TRAINERS, schema_of

    classes = settings_classes()
    assert sorted(c.command for c in classes) == ["detect", "fid", "gen-cq", "qd", "reader", "rerank", "spanseqgen", "verifier"]
    for settings in classes:
        assert TRAINERS.get(settings.command).options_class is settings
        flags = {p.name for p in trainer_command(settings).params}
        declared = {o.name for o in schema_of(settings) if o.name not in ("train", "dev", "model", "out", "checkpoints")}
        assert declared <= flags and "dtype" not in flags, settings.command
        assert set(command_settings(f"train {settings.command}")) == {o.name for o in schema_of(settings)}
    assert "dtype" not in {p.name for p in TRAINERS.get("combiner").factory.params}  # accepted and ignored before


def test_resume_refuses_a_changed_selection_or_a_finished_run(tmp_path, tiny_classifier):
    """Issue 57 item 5: --dev-limit (like --num-beams, --max-answer-tokens) changes which checkpoint is best, so a
    resumed run refuses it changed; --resume on a finished run says it is finished (not "pass --overwrite")."""
    from click.testing import CliRunner

    from .test_train_resume import QUESTIONS

    runner, out = CliRunner(), str(tmp_path / "m")
    args = ["train", "detect", "--model", tiny_classifier, "--train", QUESTIONS, "--dev", QUESTIONS, "--passages", "0",
            "--batch-size", "4", "--max-steps", "2", "--save-every", "1", "--eval-every", "1", "--dev-limit", "4", "-q"]
    first = runner.invoke(cli, [*args, "--out", out])
    assert first.exit_code == 0, first.output
    again = runner.invoke(cli, [*args, "--out", out, "--resume"])
    assert again.exit_code != 0 and "finished run (2 steps" in again.output and "nothing to continue" in again.output
    assert "Traceback" not in again.output
    step = os.path.join(out, "checkpoints", "step-2")
    changed = runner.invoke(cli, [*args[:-3], "--dev-limit", "5", "-q", "--out", str(tmp_path / "n"),
                                  "--resume-from", step])
    assert changed.exit_code != 0 and "dev_limit=4" in changed.output and "Traceback" not in changed.output


@pytest.mark.parametrize("accumulate, per_batch", [("mean", 0.5), ("sum", 1.0)])
def test_accumulated_batches_are_averaged_or_summed_as_the_release_does(tmp_path, accumulate, per_batch):
    """--accumulate sum: each of --grad-accum 2 batches adds its loss's whole gradient, as AskCQ's loop calls
    backward on each (run.py:190-197 @d8be017); accelerate's default halves each."""
    import torch

    from cqtools.train.loop import train_loop
    from cqtools.train.run import start
    from cqtools.train.settings import TrainConfig

    cfg = TrainConfig(train="-", model="-", out=str(tmp_path), batch_size=1, grad_accum=2, max_steps=1, device="cpu",
                      accumulate=accumulate)
    model = torch.nn.Linear(1, 1, bias=False)
    seen = []
    model.weight.register_hook(lambda grad: seen.append(grad.item()))
    train_loop(start(cfg), model, 2, lambda net, idx: net.weight.sum())
    assert seen == [per_batch, per_batch]
