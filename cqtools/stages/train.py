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
from . import gen_cq as gen_stage

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


# --- gen-cq --------------------------------------------------------------------------------------

def silver_examples(records: list[dict], passages: int, with_answers: str | None) -> list[tuple[str, str, dict]]:
    """(input, target CQ, record) for the ambiguous records with >= 2 gold DQs; the target is
    the from-dqs CQ (the same silver CQs ``cq gen-cq --method from-dqs`` writes)."""
    out = []
    for record in records:
        dqs = gen_stage.gold_dq_questions(record)
        if len(dqs) < 2:
            continue
        category, options = gen_stage.cq_from_dqs(record["question"], dqs)
        if len(options) < 2:
            continue
        source = gen_stage.seq2seq_input(record["question"], gen_stage.passage_snippets(record, passages),
                                         gen_stage.answer_texts(record, with_answers))
        out.append((source, gen_stage.format_cq(gen_stage.which(category), options), record))
    return out


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


def cq_scores(pairs: list[tuple[str, str | None]]) -> dict:
    """Micro-averaged options P/R/F1 (AskCQ) and category accuracy for (gold CQ, predicted CQ) pairs."""
    from ..metrics.cq import micro_prf, score_record

    p = r = n_pred = n_gold = cat = 0.0
    for gold, pred in pairs:
        s = score_record(gold, pred)
        p += s["p_sum"]
        r += s["r_sum"]
        n_pred += s["n_pred"]
        n_gold += s["n_gold"]
        cat += s["category_em"]
    precision, recall, f = micro_prf(p, r, n_pred, n_gold)
    return {"options_precision": precision, "options_recall": recall, "options_f1": f,
            "category_em": cat / len(pairs) if pairs else 0.0, "n": len(pairs)}


def train_gen_cq(cfg: TrainConfig) -> dict:
    """Fine-tune a generator on silver CQs; returns the report written to ``out``."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer

    from ..models.backends import _gguf_to_safetensors, load_generator, pick_device
    from ..models.resolve import resolve

    if cfg.dev is None:
        raise InputError("train gen-cq needs --dev FILE")
    set_seed(cfg.seed)
    train = silver_examples(load_records(cfg.train, cfg.limit), cfg.passages, cfg.with_answers)
    dev = silver_examples(load_records(cfg.dev, cfg.dev_limit), cfg.passages, cfg.with_answers)
    if not train:
        raise InputError(f"{cfg.train} has no ambiguous records with >= 2 gold DQs to build silver CQs from")
    resolved = resolve(cfg.model)
    path = _gguf_to_safetensors(resolved) if resolved.fmt == "gguf" else resolved.path
    device = pick_device(cfg.device)
    seq2seq = bool(getattr(AutoConfig.from_pretrained(path), "is_encoder_decoder", False))
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = (AutoModelForSeq2SeqLM if seq2seq else AutoModelForCausalLM).from_pretrained(path).to(device)
    eos = tokenizer.eos_token_id if tokenizer.eos_token_id is not None else tokenizer.sep_token_id
    if eos is None:
        raise ResourceError(f"the tokenizer of {cfg.model} has no end-of-sequence token to end a CQ with")
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token_id = eos

    def encode(items):
        sources = [s for s, _, _ in items]
        targets = [t for _, t, _ in items]
        if seq2seq:
            enc = tokenizer(sources, truncation=True, max_length=384, padding=True, return_tensors="pt")
            enc = {"input_ids": enc.input_ids, "attention_mask": enc.attention_mask}
            lab = tokenizer(text_target=targets, truncation=True, max_length=64, padding=True, return_tensors="pt")
            enc["labels"] = lab.input_ids.masked_fill(lab.attention_mask == 0, -100)
            return enc
        # causal: "input\nClarifying question: CQ<eos>", loss on " CQ<eos>" only; right padding
        rows, labels = [], []
        for source, target in zip(sources, targets):
            prompt = tokenizer(source + gen_stage.CAUSAL_SUFFIX, add_special_tokens=False).input_ids[-384:]
            answer = tokenizer(" " + target, add_special_tokens=False).input_ids[:64] + [eos]
            rows.append(prompt + answer)
            labels.append([-100] * len(prompt) + answer)
        width = max(map(len, rows))
        pad = tokenizer.pad_token_id
        ids = torch.tensor([row + [pad] * (width - len(row)) for row in rows])
        mask = torch.tensor([[1] * len(row) + [0] * (width - len(row)) for row in rows])
        lab = torch.tensor([row + [-100] * (width - len(row)) for row in labels])
        return {"input_ids": ids, "attention_mask": mask, "labels": lab}

    steps_per_epoch = -(-len(train) // cfg.batch_size)
    total = steps_per_epoch * cfg.epochs if cfg.max_steps is None else min(cfg.max_steps, steps_per_epoch * cfg.epochs)
    opt, sched = _optimizer(model, cfg.lr, total)
    budget = Budget(cfg.max_steps, cfg.max_seconds)
    model.train()
    step = 0
    losses: list[float] = []
    log.info("train gen-cq: %d silver train / %d dev CQs, %s, %d steps at most, device %s", len(train), len(dev),
             "seq2seq" if seq2seq else "causal LM", total, device)
    for epoch, idx in batches(len(train), cfg.batch_size, cfg.epochs, cfg.seed):
        if budget.spent(step):
            break
        batch = {k: v.to(device) for k, v in encode([train[i] for i in idx]).items()}
        losses.append(optimizer_step(model(**batch).loss, model, opt, sched))
        step += 1
        if step % 10 == 0:
            log.info("step %d: loss %.3f", step, sum(losses[-10:]) / len(losses[-10:]))
    os.makedirs(cfg.out, exist_ok=True)
    model.save_pretrained(cfg.out)
    tokenizer.save_pretrained(cfg.out)
    keep_model_inputs(cfg.out, model)
    train_seconds = round(budget.elapsed(), 1)

    # dev: generate with the saved model exactly as `cq gen-cq --method seq2seq` would
    dev_scores = None
    if dev:
        generator = load_generator(cfg.out, device=device)
        method = gen_stage.seq2seq_method(generator, cfg.passages, cfg.with_answers, 48)
        preds = method.run([r for _, _, r in dev])
        golds = [(r.get(GOLD) or {}).get("cq") or target for _, target, r in dev]
        dev_scores = cq_scores([(g, p["text"]) for g, p in zip(golds, preds)])
        dev_scores["valid"] = sum(bool(p["valid"]) for p in preds) / len(preds)
    report = {"task": "gen-cq", "config": asdict(cfg), "base_model": resolved.describe(), "device": device,
              "kind": "seq2seq" if seq2seq else "causal", "steps": step, "train_seconds": train_seconds,
              "peak_rss_mb": round(peak_rss_mb()), "train_examples": len(train), "dev_examples": len(dev),
              "final_loss": sum(losses[-10:]) / len(losses[-10:]) if losses else None, "dev": dev_scores}
    _write_report(cfg.out, report)
    return report
