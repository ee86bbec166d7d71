"""The one training loop of ``cq train detect``, ``gen-cq`` and ``reader`` (plain torch, CPU-friendly)
and what they share: reading records, seeded batches, AdamW with linear warm-up, the step budget,
the report file.

:func:`train_loop` runs the steps: a seeded shuffle per epoch (:func:`batches`), one optimizer
step per batch (clipped to norm 1), a stop at ``max_steps`` or ``max_seconds`` (:class:`Budget`),
and at the steps ``evaluate_at`` names a call of ``on_eval`` that may end training early. What a
task feeds it (its examples, its loss, its evaluation and checkpoint choice) lives in its own module:
:mod:`.detector`, :mod:`.cq_generator`, :mod:`.span_reader`; :mod:`.combiner` fits a logistic
model instead and shares only the record helpers.
"""
from __future__ import annotations

import json
import logging
import os
import random
import resource
import time
from dataclasses import dataclass, field
from typing import Callable, Iterator

from .. import progress
from ..config import RunConfig
from ..registry import option
from ..stages.options import CommandSettings
from ..stages.gen_cq import FromDqsOptions
from ..errors import InputError, ResourceError
from ..jsonl import read_records
from ..models.backends import set_seed  # noqa: F401  (re-exported: the tasks seed through here)
from ..records import GOLD
from ..stages import detect as detect_stage

log = logging.getLogger("cqtools")
REPORT = "cq_train.json"


# The loop's settings every trainer shares: `cq train NAME`'s flags are generated from these fields
# (cli/declared.py), so the command line and Python build a trainer's configuration with one set of defaults.
LOOP_SETTINGS = ("epochs", "batch_size", "lr", "max_steps", "max_seconds", "limit", "dev_limit")
COMMON_SETTINGS = (*LOOP_SETTINGS, "passages")  # flags every `cq train` subcommand places first


@dataclass
class TrainConfig:
    """What every fine-tuning trainer shares (data, budget, loop, device); each trainer's own settings are
    fields of its subclass (:class:`DetectTrainConfig`, :class:`GenCQTrainConfig`)."""

    train: str
    dev: str | None
    model: str
    out: str
    epochs: int = option(3, min=1)
    batch_size: int = option(16, min=1)
    lr: float = option(5e-5, "AdamW learning rate.")
    max_steps: int | None = option(None, "Stop after N optimiser steps.", min=0)
    max_seconds: float | None = option(None, "Stop after this much training time.", min=0)
    limit: int | None = option(None, "Use only the first N records of each train file.", min=1)
    dev_limit: int | None = option(None, "Use only the first N dev records.", min=1)
    seed: int = CommandSettings.seed
    passages: int = option(3, "Top passages in the input when the records have them (0: question only).", min=0)
    device: str = RunConfig.device


@dataclass
class DetectTrainConfig(TrainConfig):
    """`cq train detect`'s settings: the shared ones and the classifier's own."""

    eval_every: int | None = option(None, "Steps between dev evaluations (default: once per epoch).", min=1)
    patience: int = option(3, "Dev evaluations without improvement (of --select) before stopping early.", min=1)
    holdout: int | None = option(None, "Early-stop on N --train records held out by a seeded draw (instead of "
                                       "--dev); their ids go into cq_train.json.", min=1, metavar="N")
    select: str = option("f1", "Checkpoint metric on the early-stopping records: F1 at 0.5 (ties: accuracy) or "
                               "AUROC (ties: F1).", choices=("f1", "auroc"))
    max_length: int = option(detect_stage.MAX_INPUT_TOKENS, "Tokens per input (question [+ passages]); cq detect "
                                                            "reuses the value saved with the model.", min=8)


@dataclass
class GenCQTrainConfig(TrainConfig):
    """`cq train gen-cq`'s settings: the shared ones and the CQ generator's own."""

    epochs: int = option(1, min=1)
    # the input layout's defaults (cqtools/train/cq_generator.py LAYOUT_DEFAULTS): cq's, or AskCQ's release's
    batch_size: int | None = option(None, "[default: 8; 10 with --input-layout askcq, AskCQ's run_cq_training.sh]",
                                    min=1)
    lr: float | None = option(None, "AdamW learning rate. [default: 5e-05; 1e-05 with --input-layout askcq, AskCQ's "
                                    "cli.py]")
    passages: int | None = option(None, "Top passages in the input when the records have them (0: question only). "
                                        "[default: 3; 100 with --input-layout askcq, --max-passage-tokens deciding]",
                                  min=0)
    max_passage_tokens: int | None = option(None, "Whole passages in order while the question, the answers and they "
                                                  "fit this many tokens, as cq gen-cq --max-passage-tokens reads them; "
                                                  "inputs are cut there. [default: unset, each passage cut to 60 "
                                                  "words, inputs cut at 384 tokens; 1024 with --input-layout askcq, "
                                                  "AskCQ's max_token_nums]", min=1)
    with_answers: str | None = option(None, "Train on \"AQ [SEP] answers [SEP] passages\" with gold answers (the "
                                            "AskCQ setting).", choices=("gold",))
    targets: str = option("auto", "auto: a record's gold CQ (gold.cq, CAmbigNQ's) where it has one, else the silver "
                                  "CQ built from its gold DQs; silver: silver CQs only. cq_train.json counts each "
                                  "(targets).", choices=("auto", "silver"))
    input_layout: str = option("cq", "The input as `cq gen-cq --method seq2seq --input-layout` writes it: cq's, or "
                                     "AskCQ's CQDataset layout (needs a tokenizer with sep/bos/eos tokens, e.g. "
                                     "BART's). cq gen-cq reads it from the model's cq_train.json.",
                               choices=("cq", "askcq"))
    two_options: str = option(FromDqsOptions.two_options, "Silver CQs with two options as \"A or B\" or \"A, or B\" "
                                                          "(AskCQ's form).", choices=("or", "comma"))


# --- data ------------------------------------------------------------------------------------

def load_records(path: str, limit: int | None) -> list[dict]:
    if not os.path.exists(path):
        raise ResourceError(f"file not found: {path}; make one with `cq convert ambignq FILE > {path}`")
    out = []
    with open(path, "rb") as fh:
        for _, record in read_records(fh, ("question",)):
            if limit is not None and len(out) >= limit:
                break
            out.append(record)
    if not out:
        raise InputError(f"{path} holds no records")
    return out


def gold_label(record: dict) -> bool:
    value = (record.get(GOLD) or {}).get("ambiguous")
    if value is None:
        raise InputError(f"record {record.get('id')} has no gold.ambiguous; training needs records from "
                         "`cq convert ambignq ...`")
    return bool(value)


def optimizer_step(loss, model, opt, sched) -> float:
    """One update shared by every training loop: backward, clip to norm 1, step, schedule, zero."""
    import torch

    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    sched.step()
    opt.zero_grad()
    return loss.item()


def batches(n: int, size: int, epochs: int, seed: int) -> Iterator[tuple[int, list[int]]]:
    """(epoch, indices) for every step: a fresh seeded shuffle each epoch."""
    rng = random.Random(seed)
    for epoch in range(epochs):
        order = list(range(n))
        rng.shuffle(order)
        for start in range(0, n, size):
            yield epoch, order[start:start + size]


def split_holdout(records: list[dict], n: int, seed: int) -> tuple[list[dict], list[dict]]:
    """(train, held out): ``n`` records drawn with a seeded shuffle; both keep file order."""
    if n >= len(records):
        raise InputError(f"--holdout {n} leaves no training records (the file has {len(records)})")
    held = set(random.Random(seed).sample(range(len(records)), n))
    return ([r for i, r in enumerate(records) if i not in held], [r for i, r in enumerate(records) if i in held])


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


class Budget:
    """Stops training at ``max_steps`` or ``max_seconds``, whichever comes first."""

    def __init__(self, max_steps: int | None, max_seconds: float | None):
        self.max_steps, self.max_seconds = max_steps, max_seconds
        self.start = time.perf_counter()

    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def spent(self, step: int) -> bool:
        return self.why(step) is not None

    def why(self, step: int) -> str | None:
        """Why training must stop before step ``step + 1``: "max steps" (the budget: reproducible),
        "time limit" (a cap: the model then depends on the machine's speed), or None."""
        if self.max_steps is not None and step >= self.max_steps:
            return "max steps"
        if self.max_seconds is not None and self.elapsed() >= self.max_seconds:
            return "time limit"
        return None


def make_optimizer(model, lr: float, total_steps: int):
    import torch
    from transformers import get_linear_schedule_with_warmup

    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=lr, weight_decay=0.01)
    sched = get_linear_schedule_with_warmup(opt, max(1, total_steps // 10), max(1, total_steps))
    return opt, sched


def write_report(out: str, report: dict) -> None:
    """cq_train.json, with the CPU threads torch trained on (they change float rounding, so a rebuild
    that should give the same weights needs the same count)."""
    import torch

    report.setdefault("threads", torch.get_num_threads())
    with open(os.path.join(out, REPORT), "w") as fh:
        json.dump(report, fh, indent=2, sort_keys=True)


def keep_model_inputs(out: str, model) -> None:
    """Make the saved tokenizer return only what the model's forward takes (a BERT tokenizer on a
    BART model would add ``token_type_ids``, which ``generate`` rejects)."""
    import inspect

    accepted = set(inspect.signature(model.forward).parameters)
    path = os.path.join(out, "tokenizer_config.json")
    with open(path) as fh:
        config = json.load(fh)
    names = [n for n in ("input_ids", "token_type_ids", "attention_mask") if n in accepted]
    if "token_type_ids" not in names:
        config["model_input_names"] = names
        with open(path, "w") as fh:
            json.dump(config, fh, indent=2)


# --- the loop -------------------------------------------------------------------------------------

@dataclass
class LoopState:
    """Where a training run ended: steps taken, why it stopped ("done", "max steps", "early stop", or
    "time limit: stopped early at step N"), the
    loss of every step, and the budget's clock (its ``elapsed()`` is the training time)."""

    budget: Budget
    step: int = 0
    stopped: str = "done"
    losses: list = field(default_factory=list)

    def mean_loss(self, last: int) -> float:
        window = self.losses[-last:]
        return sum(window) / len(window)


def total_steps(examples: int, batch_size: int, epochs: int, max_steps: int | None) -> int:
    """Steps a run takes at most: every epoch's batches, or ``max_steps`` when that is fewer."""
    per_epoch = -(-examples // batch_size)
    return per_epoch * epochs if max_steps is None else min(max_steps, per_epoch * epochs)


def train_loop(model, examples: int, loss_of: Callable[[list[int]], object], *, batch_size: int, epochs: int,
               lr: float, seed: int, max_steps: int | None, max_seconds: float | None,
               evaluate_at: Callable[[int, "LoopState"], bool] = lambda step, state: False,
               on_eval: Callable[[int, int, LoopState], bool] | None = None, log_every: int = 0,
               name: str = "train") -> LoopState:
    """Train ``model`` on ``examples`` items: ``loss_of(indices)`` is one batch's loss. After a step
    for which ``evaluate_at(step, state)`` holds, ``on_eval(step, epoch, state)`` runs and returns True to
    stop early; otherwise every ``log_every`` steps the mean loss is logged."""
    total = total_steps(examples, batch_size, epochs, max_steps)
    opt, sched = make_optimizer(model, lr, total)
    state = LoopState(Budget(max_steps, max_seconds))
    model.train()
    with progress.bar(name, "step", total) as bar:
        for epoch, idx in batches(examples, batch_size, epochs, seed):
            why = state.budget.why(state.step)
            if why == "time limit":
                state.stopped = f"time limit: stopped early at step {state.step}"
                log.warning("%s: --max-seconds %g reached: stopped early at step %d of %d; the model depends on this "
                            "machine's speed (give --max-steps or --epochs for a reproducible one)", name,
                            state.budget.max_seconds, state.step, total)
                break
            if why is not None:
                state.stopped = "max steps"
                break
            state.losses.append(optimizer_step(loss_of(idx), model, opt, sched))
            state.step += 1
            bar.update(1)
            bar.set_postfix(loss=f"{state.losses[-1]:.3f}", refresh=False)
            if evaluate_at(state.step, state):
                if on_eval is not None and on_eval(state.step, epoch, state):
                    state.stopped = "early stop"
                    break
            elif log_every and state.step % log_every == 0:
                log.info("%s step %d (%.0f s): loss %.3f", name, state.step, state.budget.elapsed(),
                         state.mean_loss(log_every))
    return state

