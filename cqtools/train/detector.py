"""``cq train detect``: an encoder + 2-label head (AutoModelForSequenceClassification) on
"question [SEP] passages" with label ``gold.ambiguous``; the checkpoint kept is the best on dev F1
(ties: accuracy) or dev AUROC, "dev" being a separate file or a seeded slice held out of the
training records (``holdout``), with early stopping after ``patience`` evaluations without gain.
The directory is what ``cq detect --method classifier --model DIR`` loads."""
from __future__ import annotations

import os
from dataclasses import asdict

from ..config import RunConfig
from ..errors import InputError, ResourceError
from ..stages import detect as detect_stage
from .best import BestOnDev, eval_steps, every_of
from .loop import (DetectTrainConfig, LoopState, decoded_batch, gold_label, load_records, log, peak_rss_mb, set_seed, split_holdout,
                   start, total_steps, train_loop, write_report)


def _data(cfg: DetectTrainConfig) -> tuple[list[dict], list[dict]]:
    """(train, dev) records: dev from its file, or held out of train."""
    if (cfg.dev is None) == (cfg.holdout is None):
        raise InputError("train detect needs either --dev FILE or --holdout N (records held out of --train) "
                         "for early stopping, not both")
    if cfg.select not in ("f1", "auroc", "loss"):
        raise InputError(f"select must be f1, auroc or loss, not {cfg.select!r}")
    set_seed(cfg.seed)
    train = load_records(cfg.train, cfg.limit)
    if cfg.holdout is None:
        return train, load_records(cfg.dev, cfg.dev_limit)
    train, dev = split_holdout(train, cfg.holdout, cfg.seed)
    return train, dev[:cfg.dev_limit] if cfg.dev_limit else dev


def _load(cfg: DetectTrainConfig, device: str, cache_root: str):
    """(resolved base model, tokenizer, 2-label classifier); an offline ONNX cross-encoder starts from its float
    copy, its 1-logit relevance head replaced by a new 2-label one (the only size that may differ)."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from ..models.onnx_torch import local_dir
    from ..models.resolve import resolve

    resolved = resolve(cfg.model)
    path = local_dir(resolved, cache_root)
    tokenizer = AutoTokenizer.from_pretrained(path)
    try:
        model = AutoModelForSequenceClassification.from_pretrained(
            path, num_labels=2, id2label={0: "not ambiguous", 1: "ambiguous"},
            label2id={"not ambiguous": 0, "ambiguous": 1}, ignore_mismatched_sizes=resolved.fmt == "onnx").to(device)
    except (OSError, ValueError) as err:
        raise ResourceError(f"cannot load {cfg.model} as an encoder: {str(err).splitlines()[0]}") from None
    return resolved, tokenizer, model


class Checkpoints(BestOnDev):
    """Dev evaluations of the classifier (:class:`.best.BestOnDev`): the best on F1 (ties: accuracy) or AUROC
    (ties: F1), early stopping after ``patience`` evaluations without gain."""

    def __init__(self, cfg: DetectTrainConfig, model, evaluate, eval_every: int):
        key = {"auroc": self.auroc_key, "loss": self.loss_key}.get(cfg.select, self.f1_key)
        super().__init__(model, evaluate, key, eval_every, cfg.patience, "train detect")

    @staticmethod
    def loss_key(scores: dict) -> tuple:
        """The lowest dev loss first (AskCQ's Trainer: metric_for_best_model loss, run_ambiguity_detection.sh:35-36)."""
        return (-scores["dev_loss"],)

    @staticmethod
    def auroc_key(scores: dict) -> tuple:
        return (scores["auroc"] if scores["auroc"] is not None else -1.0, scores["f1"])

    @staticmethod
    def f1_key(scores: dict) -> tuple:
        return (scores["f1"], scores["accuracy"])

    def entry(self, scores: dict) -> dict:
        return {k: scores[k] for k in ("accuracy", "precision", "recall", "f1", "auroc", "dev_loss")}

    def log(self, step: int, state: LoopState, scores: dict) -> None:
        log.info("step %d (%.0f s): loss %.3f dev F1 %.3f acc %.3f AUROC %s", step, state.budget.elapsed(),
                 self.history[-1]["loss"], scores["f1"], scores["accuracy"],
                 "-" if scores["auroc"] is None else f"{scores['auroc']:.3f}")


def _with_passages(cfg: DetectTrainConfig, train: list[dict]) -> int:
    """How many training records have passages (a warning when --passages asks for them and none has)."""
    with_passages = sum(bool(r.get("passages")) for r in train)
    if cfg.passages and not with_passages:
        log.warning("train detect: --passages %d, but no training record has passages: the classifier learns "
                    "from the question alone (run `cq retrieve` over the training records first, or pass "
                    "--passages 0)", cfg.passages)
    return with_passages


def _evaluator(model, tokenizer, x_dev: list, y_dev: list[bool], max_length: int, device: str, layout: str = "pair"):
    """A function scoring ``model`` on the dev texts (label = P(ambiguous) > 0.5; AUROC of that
    probability; the mean cross-entropy, ``dev_loss``, as a Trainer's eval loss), in eval mode and back to train
    mode after."""
    import torch

    from ..metrics.detect import auroc, confusion

    def evaluate() -> dict:
        model.eval()
        probs: list[float] = []
        loss = 0.0
        with torch.inference_mode():
            for start in range(0, len(x_dev), 64):
                enc = detect_stage.encode_pairs(tokenizer, x_dev[start:start + 64], max_length, layout).to(device)
                logits = model(**enc).logits.float()
                gold = torch.tensor([int(y) for y in y_dev[start:start + 64]], device=logits.device)
                loss += torch.nn.functional.cross_entropy(logits, gold, reduction="sum").item()
                probs.extend(torch.softmax(logits, -1)[:, 1].tolist())
        model.train()
        scores = confusion(y_dev, [p > 0.5 for p in probs])
        scores["auroc"] = auroc(y_dev, probs)
        scores["dev_loss"] = loss / max(1, len(y_dev))
        return scores

    return evaluate


def train_detect(cfg: DetectTrainConfig) -> dict:
    """Fine-tune an encoder as the ambiguity classifier; returns the report written to ``out``."""
    import torch

    train, dev = _data(cfg)
    with_passages = _with_passages(cfg, train)
    y_train = [gold_label(r) for r in train]
    y_dev = [gold_label(r) for r in dev]
    x_train = [detect_stage.classifier_text(r, cfg.passages) for r in train]
    x_dev = [detect_stage.classifier_text(r, cfg.passages) for r in dev]
    run = start(cfg)
    device = run.device
    resolved, tokenizer, model = _load(cfg, device, RunConfig.from_env().cache_root())
    evaluate = _evaluator(model, tokenizer, x_dev, y_dev, cfg.max_length, device, cfg.input_layout)

    def batch(idx: list[int]) -> dict:
        enc = detect_stage.encode_pairs(tokenizer, [x_train[i] for i in idx], cfg.max_length, cfg.input_layout)
        return {**enc, "labels": torch.tensor([int(y_train[i]) for i in idx])}

    def loss_of(net, idx: list[int]):
        return net(**{k: v.to(device) for k, v in batch(idx).items()}).loss

    per_step = cfg.grad_accum * run.accelerator.num_processes
    total = total_steps(len(train), cfg.batch_size, cfg.epochs, cfg.max_steps, per_step)
    eval_every = every_of(cfg.eval_every, len(train), cfg.batch_size * per_step)
    checkpoints = Checkpoints(cfg, model, evaluate, eval_every)
    log.info("train detect: %d train / %d %s records, %d steps at most, device %s", len(train), len(dev),
             "held-out train" if cfg.holdout is not None else "dev", total, device)
    state = train_loop(run, model, len(train), loss_of,
                       evaluate_at=eval_steps(eval_every, total),
                       on_eval=checkpoints, name="train detect", keep=(checkpoints,),
                       peek=lambda idx: decoded_batch(tokenizer, batch(idx)))
    if not run.is_main:
        return {}
    best = checkpoints.best
    if not checkpoints.restore():  # no step was taken (empty budget)
        best = {"step": 0, **evaluate()}
    os.makedirs(cfg.out, exist_ok=True)
    model.save_pretrained(cfg.out)
    tokenizer.save_pretrained(cfg.out)
    report = {"task": "detect", "config": asdict(cfg), "base_model": resolved.describe(), "device": device,
              "steps": state.step, "stopped": state.stopped, "train_seconds": round(state.seconds(), 1),
              "processes": run.accelerator.num_processes,
              "peak_rss_mb": round(peak_rss_mb()), "train_records": len(train), "train_ambiguous": sum(y_train),
              "train_with_passages": with_passages,
              "dev_records": len(dev), "dev_ambiguous": sum(y_dev),
              "dev_source": "holdout" if cfg.holdout is not None else "dev", "best": best,
              "history": checkpoints.history, **state.recipe()}
    if cfg.holdout is not None:
        report["holdout_ids"] = [r.get("id") for r in dev]
    write_report(cfg.out, report)
    return report
