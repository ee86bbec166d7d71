"""``cq train gen-cq``: a generator on the records' gold CQs (``gold.cq``: CAmbigNQ's clarification
questions, from ``cq convert cambignq`` or ``--join cambignq:``) and, for records without one, silver CQs
built by ``from-dqs`` from gold DQs of the ambiguous records (``targets="silver"``: silver CQs only, as
before); the report counts each (``targets``). Seq2seq when the model is encoder-decoder, else a causal LM with the loss on the CQ only),
trained by the shared loop (:mod:`.loop`); dev CQ metrics against the dev silver CQs (or gold.cq
where the records carry one). The directory is what ``cq gen-cq --method seq2seq --model DIR`` loads."""
from __future__ import annotations

from dataclasses import asdict
from types import SimpleNamespace

from ..errors import InputError, ResourceError
from ..records import GOLD
from ..stages import evidence, gen_cq as gen_stage
from .best import dev_report, selection
from .loop import (GenCQTrainConfig, batch_loss, decoded_batch, keep_model_inputs, load_records, log, peak_rss_mb,
                   saver, set_seed, start, train_loop, write_report)


TARGETS = ("auto", "silver")  # auto: gold.cq where a record has one, else the silver CQ; silver: silver only
# What --input-layout sets where the user set nothing: cq's own, or AskCQ's release (DongryeolLee96/AskCQ @d8be017:
# cli.py --max_token_nums 1024 and --learning_rate 1e-5, run_cq_training.sh train_batch_size=10; every relevant passage
# read until the 1,024 tokens are full, CQDataset.py:119-126), the same input `cq gen-cq --preset askcq` generates from.
# Its batches: 10, gradients summed over 2 (run_cq_training.sh:17-18 @d8be017); dev every 500 batches, which are 250
# optimiser steps (eval_period=500 counts batches, run.py:train @d8be017), stopped after 10 evaluations without a
# better one (--wait_step 10). Not followed: its 100 epochs (--epochs stays cq's 1; give --epochs 100 for them).
# Its batches in file order (run.py:84 shuffle=False), two batches' losses summed into a step (run.py:190-197). Its schedule: AdamW without warm-up (cli.py:106 warmup_steps 0) or weight decay (cli.py:96), decaying linearly over
# 100,000 optimiser steps (run.py:144-146); dev CQs decoded with beam 4 and max_length 128 (run.py:256-266,
# run_cq_training.sh:17 MAX_QUESTION_LENGTH), which counts BART's decoder start token: 127 generated.
LAYOUT_DEFAULTS = {"cq": {"batch_size": 8, "lr": 5e-5, "passages": 3, "max_passage_tokens": None, "grad_accum": 1,
                          "eval_every": None, "patience": None, "warmup_ratio": 0.1, "weight_decay": 0.01,
                          "decay_steps": None, "num_beams": 1, "max_cq_tokens": 48, "shuffle": True,
                          "accumulate": "mean", "passage_cut": "whole"},
                   "askcq": {"batch_size": 10, "lr": 1e-5, "passages": 100, "max_passage_tokens": 1024,
                             "grad_accum": 2, "eval_every": 250, "patience": 10, "warmup_ratio": 0.0,
                             "weight_decay": 0.0, "decay_steps": 100000, "num_beams": 4, "max_cq_tokens": 127,
                             "shuffle": False, "accumulate": "sum", "passage_cut": "last"}}
CQ_INPUT_TOKENS = 384  # where a cq-layout input without a budget is cut (as before)
# The weights kept: the best dev CQ BLEU-4 (corpus BLEU against the gold CQ), as AskCQ keeps its best-model.pt for
# CQ generation (run.py:219-229 @d8be017, CQ_evaluate.py:45-47: evaluate.load("bleu")).
DEV_METRIC = "cq_bleu"


def layout_defaults(cfg: GenCQTrainConfig) -> GenCQTrainConfig:
    """``cfg`` with the settings left unset (None) taken from its input layout's :data:`LAYOUT_DEFAULTS`."""
    import dataclasses

    unset = {k: v for k, v in LAYOUT_DEFAULTS[cfg.input_layout].items() if getattr(cfg, k) is None}
    return dataclasses.replace(cfg, **unset)


def cq_examples(records: list[dict], passages: int, with_answers: str | None, targets: str = "auto",
                build_input=None, two_options: str = gen_stage.FromDqsOptions.two_options,
                max_passage_tokens: int | None = None, count=None, cut: bool = False
                ) -> tuple[list[tuple[str, str, dict]], dict]:
    """(input, target CQ, record) per training record, and how many targets are gold and silver CQs.

    The target is the record's gold CQ (``gold.cq``) when it has one and ``targets`` is "auto"; else the
    from-dqs CQ (the silver CQ ``cq gen-cq --method from-dqs`` writes, two options joined as ``two_options``
    says) of an ambiguous record with >= 2 gold DQs; other records are left out. ``build_input`` writes the
    input (:func:`cqtools.stages.gen_cq.input_builder`; default cq's layout) from the passages
    :func:`cqtools.stages.gen_cq.model_input` reads, as ``cq gen-cq --method seq2seq`` does (``max_passage_tokens``
    counted with ``count``; ``cut``: the passage over it read in part)."""
    build_input = build_input or gen_stage.seq2seq_input
    if targets not in TARGETS:
        raise InputError(f"targets={targets!r}: use one of {', '.join(TARGETS)} (--targets)")
    out = []
    counts = {"gold_cq": 0, "silver_cq": 0}
    for record in records:
        gold_cq = (record.get(GOLD) or {}).get("cq") if targets == "auto" else None
        if isinstance(gold_cq, str) and gold_cq.strip():
            target, kind = gold_cq.strip(), "gold_cq"
        else:
            dqs = gen_stage.gold_dq_questions(record)
            if len(dqs) < 2:
                continue
            category, options = gen_stage.cq_from_dqs(record["question"], dqs)
            if len(options) < 2:
                continue
            target, kind = gen_stage.format_cq(gen_stage.which(category), options, two_options), "silver_cq"
        source = gen_stage.model_input(record, build_input, passages, max_passage_tokens, count, with_answers, cut)[0]
        out.append((source, target, record))
        counts[kind] += 1
    return out, counts


def silver_examples(records: list[dict], passages: int, with_answers: str | None) -> list[tuple[str, str, dict]]:
    """(input, silver CQ, record) for the ambiguous records with >= 2 gold DQs (:func:`cq_examples` with
    ``targets="silver"``)."""
    return cq_examples(records, passages, with_answers, "silver")[0]


def cq_scores(pairs: list[tuple[str, str | None]]) -> dict:
    """Micro-averaged options P/R/F1 (AskCQ) and category accuracy for (gold CQ, predicted CQ) pairs."""
    from ..metrics.bleu import corpus_bleu
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
    return {"cq_bleu": corpus_bleu([pred or "" for _, pred in pairs], [[gold] for gold, _ in pairs]),
            "options_precision": precision, "options_recall": recall, "options_f1": f,
            "category_em": cat / len(pairs) if pairs else 0.0, "n": len(pairs)}


def batch_encoder(tokenizer, seq2seq: bool, eos: int, max_input: int = CQ_INPUT_TOKENS):
    """items -> a training batch: seq2seq input/labels, or for a causal LM "input\nClarifying question:
    CQ<eos>" with the loss on " CQ<eos>" only (right padding); inputs cut at ``max_input`` tokens."""
    import torch

    def encode(items):
        sources = [s for s, _, _ in items]
        targets = [t for _, t, _ in items]
        if seq2seq:
            enc = tokenizer(sources, truncation=True, max_length=max_input, padding=True, return_tensors="pt")
            enc = {"input_ids": enc.input_ids, "attention_mask": enc.attention_mask}
            lab = tokenizer(text_target=targets, truncation=True, max_length=64, padding=True, return_tensors="pt")
            enc["labels"] = lab.input_ids.masked_fill(lab.attention_mask == 0, -100)
            return enc
        # causal: "input\nClarifying question: CQ<eos>", loss on " CQ<eos>" only; right padding
        rows, labels = [], []
        for source, target in zip(sources, targets):
            prompt = tokenizer(source + gen_stage.CAUSAL_SUFFIX, add_special_tokens=False).input_ids[-max_input:]
            answer = tokenizer(" " + target, add_special_tokens=False).input_ids[:64] + [eos]
            rows.append(prompt + answer)
            labels.append([-100] * len(prompt) + answer)
        width = max(map(len, rows))
        pad = tokenizer.pad_token_id
        ids = torch.tensor([row + [pad] * (width - len(row)) for row in rows])
        mask = torch.tensor([[1] * len(row) + [0] * (width - len(row)) for row in rows])
        lab = torch.tensor([row + [-100] * (width - len(row)) for row in labels])
        return {"input_ids": ids, "attention_mask": mask, "labels": lab}

    return encode


def _load_model(name: str, path: str, tokenizer, device: str):
    """(the model at ``path`` on ``device``, whether it is seq2seq, the token that ends a CQ); a
    tokenizer without a pad token pads with that end token."""
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSeq2SeqLM

    seq2seq = bool(getattr(AutoConfig.from_pretrained(path), "is_encoder_decoder", False))
    model = (AutoModelForSeq2SeqLM if seq2seq else AutoModelForCausalLM).from_pretrained(path).to(device)
    eos = tokenizer.eos_token_id if tokenizer.eos_token_id is not None else tokenizer.sep_token_id
    if eos is None:
        raise ResourceError(f"the tokenizer of {name} has no end-of-sequence token to end a CQ with")
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token_id = eos
    return model, seq2seq, eos


def _examples(cfg: GenCQTrainConfig, tokenizer) -> tuple[tuple, tuple]:
    """(train, dev) :func:`cq_examples`, the inputs as `cq gen-cq --method seq2seq --input-layout` will write them
    (AskCQ's layout needs the model's tokens)."""
    reads = SimpleNamespace(tokenizer=tokenizer, name=cfg.model)
    count = evidence.token_counter(reads) if cfg.max_passage_tokens is not None else None
    examples = {"build_input": gen_stage.input_builder(reads, cfg.input_layout), "two_options": cfg.two_options,
                "max_passage_tokens": cfg.max_passage_tokens, "count": count, "cut": cfg.passage_cut == "last"}
    return tuple(cq_examples(load_records(path, limit), cfg.passages, cfg.with_answers, cfg.targets, **examples)
                 for path, limit in ((cfg.train, cfg.limit), (cfg.dev, cfg.dev_limit)))


def train_gen_cq(cfg: GenCQTrainConfig) -> dict:
    """Fine-tune a generator on gold CQs where the records have them, silver CQs otherwise; returns the report written to ``out``."""
    from transformers import AutoTokenizer

    from ..models.gguf import to_safetensors
    from ..models.resolve import resolve

    if cfg.dev is None:
        raise InputError("train gen-cq needs --dev FILE")
    set_seed(cfg.seed)
    resolved = resolve(cfg.model)
    path = to_safetensors(resolved) if resolved.fmt == "gguf" else resolved.path
    tokenizer = AutoTokenizer.from_pretrained(path)
    cfg = layout_defaults(cfg)
    (train, train_counts), (dev, dev_counts) = _examples(cfg, tokenizer)
    if not train:
        raise InputError(f"{cfg.train} has no records with a gold CQ (gold.cq) or >= 2 gold DQs to build silver "
                         "CQs from")
    run = start(cfg)
    device = run.device
    model, seq2seq, eos = _load_model(cfg.model, path, tokenizer, device)
    encode = batch_encoder(tokenizer, seq2seq, eos, cfg.max_passage_tokens or CQ_INPUT_TOKENS)

    save = saver(cfg.out, model, tokenizer, {"task": "gen-cq", "config": asdict(cfg)},
                 then=lambda: keep_model_inputs(cfg.out, model))
    keeper, timing, total = selection(run, model, len(train), save, (lambda: dev_cq_scores(cfg, dev, device)) if dev
                                      else None, DEV_METRIC, "train gen-cq", cfg.patience)
    log.info("train gen-cq: %d train CQs (%d gold, %d silver) / %d dev CQs, %s, %d steps at most, device %s",
             len(train), train_counts["gold_cq"], train_counts["silver_cq"], len(dev),
             "seq2seq" if seq2seq else "causal LM", total, device)
    state = train_loop(run, model, len(train), batch_loss(encode, train, device), log_every=10, name="train gen-cq",
                       peek=lambda idx: decoded_batch(tokenizer, encode([train[i] for i in idx])), **timing)
    if not run.is_main:
        return {}
    kept = keeper is not None and keeper.restore()
    save()
    dev_scores = None
    if dev:  # the kept weights' scores (no step taken: the base model's)
        dev_scores = keeper.best_scores() if kept else dev_cq_scores(cfg, dev, device)
    report = {"task": "gen-cq", "config": asdict(cfg), "base_model": resolved.describe(), "device": device,
              "kind": "seq2seq" if seq2seq else "causal", "processes": run.accelerator.num_processes,
              "steps": state.step, "stopped": state.stopped, "train_seconds": round(state.seconds(), 1),
              "peak_rss_mb": round(peak_rss_mb()), "train_examples": len(train), "dev_examples": len(dev),
              "targets": {"train": train_counts, "dev": dev_counts},
              "final_loss": state.mean_loss(10) if state.losses else None, "dev": dev_scores, **state.recipe(),
              **dev_report(keeper, DEV_METRIC)}
    write_report(cfg.out, report)
    return report


def dev_cq_scores(cfg: GenCQTrainConfig, dev: list, device: str) -> dict:
    """Generate with the saved model exactly as `cq gen-cq --method seq2seq` would, and score the CQs
    against gold.cq where a record has one, else its silver CQ."""
    from ..models.load import load_generator

    generator = load_generator(cfg.out, device=device)
    options = gen_stage.Seq2SeqOptions(n_passages=cfg.passages, with_answers=cfg.with_answers,
                                       max_new_tokens=cfg.max_cq_tokens, num_beams=cfg.num_beams,
                                       input_layout=cfg.input_layout, two_options=cfg.two_options,
                                       max_passage_tokens=cfg.max_passage_tokens,
                                       passage_cut=cfg.passage_cut or "whole")
    preds = gen_stage.seq2seq_method(generator, options).run([r for _, _, r in dev])
    golds = [(r.get(GOLD) or {}).get("cq") or target for _, target, r in dev]
    scores = cq_scores([(g, p["text"]) for g, p in zip(golds, preds)])
    scores["valid"] = sum(bool(p["valid"]) for p in preds) / len(preds)
    return scores
