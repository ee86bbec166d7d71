"""Fine-tuning for ``cq train detect`` and ``cq train gen-cq`` (plain torch loops, CPU-friendly).

Both read cq records (``cq convert ambignq ...``; passages used when the records have them),
train with a fixed seed, evaluate on dev, keep the best checkpoint and write it with its
tokenizer and a ``cq_train.json`` report to ``out``:

* detect: an encoder + 2-label head (AutoModelForSequenceClassification) on
  "question [SEP] passages" with label ``gold.ambiguous``; early stop on dev F1 (ties: accuracy)
  or dev AUROC, where "dev" is either a separate file or a seeded slice held out of the training
  records (``holdout``). The directory is what ``cq detect --method classifier --model DIR`` loads.
* gen-cq: a generator on silver CQs built by ``from-dqs`` from gold DQs of the ambiguous
  records (seq2seq when the model is encoder-decoder, else a causal LM with the loss on the CQ
  only); dev CQ metrics against the dev silver CQs (or gold.cq where the records carry one).
  The directory is what ``cq gen-cq --method seq2seq --model DIR`` loads.
"""
from __future__ import annotations

import json
import logging
import os
import random
import resource
import time
from dataclasses import asdict, dataclass
from typing import Iterator

from ..errors import InputError, ResourceError
from ..jsonl import read_records
from ..models.backends import set_seed
from ..records import GOLD
from . import detect as detect_stage

log = logging.getLogger("cqtools")
REPORT = "cq_train.json"


@dataclass
class TrainConfig:
    train: str
    dev: str | None
    model: str
    out: str
    epochs: int = 3
    batch_size: int = 16
    lr: float = 5e-5
    max_steps: int | None = None
    max_seconds: float | None = None
    limit: int | None = None
    dev_limit: int | None = None
    seed: int = 0
    passages: int = 3
    eval_every: int | None = None   # steps between dev evaluations (default: once per epoch)
    patience: int = 3               # evaluations without improvement before stopping
    holdout: int | None = None      # detect only: early-stop on N train records held out (instead of dev)
    select: str = "f1"              # detect only: checkpoint metric, "f1" (ties: accuracy) or "auroc"
    max_length: int = detect_stage.MAX_INPUT_TOKENS  # detect only: tokens per input
    device: str = "auto"
    with_answers: str | None = None  # gen-cq only: None | "gold"


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
        return ((self.max_steps is not None and step >= self.max_steps)
                or (self.max_seconds is not None and self.elapsed() >= self.max_seconds))


def _optimizer(model, lr: float, total_steps: int):
    import torch
    from transformers import get_linear_schedule_with_warmup

    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=lr, weight_decay=0.01)
    sched = get_linear_schedule_with_warmup(opt, max(1, total_steps // 10), max(1, total_steps))
    return opt, sched


def _write_report(out: str, report: dict) -> None:
    with open(os.path.join(out, REPORT), "w") as fh:
        json.dump(report, fh, indent=2, sort_keys=True)


# --- detect ---------------------------------------------------------------------------------------

def train_detect(cfg: TrainConfig) -> dict:
    """Fine-tune an encoder as the ambiguity classifier; returns the report written to ``out``."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from ..metrics.detect import auroc, confusion
    from ..models.backends import pick_device
    from ..models.resolve import resolve

    if (cfg.dev is None) == (cfg.holdout is None):
        raise InputError("train detect needs either --dev FILE or --holdout N (records held out of --train) "
                         "for early stopping, not both")
    if cfg.select not in ("f1", "auroc"):
        raise InputError(f"select must be f1 or auroc, not {cfg.select!r}")
    set_seed(cfg.seed)
    train = load_records(cfg.train, cfg.limit)
    if cfg.holdout is not None:
        train, dev = split_holdout(train, cfg.holdout, cfg.seed)
        dev = dev[:cfg.dev_limit] if cfg.dev_limit else dev
    else:
        dev = load_records(cfg.dev, cfg.dev_limit)
    y_train = [gold_label(r) for r in train]
    y_dev = [gold_label(r) for r in dev]
    x_train = [detect_stage.classifier_text(r, cfg.passages) for r in train]
    x_dev = [detect_stage.classifier_text(r, cfg.passages) for r in dev]

    resolved = resolve(cfg.model)
    device = pick_device(cfg.device)
    tokenizer = AutoTokenizer.from_pretrained(resolved.path)
    try:
        model = AutoModelForSequenceClassification.from_pretrained(
            resolved.path, num_labels=2, id2label={0: "not ambiguous", 1: "ambiguous"},
            label2id={"not ambiguous": 0, "ambiguous": 1}).to(device)
    except (OSError, ValueError) as err:
        raise ResourceError(f"cannot load {cfg.model} as an encoder: {str(err).splitlines()[0]}") from None

    steps_per_epoch = -(-len(train) // cfg.batch_size)
    total = steps_per_epoch * cfg.epochs if cfg.max_steps is None else min(cfg.max_steps, steps_per_epoch * cfg.epochs)
    eval_every = cfg.eval_every or steps_per_epoch
    opt, sched = _optimizer(model, cfg.lr, total)
    budget = Budget(cfg.max_steps, cfg.max_seconds)

    def evaluate() -> dict:
        model.eval()
        probs: list[float] = []
        with torch.inference_mode():
            for start in range(0, len(x_dev), 64):
                enc = detect_stage.encode_pairs(tokenizer, x_dev[start:start + 64], cfg.max_length).to(device)
                probs.extend(torch.softmax(model(**enc).logits.float(), -1)[:, 1].tolist())
        model.train()
        scores = confusion(y_dev, [p > 0.5 for p in probs])
        scores["auroc"] = auroc(y_dev, probs)
        return scores

    best: dict | None = None
    best_state = None
    history = []
    bad_evals = step = 0
    stopped = "done"
    losses: list[float] = []

    def key(scores: dict) -> tuple:
        if cfg.select == "auroc":
            return (scores["auroc"] if scores["auroc"] is not None else -1.0, scores["f1"])
        return (scores["f1"], scores["accuracy"])

    model.train()
    log.info("train detect: %d train / %d %s records, %d steps at most, device %s", len(train), len(dev),
             "held-out train" if cfg.holdout is not None else "dev", total, device)
    for epoch, idx in batches(len(train), cfg.batch_size, cfg.epochs, cfg.seed):
        if budget.spent(step):
            stopped = "budget"
            break
        enc = detect_stage.encode_pairs(tokenizer, [x_train[i] for i in idx], cfg.max_length).to(device)
        labels = torch.tensor([int(y_train[i]) for i in idx], device=device)
        losses.append(optimizer_step(model(**enc, labels=labels).loss, model, opt, sched))
        step += 1
        if step % eval_every == 0 or budget.spent(step) or step == total:
            scores = evaluate()
            history.append({"step": step, "epoch": epoch, "loss": sum(losses[-eval_every:]) / len(losses[-eval_every:]),
                            **{k: scores[k] for k in ("accuracy", "precision", "recall", "f1", "auroc")}})
            log.info("step %d (%.0f s): loss %.3f dev F1 %.3f acc %.3f AUROC %s", step, budget.elapsed(),
                     history[-1]["loss"], scores["f1"], scores["accuracy"],
                     "-" if scores["auroc"] is None else f"{scores['auroc']:.3f}")
            if best is None or key(scores) > key(best):
                best = {**history[-1]}
                best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
                bad_evals = 0
            else:
                bad_evals += 1
                if bad_evals >= cfg.patience:
                    log.info("early stop: no dev improvement in %d evaluations", bad_evals)
                    stopped = "early stop"
                    break
    if best is None:  # no step was taken (empty budget)
        best = {"step": 0, **evaluate()}
    else:
        model.load_state_dict(best_state)
    os.makedirs(cfg.out, exist_ok=True)
    model.save_pretrained(cfg.out)
    tokenizer.save_pretrained(cfg.out)
    report = {"task": "detect", "config": asdict(cfg), "base_model": resolved.describe(), "device": device,
              "steps": step, "stopped": stopped, "train_seconds": round(budget.elapsed(), 1),
              "peak_rss_mb": round(peak_rss_mb()), "train_records": len(train), "train_ambiguous": sum(y_train),
              "dev_records": len(dev), "dev_ambiguous": sum(y_dev),
              "dev_source": "holdout" if cfg.holdout is not None else "dev", "best": best, "history": history}
    if cfg.holdout is not None:
        report["holdout_ids"] = [r.get("id") for r in dev]
    _write_report(cfg.out, report)
    return report


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
