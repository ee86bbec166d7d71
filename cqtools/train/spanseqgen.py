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
askcq``): one answer for the question revised by each option of the gold CQ, over the record's passages reranked
for that revised question as ``cq answer --mode cq --reader seqgen --revised-question askcq`` reranks and reads them
(AskCQ's CQDataset.py:201-213 @d8be017 reranks at training too; ``--reranker none`` keeps the records' order).
"""
from __future__ import annotations

from typing import ClassVar

import itertools
from dataclasses import asdict, dataclass

from ..errors import InputError
from ..metrics.ambigqa import annotation_clusters
from ..records import GOLD
from ..registry import option
from ..stages.answer import seqgen as stage
from .best import dev_report, selection
from .loop import batch_loss, decoded_batch, load_records, log, peak_rss_mb, saver, set_seed, start, train_loop, write_report
from .settings import TrainConfig, patience_option
from ..stages.options import reranker_option
from ..stages.rerank import DEFAULT_RERANKER
from .best import BestOnDev, dev_report, eval_steps, every_of, metric_key, scoring_saved
from .loop import load_records, log, peak_rss_mb, set_seed, start, total_steps, train_loop, write_report
from .settings import TrainConfig

TARGET_TOKENS = 30  # QAData.py:642 @5c8cdb1: answers[:30]
ASKCQ_TARGET_TOKENS = 50  # AskCQ @d8be017 run.py:76 max_target_length = cli.py:111 --max_answer_length (50)
MAX_TARGETS = 100  # QAData.py:648: cnt==100: break (combinations of found aliases per annotation)
BASE_MODEL = "facebook/bart-base"  # cq's default base; AmbigQA's recipe (`--preset ambigqa`) trains BART-large


@dataclass
class SpanSeqGenTrainConfig(TrainConfig):
    """Fine-tune AmbigQA's SpanSeqGen: a seq2seq model generating every answer as one sequence.

    The input is the question and its passages in AmbigQA's layout (records with passages, from
    `cq retrieve`); the targets are the gold answers found in them, joined by <SEP>. With --dev,
    keeps the weights with the best dev F1_ans (scored every --eval-every steps); the directory
    is what `cq answer --reader seqgen` loads.
    --preset ambigqa trains with AmbigQA's recipe (BART-large, batch 24, lr 5e-6, beam 4);
    --preset askcq trains AskCQ's clarification-based QA reader instead (--input-layout askcq:
    the question revised by each gold CQ option -> its answer; read by `cq answer --mode cq
    --reader seqgen --revised-question askcq`).

    \b
    Example:
      cq retrieve --index idx --hits 100 < train.jsonl > train.ret.jsonl
      cq train spanseqgen --train train.ret.jsonl --dev dev.ret.jsonl --out models/seqgen --max-steps 2000
      cq retrieve --index idx --hits 100 < dev.jsonl \\
        | cq answer --reader seqgen --model models/seqgen --mode multi | cq score --task answers
    """

    command: ClassVar[str] = "spanseqgen"
    run: ClassVar[str] = "cqtools.train.spanseqgen:train_spanseqgen"
    base_model: ClassVar[tuple] = ("train-spanseqgen", BASE_MODEL, "Seq2seq model to fine-tune (AmbigQA's: BART-large).")

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
    patience: int | None = patience_option()
    reranker: str = reranker_option(DEFAULT_RERANKER, "With --input-layout askcq: the cross-encoder reranking each "
                                                      "revised question's passages before they are read, at training "
                                                      "and dev (as cq answer --mode cq reranks them; AskCQ's "
                                                      "CQDataset.py:201-213); none: the records' order.")
    rerank_depth: int = option(100, "With --input-layout askcq: passages reranked per revised question (AskCQ: all "
                                    "100 retrieved; cq answer --rerank-depth).", min=1)
    aliases: str = option("each", "With --input-layout askcq: each (every alias of an option's answer an example of "
                                  "its own) or draw (one example per option, its target drawn from the aliases each "
                                  "time it is batched, as AskCQ's CQDataset.py:155-156).", choices=("each", "draw"))


def found_aliases(annotation: dict, source: str) -> list[list[str]]:
    """Per answer cluster of one annotation, its aliases (lower-cased, each once) that occur in ``source``; clusters
    with none found are left out (what SpanSeqGen's and FiD's targets are built from)."""
    found = []
    for cluster in annotation_clusters(annotation):
        aliases = list(dict.fromkeys(a.strip().lower() for a in cluster if a.strip().lower() in source))
        if aliases:
            found.append(aliases)
    return found


def record_targets(record: dict, source: str, limit: int = MAX_TARGETS) -> list[str]:
    """The target sequences of one record whose input decodes to ``source`` (lower-cased text)."""
    out = []
    for annotation in (record.get(GOLD) or {}).get("annotations") or []:
        found = found_aliases(annotation, source)
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



def askcq_questions(records: list[dict], cross_encoder=None, depth: int = 100) -> list[tuple[dict, str, list, dict]]:
    """(record, revised question, its passages, gold DQ) for each option of each record's gold CQ (``gold.cq``,
    CAmbigNQ's clarification_question, its options aligned with ``gold.dqs`` as clarification_answers are), the
    question revised as the release writes it (:func:`cqtools.stages.answer.questions.released_revision`); with
    ``cross_encoder``, the first ``depth`` passages reranked for the revised question (CQDataset.py:201-213, one
    model call; :func:`cqtools.stages.rerank.rerank_lists`, as cq answer --mode cq reranks)."""
    from ..records import read_cq
    from ..stages.answer.questions import released_revision
    from ..stages.rerank import rerank_lists

    out = []
    for record in records:
        gold = record.get(GOLD) or {}
        if gold.get("cq") and gold.get("dqs"):
            _, category, options = read_cq(gold["cq"], record.get("id"))
            out += [(record, released_revision(record["question"], category, option),
                     list(record.get("passages") or []), dq) for option, dq in zip(options, gold["dqs"])]
    if cross_encoder is not None and out:
        lists = rerank_lists(cross_encoder, [q for _, q, _, _ in out], [ps[:depth] for _, _, ps, _ in out], None)
        out = [(record, q, ps, dq) for (record, q, _, dq), ps in zip(out, lists)]
    return out


def askcq_examples(records: list[dict], tokenizer, cfg: SpanSeqGenTrainConfig,
                   cross_encoder=None) -> list[tuple[list[int], str, dict]]:
    """AskCQ's clarification-based QA examples (CQDataset.py:186-233 @d8be017, dq_type gold_cq): for each option of
    a record's gold CQ, the question revised by it with the record's passages (reranked for it by ``cross_encoder``:
    :func:`askcq_questions`); the targets, that option's answers, not lower-cased: each alias once, an example each
    (``cfg.aliases`` each), or all of them on one example, one drawn each time it is batched (draw, as the release's
    random.choice, CQDataset.py:155-156)."""
    out = []
    for record, question, passages, dq in askcq_questions(records, cross_encoder, cfg.rerank_depth):
        ids = stage.askcq_input(tokenizer, question, passages[:cfg.passages], cfg.max_input_tokens)
        aliases = [alias.strip() for alias in dict.fromkeys(dq.get("answers") or []) if alias.strip()]
        if cfg.aliases == "draw":
            out += [(ids, tuple(aliases), record)] if aliases else []
        else:
            out += [(ids, alias, record) for alias in aliases]
    return out


def askcq_reranker(cfg: SpanSeqGenTrainConfig):
    """The cross-encoder of ``cfg.reranker`` (None for "none")."""
    if cfg.reranker == "none":
        return None
    from ..models.load import load_cross_encoder

    return load_cross_encoder(cfg.reranker, cfg.device)

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


def draw_targets(items) -> list[str]:
    """Each example's target: its one (a string: the verifier's examples, :mod:`.verifier`), or one of its list
    drawn uniformly by torch's RNG (DataLoader.py:59-60)."""
    import torch

    return [targets if isinstance(targets, str) else targets[int(torch.randint(len(targets), ()))]
            for _, targets, _ in items]


def batch_encoder(tokenizer, target_tokens: int = TARGET_TOKENS):
    """examples -> a padded seq2seq batch (targets cut at ``target_tokens``; labels -100 on padding)."""
    import torch

    pad = tokenizer.pad_token_id

    def encode(items):
        width = max(len(ids) for ids, _, _ in items)
        enc = {"input_ids": torch.tensor([ids + [pad] * (width - len(ids)) for ids, _, _ in items]),
               "attention_mask": torch.tensor([[1] * len(ids) + [0] * (width - len(ids)) for ids, _, _ in items])}
        lab = tokenizer(text_target=draw_targets(items), truncation=True, max_length=target_tokens,
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

    save = saver(cfg.out, model, tokenizer, {"task": task, "config": asdict(cfg)})
    score = (lambda: dev[1](cfg, device)) if cfg.dev and dev else None
    keeper, timing, total = selection(run, model, len(train), save, score, dev[0] if dev else "", f"train {task}",
                                      getattr(cfg, "patience", None))
    targets = sum(1 if isinstance(t, str) else len(t) for _, t, _ in train)  # FiD's examples hold a question's all
    log.info("train %s: %d targets of %d questions, %d steps at most, device %s", task, targets,
             len({id(r) for _, _, r in train}), total, device)
    state = train_loop(run, wrap(model) if wrap else model, len(train), batch_loss(encode, train, device), log_every=10,
                       name=f"train {task}",
                       peek=lambda idx: decoded_batch(tokenizer, encode([train[i] for i in idx])), **timing)
    if not run.is_main:
        return {}
    kept = keeper is not None and keeper.restore()
    save()
    report = {"task": task, "config": asdict(cfg), "base_model": resolved.describe(), "device": device,
              "processes": run.accelerator.num_processes, "steps": state.step, "stopped": state.stopped,
              "train_seconds": round(state.seconds(), 1), "peak_rss_mb": round(peak_rss_mb()),
              "train_targets": targets, "train_examples": len(train),
              "final_loss": state.mean_loss(10) if state.losses else None, **state.recipe(),
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
        encoder = askcq_reranker(cfg)
        asked = askcq_questions(load_records(cfg.dev, cfg.dev_limit), encoder, cfg.rerank_depth) if cfg.dev else []
        return fine_tune(cfg, stage.TASK, lambda records, tok: askcq_examples(records, tok, cfg, encoder),
                         ASKCQ_TARGET_TOKENS, "no record has a gold CQ with an answer per option (gold.cq, gold.dqs); "
                         "give records from `cq convert cambignq` with passages (`cq retrieve`)",
                         dev=("em", lambda cfg, device: askcq_dev_em(cfg, device, asked)))
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


def askcq_dev_em(cfg: TrainConfig, device: str, asked: list | None = None) -> dict:
    """Exact match (SQuAD-normalised) of the answer the saved model generates for the question revised by each
    option of the dev records' gold CQ, against that option's answers (as `cq answer --mode cq` reads); ``asked``:
    :func:`askcq_questions` of the dev records (their passages reranked once; default: in the records' order)."""
    from ..metrics.normalize import normalize_answer

    model, tokenizer, trained = stage.load_seqgen(cfg.out, device)
    reader = stage.SeqGenReader(model, tokenizer, trained, stage.SeqGenOptions(), device, cfg.out)
    if asked is None:
        asked = askcq_questions(load_records(cfg.dev, cfg.dev_limit))
    jobs = [(question, passages, {normalize_answer(a) for a in dq.get("answers") or []})
            for _, question, passages, dq in asked]
    if not jobs:
        return {"em": None, "n": 0}
    read = reader.read([q for q, _, _ in jobs], [ps for _, ps, _ in jobs])
    hits = [bool(got) and normalize_answer(got[0]["text"]) in golds for got, (_, _, golds) in zip(read, jobs)]
    return {"em": sum(hits) / len(hits), "n": len(hits)}
