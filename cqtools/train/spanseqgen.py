"""``cq train spanseqgen``: AmbigQA's SpanSeqGen, a seq2seq model (BART-large in the paper) fine-tuned to generate
every answer of a question as one sequence ("a1 <SEP> a2 ..."), reading the question and its passages in the
release's layout (:func:`cqtools.stages.answer.seqgen.ambigqa_input`). Trained by the shared loop
(:mod:`.loop`: checkpoints, --resume, accumulation, several processes); the directory, with its layout and
decoding in cq_train.json, is what ``cq answer --reader seqgen --model DIR`` (or ``--reader auto``) loads.

Targets as the release builds them (shmsw25/AmbigQA @5c8cdb1 QAData.py:610-652, with
``--discard_not_found_answers``): for each annotation, each answer cluster's aliases found in the input; one
target per combination of found aliases (one alias per cluster, clusters without a found alias left out), at
most 100 an annotation, cut at 30 tokens; an annotation with no alias found gives none.

``--input-layout askcq`` trains AskCQ's clarification-based QA reader instead (:func:`askcq_examples`; ``--preset
askcq``): one answer for the question revised by each option of the gold CQ, read by ``cq answer --mode cq --reader
seqgen --revised-question askcq``.
"""
from __future__ import annotations

import itertools
import os
from dataclasses import asdict, dataclass

from ..errors import InputError
from ..metrics.ambigqa import annotation_clusters
from ..records import GOLD
from ..registry import option
from ..stages.answer import seqgen as stage
from .best import BestOnDev, dev_report, eval_steps, every_of, metric_key, scoring_saved
from .loop import load_records, log, peak_rss_mb, set_seed, start, total_steps, train_loop, write_report
from .settings import TrainConfig

TARGET_TOKENS = 30  # QAData.py:642 @5c8cdb1: answers[:30]
ASKCQ_TARGET_TOKENS = 50  # AskCQ @d8be017 run.py:76 max_target_length = cli.py:111 --max_answer_length (50)
MAX_TARGETS = 100  # QAData.py:648: cnt==100: break (combinations of found aliases per annotation)
BASE_MODEL = "facebook/bart-base"  # cq's default base; AmbigQA's recipe (`--preset ambigqa`) trains BART-large


@dataclass
class SpanSeqGenTrainConfig(TrainConfig):
    """`cq train spanseqgen`'s settings: the shared ones and the layout's and decoding's (saved with the model);
    AmbigQA's recipe is ``--preset ambigqa`` (cqtools/presets/ambigqa.py, rows of cq train spanseqgen)."""

    passages: int | None = option(None, "Top passages in the input [default: as many as fill --max-input-tokens].",
                                  min=1)
    input_layout: str = option("ambigqa", "The input as AmbigQA's release writes it (\"<s> question? title </s> "
                                          "passage ...\", lower-cased; targets every answer), or askcq: AskCQ's "
                                          "clarification-based QA reader (the question revised by each option of "
                                          "the gold CQ, then the passages; target that option's answer); cq answer "
                                          "reads it from cq_train.json.",
                               choices=stage.LAYOUTS)
    max_input_tokens: int = option(stage.INPUT_TOKENS, "Input tokens (question and passages), saved with the model.",
                                   min=16)
    num_beams: int = option(stage.BEAMS, "Beams when decoding (dev and cq answer), saved with the model.", min=1)
    max_answer_tokens: int = option(stage.ANSWER_TOKENS, "Tokens generated per question (dev and cq answer), saved "
                                                         "with the model.", min=1)


def record_targets(record: dict, source: str, limit: int = MAX_TARGETS) -> list[str]:
    """The target sequences of one record whose input decodes to ``source`` (lower-cased text)."""
    out = []
    for annotation in (record.get(GOLD) or {}).get("annotations") or []:
        found = []
        for cluster in annotation_clusters(annotation):
            aliases = list(dict.fromkeys(a.strip().lower() for a in cluster if a.strip().lower() in source))
            if aliases:
                found.append(aliases)
        if found:
            out += [stage.join_answers(list(c)) for c in itertools.islice(itertools.product(*found), limit)]
    return list(dict.fromkeys(out))


def seqgen_examples(records: list[dict], tokenizer, cfg: SpanSeqGenTrainConfig) -> list[tuple[list[int], str, dict]]:
    """(input ids, target, record) for every target of every record (records without one are left out)."""
    if cfg.input_layout == "askcq":
        return askcq_examples(records, tokenizer, cfg)
    out = []
    for record in records:
        ids = stage.ambigqa_input(tokenizer, record["question"], (record.get("passages") or [])[:cfg.passages],
                                  cfg.max_input_tokens)
        source = tokenizer.decode(ids, skip_special_tokens=True).lower()
        out += [(ids, target, record) for target in record_targets(record, source)]
    return out



def askcq_examples(records: list[dict], tokenizer, cfg: SpanSeqGenTrainConfig) -> list[tuple[list[int], str, dict]]:
    """AskCQ's clarification-based QA examples (CQDataset.py:186-233 @d8be017, dq_type gold_cq): for each option of
    a record's gold CQ (``gold.cq``, CAmbigNQ's clarification_question), the question revised by it as the release
    writes it (:func:`cqtools.stages.answer.questions.released_revision`: cq answer --mode cq --revised-question
    askcq asks the same) with the record's passages; the targets, that option's answers (``gold.dqs``, aligned
    with the options as CAmbigNQ's clarification_answers are), each alias once (the release draws one a step,
    CQDataset.py:155-156), not lower-cased."""
    from ..records import read_cq
    from ..stages.answer.questions import released_revision

    out = []
    for record in records:
        gold = record.get(GOLD) or {}
        if not gold.get("cq") or not gold.get("dqs"):
            continue
        _, category, options = read_cq(gold["cq"], record.get("id"))
        passages = (record.get("passages") or [])[:cfg.passages]
        for option, dq in zip(options, gold["dqs"]):
            ids = stage.askcq_input(tokenizer, released_revision(record["question"], category, option), passages,
                                    cfg.max_input_tokens)
            out += [(ids, alias.strip(), record) for alias in dict.fromkeys(dq.get("answers") or []) if alias.strip()]
    return out

def seqgen_tokenizer(path: str):
    """The base model's tokenizer with AmbigQA's <SEP> token added (run.py ``tokenizer.add_tokens``)."""
    from transformers import AutoConfig, AutoTokenizer

    if not getattr(AutoConfig.from_pretrained(path), "is_encoder_decoder", False):
        raise InputError(f"{path} is not an encoder-decoder model; SpanSeqGen fine-tunes a seq2seq one (BART)")
    tokenizer = AutoTokenizer.from_pretrained(path)
    tokenizer.add_tokens([stage.SEP])
    return tokenizer


def seqgen_model(path: str, tokenizer):
    """The seq2seq model at ``path``, its embeddings grown for the added token (run.py ``resize_token_embeddings``)."""
    from transformers import AutoModelForSeq2SeqLM

    model = AutoModelForSeq2SeqLM.from_pretrained(path)
    if model.get_input_embeddings().num_embeddings < len(tokenizer):
        model.resize_token_embeddings(len(tokenizer))
    return model


def batch_encoder(tokenizer, target_tokens: int = TARGET_TOKENS):
    """examples -> a padded seq2seq batch (targets cut at ``target_tokens``; labels -100 on padding)."""
    import torch

    pad = tokenizer.pad_token_id

    def encode(items):
        width = max(len(ids) for ids, _, _ in items)
        enc = {"input_ids": torch.tensor([ids + [pad] * (width - len(ids)) for ids, _, _ in items]),
               "attention_mask": torch.tensor([[1] * len(ids) + [0] * (width - len(ids)) for ids, _, _ in items])}
        lab = tokenizer(text_target=[t for _, t, _ in items], truncation=True, max_length=target_tokens,
                        padding=True, return_tensors="pt")
        enc["labels"] = lab.input_ids.masked_fill(lab.attention_mask == 0, -100)
        return enc

    return encode


def fine_tune(cfg: TrainConfig, task: str, examples, target_tokens: int, nothing: str, wrap=None,
              encoder=batch_encoder, dev=None) -> dict:
    """Fine-tune the seq2seq ``cfg.model`` (AmbigQA's <SEP> token added) on ``examples(records, tokenizer)``'s
    (input, target, record) through the shared loop, save it with its report (cq_train.json's ``task``) and
    return the report. ``nothing``: the error when no example is found; ``wrap``: what the loop
    trains around the model (Fusion-in-Decoder's reshaping; the model's own weights are saved), ``encoder``:
    the batches' (:func:`batch_encoder`). ``dev``: (metric, ``scores(cfg, device)`` of the directory saved in
    ``cfg.out``): with ``cfg.dev``, the weights are scored every ``cfg.eval_every`` steps and the best on that
    metric kept (:mod:`.best`); its scores are the report's ``dev``. SpanSeqGen, the QD model (:mod:`.qd`) and FiD
    (:mod:`.fid`) train here."""
    from ..models.resolve import resolve

    set_seed(cfg.seed)
    resolved = resolve(cfg.model)
    tokenizer = seqgen_tokenizer(resolved.path)
    train = examples(load_records(cfg.train, cfg.limit), tokenizer)
    if not train:
        raise InputError(f"{cfg.train}: {nothing}")
    run = start(cfg)
    device = run.device
    model = seqgen_model(resolved.path, tokenizer).to(device)
    encode = encoder(tokenizer, target_tokens)

    def loss_of(net, idx: list[int]):
        return net(**{k: v.to(device) for k, v in encode([train[i] for i in idx]).items()}).loss

    def save():
        os.makedirs(cfg.out, exist_ok=True)
        model.save_pretrained(cfg.out)
        tokenizer.save_pretrained(cfg.out)
        write_report(cfg.out, {"task": task, "config": asdict(cfg)})  # what the stage reads (the report follows)

    per_step = cfg.grad_accum * run.accelerator.num_processes
    total = total_steps(len(train), cfg.batch_size, cfg.epochs, cfg.max_steps, per_step)
    log.info("train %s: %d targets of %d questions, %d steps at most, device %s", task, len(train),
             len({id(r) for _, _, r in train}), total, device)
    keeper, timing = None, {}
    if cfg.dev and dev:
        metric, scores = dev
        every = every_of(cfg.eval_every, len(train), cfg.batch_size * per_step)
        keeper = BestOnDev(model, scoring_saved(run, save, lambda: scores(cfg, device)), metric_key(metric), every,
                           name=f"train {task}")
        timing = {"evaluate_at": eval_steps(every, total), "on_eval": keeper, "keep": (keeper,)}
    state = train_loop(run, wrap(model) if wrap else model, len(train), loss_of, log_every=10, name=f"train {task}",
                       **timing)
    if not run.is_main:
        return {}
    kept = keeper is not None and keeper.restore()
    save()
    report = {"task": task, "config": asdict(cfg), "base_model": resolved.describe(), "device": device,
              "processes": run.accelerator.num_processes, "steps": state.step, "stopped": state.stopped,
              "train_seconds": round(state.seconds(), 1), "peak_rss_mb": round(peak_rss_mb()),
              "train_targets": len(train), "final_loss": state.mean_loss(10) if state.losses else None,
              **dev_report(keeper, dev[0] if dev else "")}
    if cfg.dev and dev:  # the kept weights' scores (no step taken: the base model's)
        report["dev"] = keeper.best_scores() if kept else dev[1](cfg, device)
    write_report(cfg.out, report)
    return report


def train_spanseqgen(cfg: SpanSeqGenTrainConfig) -> dict:
    """Fine-tune SpanSeqGen; returns the report written to ``cfg.out``/cq_train.json. With ``cfg.dev`` the weights
    kept are the best on dev F1_ans, AmbigQA's dev metric (QAData.py:491 @5c8cdb1, chosen at run.py:166-174); with
    ``input_layout`` askcq, the best dev EM of each gold option's answer."""
    if cfg.input_layout == "askcq":
        return fine_tune(cfg, stage.TASK, lambda records, tok: askcq_examples(records, tok, cfg), ASKCQ_TARGET_TOKENS,
                         "no record has a gold CQ with an answer per option (gold.cq, gold.dqs); give records from "
                         "`cq convert cambignq` with passages (`cq retrieve`)", dev=("em", askcq_dev_em))
    return fine_tune(cfg, stage.TASK, lambda records, tok: seqgen_examples(records, tok, cfg), TARGET_TOKENS,
                     "no record has a gold answer (gold.annotations) found in its passages; give records "
                     "from `cq convert ambignq` with passages (`cq retrieve`)", dev=("f1_ans", dev_scores))


def dev_scores(cfg: TrainConfig, device: str, reader_class=None, options=None, task: str = stage.TASK) -> dict:
    """AmbigQA's F1_ans of the saved model on the dev records, read as `cq answer --mode multi` with its reader
    (``reader_class``: SpanSeqGen's by default, FiD's for :mod:`.fid`) reads them."""
    from ..metrics.ambigqa import f1_answer

    model, tokenizer, trained = stage.load_seqgen(cfg.out, device, task)
    reader = (reader_class or stage.SeqGenReader)(model, tokenizer, trained, options or stage.SeqGenOptions(), device,
                                                  cfg.out)
    records = [r for r in load_records(cfg.dev, cfg.dev_limit) if (r.get(GOLD) or {}).get("annotations")]
    if not records:
        return {"f1_ans": None, "n": 0}
    found = reader.read([r["question"] for r in records], [r.get("passages") or [] for r in records], multi=True)
    scores = [f1_answer(r[GOLD]["annotations"], [a["text"] for a in answers]) for r, answers in zip(records, found)]
    return {"f1_ans": sum(scores) / len(scores), "n": len(scores)}


def askcq_dev_em(cfg: TrainConfig, device: str) -> dict:
    """Exact match (SQuAD-normalised) of the answer the saved model generates for the question revised by each
    option of the dev records' gold CQ, against that option's answers (as `cq answer --mode cq` reads)."""
    from ..metrics.normalize import normalize_answer
    from ..records import read_cq
    from ..stages.answer.questions import released_revision

    model, tokenizer, trained = stage.load_seqgen(cfg.out, device)
    reader = stage.SeqGenReader(model, tokenizer, trained, stage.SeqGenOptions(), device, cfg.out)
    jobs = []
    for record in load_records(cfg.dev, cfg.dev_limit):
        gold = record.get(GOLD) or {}
        if gold.get("cq") and gold.get("dqs"):
            _, category, options = read_cq(gold["cq"], record.get("id"))
            jobs += [(released_revision(record["question"], category, option), record.get("passages") or [],
                      {normalize_answer(a) for a in dq.get("answers") or []})
                     for option, dq in zip(options, gold["dqs"])]
    if not jobs:
        return {"em": None, "n": 0}
    read = reader.read([q for q, _, _ in jobs], [ps for _, ps, _ in jobs])
    hits = [bool(got) and normalize_answer(got[0]["text"]) in golds for got, (_, _, golds) in zip(read, jobs)]
    return {"em": sum(hits) / len(hits), "n": len(hits)}
