"""The one training loop of ``cq train detect``, ``gen-cq`` and ``reader`` (on accelerate: CPU, GPUs,
``accelerate launch`` over processes and nodes) and what they share: reading records, seeded batches, AdamW
with linear warm-up, the step budget, the report file.

:func:`train_loop` runs the steps: a seeded shuffle per epoch (:func:`batches`), one optimizer step per
``grad_accum`` batches on each process (clipped to norm 1; with the defaults, one batch on one process: the
same weights as the plain-torch loop before it), checkpoints every ``save_every`` steps and a resume from one
(:mod:`.run`), a stop at ``max_steps`` or ``max_seconds`` (:class:`Budget`),
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
from ..errors import InputError, ResourceError
from ..jsonl import read_records
from ..models.load import set_seed  # noqa: F401  (re-exported: the tasks seed through here)
from ..records import GOLD
from .run import Interrupted, StopSignal, TrainRun, start  # noqa: F401  (start: each trainer's run begins here)
from .settings import (COMMON_SETTINGS, LOOP_SETTINGS, DetectTrainConfig, GenCQTrainConfig,  # noqa: F401
                       TrainConfig)

log = logging.getLogger("cqtools")
REPORT = "cq_train.json"
# the releases' no_decay list, matched as they match it (a substring of the parameter's name): BERT's LayerNorm weights
# are spared, BART's (``*_layer_norm.weight``) are not, only its biases
NO_DECAY = ("bias", "LayerNorm.weight")


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


def batches(n: int, size: int, epochs: int, seed: int, shuffle: bool) -> Iterator[tuple[int, list[int]]]:
    """(epoch, indices) for every step: a fresh seeded shuffle each epoch (file order without ``shuffle``)."""
    rng = random.Random(seed)
    for epoch in range(epochs):
        order = list(range(n))
        if shuffle:
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


def schedule(cfg: TrainConfig, total: int) -> tuple[int, int]:
    """(warm-up steps, decay horizon) of a run of ``total`` optimiser steps: ``cfg.decay_steps`` (default
    ``total``) and ``cfg.warmup_steps``, else ``cfg.warmup_ratio`` of the horizon rounded down (REFUEL's
    ``int(num_training_steps * warmup_proportion)``, run.py:241-242 @159090e)."""
    horizon = max(1, cfg.decay_steps or total)
    warmup = cfg.warmup_steps if cfg.warmup_steps is not None else int(horizon * cfg.warmup_ratio)
    return warmup, horizon


def learning_rate(cfg: TrainConfig, total: int, step: int) -> float:
    """The learning rate of optimiser step ``step + 1`` (after ``step`` scheduler steps): transformers'
    get_linear_schedule_with_warmup, as every release uses it."""
    warmup, horizon = schedule(cfg, total)
    if step < warmup:
        return cfg.lr * step / max(1, warmup)
    return cfg.lr * max(0.0, (horizon - step) / max(1, horizon - warmup))


def make_optimizer(model, cfg: TrainConfig, total_steps: int):
    """AdamW at ``cfg.lr`` with ``cfg.weight_decay`` (not on biases and LayerNorm weights with ``no_decay``
    bias-layernorm, as the releases group them: AmbigQA run.py:93-97 @5c8cdb1, REFUEL run.py:222-226 @159090e,
    AskCQ run.py:138-142 @d8be017), and the linear schedule of :func:`schedule`."""
    import torch
    from transformers import get_linear_schedule_with_warmup

    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    spared = [p for n, p in named if cfg.no_decay == "bias-layernorm" and any(k in n for k in NO_DECAY)]
    decayed = [p for n, p in named if not any(p is q for q in spared)]
    groups = [{"params": decayed, "weight_decay": cfg.weight_decay}]
    if spared:
        groups.append({"params": spared, "weight_decay": 0.0})
    opt = torch.optim.AdamW(groups, lr=cfg.lr, weight_decay=cfg.weight_decay)
    warmup, horizon = schedule(cfg, total_steps)
    return opt, get_linear_schedule_with_warmup(opt, warmup, horizon)


def schedule_report(cfg: TrainConfig, total: int) -> dict:
    """What cq_train.json says of the schedule: warm-up, horizon, and the learning rate at steps 0, 1 and the last."""
    warmup, horizon = schedule(cfg, total)
    return {"warmup_steps": warmup, "decay_steps": horizon, "weight_decay": cfg.weight_decay,
            "no_decay": cfg.no_decay, "lr": {"0": learning_rate(cfg, total, 0), "1": learning_rate(cfg, total, 1),
                                             "last": learning_rate(cfg, total, max(0, total - 1))}}


def decoded_batch(tokenizer, batch: dict) -> dict:
    """A batch as the model reads it, for the report: its size, its first example's input decoded with the special
    tokens (Fusion-in-Decoder's: each passage's row), its segment ids where it has them, and its target (the labels
    but the ignored ones) or label."""
    ids = batch["input_ids"][0]
    rows = ids.tolist() if ids.dim() > 1 else [ids.tolist()]
    pad = tokenizer.pad_token_id
    out = {"size": int(batch["input_ids"].shape[0]),
           "input": [tokenizer.decode([t for t in row if t != pad]) for row in rows]}
    if "token_type_ids" in batch:
        out["segments"] = sorted(set(batch["token_type_ids"][0].tolist()))
    labels = batch.get("labels")
    if labels is not None:
        first = labels[0]
        out["target"] = tokenizer.decode([t for t in first.tolist() if t != -100]) if first.dim() else int(first)
    return out


def batch_loss(encode: Callable[[list], dict], items: list, device: str):
    """The loop's ``loss_of`` for a model that returns its loss: ``encode`` the batch's ``items`` onto ``device``."""
    return lambda net, idx: net(**{k: v.to(device) for k, v in encode([items[i] for i in idx]).items()}).loss


def saver(out: str, model, tokenizer, head: dict, then: Callable[[], None] | None = None) -> Callable[[], None]:
    """``save()``: the model and tokenizer into ``out`` (``then()`` after them) and cq_train.json's ``head``, what the
    stage reads (the full report is written over it at the end)."""
    def save() -> None:
        os.makedirs(out, exist_ok=True)
        model.save_pretrained(out)
        tokenizer.save_pretrained(out)
        if then is not None:
            then()
        write_report(out, head)

    return save


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
    "time limit: stopped early at step N"), the loss of every step, the budget's clock (its ``elapsed()``
    is this process's training time; ``seconds_before``: the time of the run a checkpoint continues), and
    ``history``, a trainer's dev scores. Saved in every checkpoint."""

    budget: Budget
    step: int = 0
    stopped: str = "done"
    losses: list = field(default_factory=list)
    history: list = field(default_factory=list)
    seconds_before: float = 0.0
    schedule: dict = field(default_factory=dict)  # :func:`schedule_report` of the run
    first_batch: dict | None = None  # :func:`decoded_batch` of the first batch (None on a resumed run)

    def recipe(self) -> dict:
        """What cq_train.json says of how the run trained: its schedule and its first batch, decoded."""
        return {"schedule": self.schedule, "first_batch": self.first_batch}

    def mean_loss(self, last: int) -> float:
        window = self.losses[-last:]
        return sum(window) / len(window)

    def seconds(self) -> float:
        return self.seconds_before + self.budget.elapsed()

    def state_dict(self) -> dict:
        return {"step": self.step, "losses": list(self.losses), "history": list(self.history),
                "seconds": self.seconds()}

    def load_state_dict(self, saved: dict) -> None:
        self.step, self.losses, self.history = saved["step"], list(saved["losses"]), list(saved["history"])
        self.seconds_before = saved["seconds"]


def total_steps(examples: int, batch_size: int, epochs: int, max_steps: int | None, per_step: int = 1) -> int:
    """Optimiser steps a run takes at most: every epoch's batches, ``per_step`` (accumulation x processes) to a
    step, or ``max_steps`` when that is fewer."""
    batches_all = -(-examples // batch_size) * epochs
    steps = -(-batches_all // per_step)
    return steps if max_steps is None else min(max_steps, steps)


class SeededBatches:
    """The batch sampler of :func:`batches` (every epoch's seeded shuffle, one list of indices a batch), for a
    DataLoader accelerate shards across processes (batch i to process i mod P) and skips into on resume."""

    def __init__(self, n: int, size: int, epochs: int, seed: int, shuffle: bool):
        self.batch_size, self.drop_last = size, False
        self.order = [idx for _, idx in batches(n, size, epochs, seed, shuffle)]

    def __iter__(self):
        return iter(self.order)

    def __len__(self) -> int:
        return len(self.order)


def _prepare(run: TrainRun, model, examples: int, total: int, keep: tuple):
    """(model, optimiser, scheduler, batches) prepared by the run's Accelerator, checkpointed objects
    registered and, when resuming, loaded; the batches skip those a resumed run already took."""
    import torch
    from accelerate import skip_first_batches
    from torch.utils.data import DataLoader

    cfg, acc = run.cfg, run.accelerator
    opt, sched = make_optimizer(model, cfg, total)
    # its own generator: iterating a DataLoader draws a seed, which must not come from torch's global RNG (dropout's)
    loader = DataLoader(range(examples), batch_sampler=SeededBatches(examples, cfg.batch_size, cfg.epochs, cfg.seed,
                                                                      cfg.shuffle is not False),
                        collate_fn=list, generator=torch.Generator().manual_seed(cfg.seed))
    net, opt, sched, loader = acc.prepare(model, opt, sched, loader)
    acc.register_for_checkpointing(*keep)
    path = run.resume_at
    if path is not None:
        acc.load_state(path)
        log.info("resumed from %s (step %d)", path, keep[0].step)
        loader = skip_first_batches(loader, keep[0].step * cfg.grad_accum)
    return net, opt, sched, loader


def _stop(run: TrainRun, state: LoopState, total: int, name: str) -> bool:
    """Whether the budget ends training before the next step (every process agrees: the main one's clock
    decides a time limit)."""
    why = state.budget.why(state.step)
    if run.accelerator.num_processes > 1 and state.budget.max_seconds is not None:
        from accelerate.utils import broadcast_object_list

        why = broadcast_object_list([why])[0]
    if why == "time limit":
        state.stopped = f"time limit: stopped early at step {state.step}"
        log.warning("%s: --max-seconds %g reached: stopped early at step %d of %d; the model depends on this "
                    "machine's speed (give --max-steps or --epochs for a reproducible one)", name,
                    state.budget.max_seconds, state.step, total)
    elif why is not None:
        state.stopped = "max steps"
    return why is not None


def _mean_loss(run: TrainRun, micro: list) -> float:
    """A step's loss: the mean of its batches' losses (over every process's)."""
    import torch

    loss = sum(x.item() for x in micro) / len(micro)
    if run.accelerator.num_processes > 1:
        loss = run.accelerator.reduce(torch.tensor(loss, device=run.accelerator.device), "mean").item()
    return loss


def _interrupted(run: TrainRun, step: int) -> None:
    """SIGTERM arrived: checkpoint ``step`` (unless just done) and stop with a one-line error."""
    if step % run.cfg.save_every:
        run.save(step)
    raise Interrupted(f"stopped by SIGTERM after step {step}; its checkpoint is in {run.folder}: run the same command "
                      "with --resume to continue")


def train_loop(run: TrainRun, model, examples: int, loss_of: Callable[[object, list[int]], object], *,
               evaluate_at: Callable[[int, "LoopState"], bool] = lambda step, state: False,
               on_eval: Callable[[int, int, LoopState], bool] | None = None, log_every: int = 0,
               name: str = "train", keep: tuple = (), peek: Callable[[list[int]], dict] | None = None) -> LoopState:
    """Train ``model`` on ``examples`` items with ``run.cfg``'s budget: ``loss_of(net, indices)`` is one
    batch's loss (``net``: the model as accelerate wraps it). After a step for which ``evaluate_at(step,
    state)`` holds, ``on_eval(step, epoch, state)`` runs (on every process, alike) and returns True to stop
    early; otherwise every ``log_every`` steps the mean loss is logged. ``keep``: further objects with
    ``state_dict``/``load_state_dict`` (a trainer's best weights) saved in each checkpoint; ``peek(indices)``:
    the first batch as the report shows it (:func:`decoded_batch`)."""
    cfg, acc = run.cfg, run.accelerator
    per_step = cfg.grad_accum * acc.num_processes
    total = total_steps(examples, cfg.batch_size, cfg.epochs, cfg.max_steps, per_step)
    state = LoopState(Budget(cfg.max_steps, cfg.max_seconds), schedule=schedule_report(cfg, total))
    net, opt, sched, loader = _prepare(run, model, examples, total, (state, *keep))
    per_epoch, micro = -(-examples // cfg.batch_size), []
    net.train()
    with progress.bar(name, "step", total) as bar, StopSignal(bool(cfg.save_every)) as stop:
        bar.update(state.step)
        for idx in loader:
            if not micro and _stop(run, state, total, name):
                break
            if peek is not None and state.first_batch is None and state.step == 0 and not micro:
                state.first_batch = peek(idx)
            with acc.accumulate(net):
                loss = loss_of(net, idx)
                # accelerate divides each batch's loss by --grad-accum; "sum" undoes it (the releases' unscaled sum)
                acc.backward(loss * cfg.grad_accum if getattr(cfg, "accumulate", "mean") == "sum" else loss)
                micro.append(loss.detach())
                if acc.sync_gradients:
                    acc.clip_grad_norm_(net.parameters(), 1.0)
                opt.step()  # the wrapped optimiser steps on a sync only; the scheduler once per step taken
                if acc.sync_gradients and not opt.step_was_skipped:  # (fp16: not after an overflow)
                    sched.step()
                opt.zero_grad()
            if not acc.sync_gradients:
                continue
            state.losses.append(_mean_loss(run, micro))
            state.step, micro = state.step + 1, []
            bar.update(1)
            bar.set_postfix(loss=f"{state.losses[-1]:.3f}", refresh=False)
            if evaluate_at(state.step, state):
                if on_eval is not None and on_eval(state.step, (state.step - 1) * per_step // per_epoch, state):
                    state.stopped = "early stop"
                    break
            elif log_every and state.step % log_every == 0 and run.is_main:
                log.info("%s step %d (%.0f s): loss %.3f", name, state.step, state.seconds(),
                         state.mean_loss(log_every))
            if cfg.save_every and state.step % cfg.save_every == 0:
                run.save(state.step)
            if stop.asked(acc):
                _interrupted(run, state.step)
    acc.wait_for_everyone()
    return state
