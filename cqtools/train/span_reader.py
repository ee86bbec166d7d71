"""``cq train reader``: fine-tune the extractive span reader (:mod:`cqtools.stages.answer.extractive`)
by distant supervision, on CPU.

Input: cq records with ``passages`` (``cq retrieve`` output) and gold answers (``gold.answers`` and
every annotation's aliases). For each question the top ``passages`` passages are searched for a gold
alias (case-insensitive, whole words; the earliest match): the first ``positives`` passages holding
one are trained to point at that span, the first ``negatives`` passages holding none at [CLS]
(SQuAD 2.0's "no answer", which the reader uses as passage relevance). Questions with no
passage holding an answer teach nothing and are skipped (counted in the report).

With ``dq_questions`` each disambiguated question of a record's multipleQAs annotations (AmbigNQ's
qaPairs) is a training question of its own over the same passages, with only its own answers: the
same passage then answers one reading and is "no answer" for another, which teaches the span
model to read the question rather than the passage's most answer-like entity.

Validation is by question id: ``holdout`` records drawn by a seeded shuffle from the ``train`` file
(their ids go into the report), or a separate ``dev`` file; ``more_train`` files add training
records only (e.g. AmbigNQ train or NQ-open with passages), minus any held-out id or question.
The validation score is single-answer EM / F1 (max over the gold aliases) of the reader over each
held-out record's top ``eval_passages`` passages; every held-out record counts, one whose passages
hold no answer included. The model saved is the last one, or with ``keep="best"`` the one with the best validation
EM (ties: F1) among the evaluations every ``eval_every`` steps (default once per epoch) and at the last step
(:mod:`.best`; the report's ``best`` names it).

The model directory (``AutoModelForQuestionAnswering`` + tokenizer + cq_train.json) is what
``cq answer --reader extractive --model DIR`` loads.
"""
from __future__ import annotations

from typing import ClassVar

import logging
import os
import re
from dataclasses import asdict, dataclass

from ..config import RunConfig
from ..errors import InputError, ResourceError
from ..models.load import set_seed
from ..models.roles import ENCODER
from ..records import GOLD, PASSAGES
from ..stages.answer.extractive import (ExtractiveOptions, ExtractiveReader, attach_head, context_of,
                                        save_head)
from ..registry import option
from .best import BestOnDev, eval_steps, every_of
from .settings import BATCH_HELP
from .span_selection import held_answers, loss_function
from .loop import (TrainConfig, decoded_batch, load_records, peak_rss_mb, split_holdout, start, total_steps, train_loop,
                   write_report)

log = logging.getLogger("cqtools")


@dataclass
class ReaderTrainConfig(TrainConfig):
    """Train the extractive span reader by distant supervision (gold aliases found in passages).

    Each training question's first passage holding a gold alias is trained to that span, its
    top passages holding none to "no answer" ([CLS]). Reports single-answer EM/F1 on the held-out
    (or --dev) records; the directory is what `cq answer --reader extractive` loads.

    \b
    Example:
      cq retrieve --index idx --hits 10 < dev.jsonl > dev.ret.jsonl
      cq retrieve --index idx --hits 10 < train.jsonl > train.ret.jsonl
      cq train reader --train dev.ret.jsonl --holdout 300 --more-train train.ret.jsonl \\
        --out models/reader --max-seconds 1200
      cq retrieve --index idx --hits 10 < questions.jsonl \\
        | cq answer --reader extractive --model models/reader --mode multi
    """

    command: ClassVar[str] = "reader"
    run: ClassVar[str] = "cqtools.train.span_reader:train_reader"
    base_model: ClassVar[tuple] = ("train-reader", ENCODER, "Encoder to put the span head on.")
    train_help: ClassVar[str] = ("Records with passages (`cq retrieve` output) and gold answers; --holdout draws from "
                                 "these.")
    dev_help: ClassVar[str] = "Validation records with passages (or use --holdout)."
    printed: ClassVar[tuple] = ("steps", "stopped", "train_seconds", "train_records", "examples", "first_loss",
                                "last_loss", "validation")

    holdout: int | None = option(None, "Validate on N --train records held out by a seeded draw (by question id; "
                                       "ids in cq_train.json).", min=1, metavar="N")
    more_train: tuple = option((), "Further training records with passages (e.g. AmbigNQ train or NQ-open); never "
                                   "held out, and held-out ids / questions are dropped from them. Repeatable.",
                               metavar="PATH")
    epochs: int = option(1, min=1)
    batch_size: int = option(16, BATCH_HELP, min=1)
    passages: int = option(10, "Top passages searched for a gold answer per training question.", min=1)
    positives: int = option(1, "Passages holding an answer trained per question (their first match is the target "
                               "span).", min=1)
    negatives: int = option(1, "Top passages holding no answer trained per question (target: [CLS], \"no "
                               "answer\").", min=0)
    unseen: str | None = option(None, "Records (cq retrieve output) never trained on, as --dev's are: their ids and "
                                      "questions are dropped from training, and no training span is one of their "
                                      "gold answers in one of their own top --passages passages.", metavar="FILE")
    selection_head: bool = option(False, "Also learn a passage-selection head (DPR's reader): a score per passage "
                                          "from [CLS], trained so a passage holding the answer outscores the "
                                          "question's others; cq answer --span-order select reads by it.",
                                  flag="--selection-head/--no-selection-head")
    dq_questions: bool = option(False, "Also train each disambiguated question of a record's multipleQAs "
                                       "annotations as its own question, over the same passages, with only its own "
                                       "answers.", flag="--dq-questions/--no-dq-questions")
    max_length: int = option(256, "Tokens per (question, passage) input; cq answer reuses the value saved with the "
                                  "model.", min=16)
    max_answer_tokens: int = option(10, "Longest answer span the reader returns (saved with the model).", min=1)
    eval_passages: int = option(3, "Passages read per validation question (cq answer --passages).", min=1)
    eval_every: int | None = option(None, "Also score validation every N steps (history; with --keep best, default "
                                          "once per epoch).", min=1)
    keep: str = option("last", "The weights saved: the last step's, or (best) those of the validation with the "
                               "best EM (ties: F1), scored every --eval-every steps and at the last.",
                       choices=("last", "best"))


# --- distant supervision ---------------------------------------------------------------------------

def gold_aliases(record: dict) -> list[str]:
    """Every gold answer string of a record: ``gold.answers`` clusters, then each annotation's."""
    gold = record.get(GOLD) or {}
    out: list[str] = []
    for cluster in gold.get("answers") or []:
        out += list(cluster)
    for ann in gold.get("annotations") or []:
        out += list(ann.get("answer") or [])
        for pair in ann.get("qaPairs") or []:
            out += list(pair.get("answer") or [])
    seen, keep = set(), []
    for alias in out:
        alias = str(alias).strip()
        if alias and alias.lower() not in seen:
            seen.add(alias.lower())
            keep.append(alias)
    return keep


def find_answer(aliases: list[str], context: str) -> tuple[int, int] | None:
    """(start, end) characters of the earliest whole-word, case-insensitive alias match in
    ``context`` (ties: the longest), or None."""
    best = None
    for alias in aliases:
        m = re.search(r"(?<!\w)" + re.escape(alias) + r"(?!\w)", context, flags=re.IGNORECASE)
        if m and (best is None or (m.start(), -m.end()) < (best[0], -best[1])):
            best = (m.start(), m.end())
    return best


def encode_example(tokenizer, question: str, context: str, span: tuple[int, int] | None, max_length: int):
    """Token ids and (start, end) token targets; (0, 0) is [CLS] ("no answer"). None when the span
    falls outside the truncated passage."""
    enc = tokenizer(question.strip(), context, truncation="only_second", max_length=max_length,
                    return_offsets_mapping=True)
    target = (0, 0)
    if span is not None:
        ids = enc.sequence_ids()
        ctx = [i for i, s in enumerate(ids) if s == 1]
        offsets = enc["offset_mapping"]
        starts = [i for i in ctx if offsets[i][1] > span[0]]
        ends = [i for i in ctx if offsets[i][0] < span[1]]
        if not ctx or not starts or not ends or offsets[ctx[-1]][1] < span[1] or ends[-1] < starts[0]:
            return None
        target = (starts[0], ends[-1])
    features = {k: enc[k] for k in ("input_ids", "attention_mask", "token_type_ids") if k in enc}
    return features, target


def training_questions(record: dict, dq_questions: bool) -> list[tuple[str, list[str]]]:
    """(question, gold aliases) pairs a record teaches: the question with every gold alias, then with
    ``dq_questions`` each distinct multipleQAs DQ with its own aliases."""
    out = [(record["question"], gold_aliases(record))]
    if dq_questions:
        seen = {record["question"].strip().lower()}
        for ann in (record.get(GOLD) or {}).get("annotations") or []:
            for pair in ann.get("qaPairs") or []:
                question = str(pair.get("question") or "").strip()
                aliases = [str(a).strip() for a in pair.get("answer") or [] if str(a).strip()]
                if question and aliases and question.lower() not in seen:
                    seen.add(question.lower())
                    out.append((question, aliases))
    return out


def examples_of(records: list[dict], tokenizer, cfg: ReaderTrainConfig,
                blocked: dict[str, set[str]] | None = None) -> tuple[list[list[tuple]], dict]:
    """The training groups of ``records``, one per training question: its positive examples (features,
    (start, end)) then its negatives, and counts for the report. A positive span that ``blocked`` (passage id
    -> normalised answers of held-out records, :func:`held_answers`) names for its passage is left out."""
    from ..metrics.normalize import normalize_answer

    blocked = blocked or {}
    out: list[list[tuple]] = []
    counts = {"questions": len(records), "questions_used": 0, "without_passages": 0, "positive": 0, "negative": 0,
              "held_out_answers_skipped": 0}
    if cfg.dq_questions:
        counts.update(dq_questions=0, dq_questions_used=0)
    for record in records:
        passages = (record.get(PASSAGES) or [])[:cfg.passages]
        if not passages:
            counts["without_passages"] += 1
            continue
        contexts = [context_of(p) for p in passages]
        for n, (question, aliases) in enumerate(training_questions(record, cfg.dq_questions)):
            pos, neg = [], []
            for passage, context in zip(passages, contexts):
                span = find_answer(aliases, context)
                if span is not None and normalize_answer(context[span[0]:span[1]]) in blocked.get(
                        str(passage.get("id")), ()):
                    counts["held_out_answers_skipped"] += 1
                elif span is not None and len(pos) < cfg.positives:
                    example = encode_example(tokenizer, question, context, span, cfg.max_length)
                    if example is not None:
                        pos.append(example)
                elif span is None and len(neg) < cfg.negatives:
                    neg.append(encode_example(tokenizer, question, context, None, cfg.max_length))
            if n:
                counts["dq_questions"] += 1
            if pos:
                counts["dq_questions_used" if n else "questions_used"] += 1
                counts["positive"] += len(pos)
                counts["negative"] += len(neg)
                out.append(pos + neg)
    return out, counts


# --- validation ------------------------------------------------------------------------------------

def validation_scores(reader: ExtractiveReader, records: list[dict], n_passages: int) -> dict:
    """Single-answer EM / F1 (max over aliases, in %) of ``reader`` on ``records``; a record without
    an answer scores 0. ``answer_in_passages``: records whose top passages hold a gold alias."""
    from ..metrics.normalize import normalize_answer, token_f1

    questions = [r["question"] for r in records]
    found = reader.read(questions, [r.get(PASSAGES) or [] for r in records])
    em = f1 = reachable = 0.0
    for record, answers in zip(records, found):
        aliases = gold_aliases(record)
        pred = answers[0]["text"] if answers else ""
        if pred:
            em += max((normalize_answer(pred) == normalize_answer(a) for a in aliases), default=False)
            f1 += max((token_f1(a, pred) for a in aliases), default=0.0)
        contexts = [context_of(p) for p in (record.get(PASSAGES) or [])[:n_passages]]
        reachable += any(find_answer(aliases, c) for c in contexts)
    n = max(1, len(records))
    return {"em": round(100 * em / n, 2), "f1": round(100 * f1 / n, 2),
            "answer_in_passages": round(100 * reachable / n, 2), "records": len(records)}


# --- training ----------------------------------------------------------------------------------------

def _split(cfg: ReaderTrainConfig) -> tuple[list[dict], list[dict], list[dict]]:
    """(training records, validation records, every record never trained on: validation + --unseen)."""
    if (cfg.dev is None) == (cfg.holdout is None):
        raise InputError("train reader needs either --dev FILE or --holdout N (records held out of --train) "
                         "to report on, not both")
    train = load_records(cfg.train, cfg.limit)
    if cfg.holdout is not None:
        train, dev = split_holdout(train, cfg.holdout, cfg.seed)
    else:
        dev = load_records(cfg.dev, None)
    hidden = dev + (load_records(cfg.unseen, None) if cfg.unseen else [])  # all of --dev, whatever --dev-limit
    dev = dev[:cfg.dev_limit] if cfg.dev_limit else dev
    held_ids = {r.get("id") for r in hidden}
    held_questions = {r["question"].strip().lower() for r in hidden}

    def unseen(records: list[dict]) -> list[dict]:  # --dev records are never trained on, whichever file holds them
        return [r for r in records if r.get("id") not in held_ids and r["question"].strip().lower() not in held_questions]

    held = len(train)
    train = unseen(train)
    if len(train) < held:
        log.info("train reader: %d --train records are --dev or --unseen records; not trained on", held - len(train))
    for path in cfg.more_train:
        train += unseen(load_records(path, cfg.limit))
    if not any(r.get(PASSAGES) for r in train):
        raise InputError(f"{cfg.train}: no training record has passages; run `cq retrieve` on the records first")
    return train, dev, hidden


def _load(cfg: ReaderTrainConfig, device: str, cache_root: str):
    """(resolved base model, fast tokenizer, span model on ``device``); an offline ONNX cross-encoder starts from
    its float copy, its relevance head replaced by the span head (start and end: two labels)."""
    from transformers import AutoModelForQuestionAnswering, AutoTokenizer

    from ..models.onnx_torch import local_dir
    from ..models.resolve import resolve

    resolved = resolve(cfg.model)
    path = local_dir(resolved, cache_root)
    try:
        tokenizer = AutoTokenizer.from_pretrained(path)
        model = AutoModelForQuestionAnswering.from_pretrained(path, num_labels=2).to(device)
    except (OSError, ValueError) as err:
        raise ResourceError(f"cannot load {cfg.model} as an encoder with a span head: {str(err).splitlines()[0]}") \
            from None
    if not tokenizer.is_fast:
        raise ResourceError(f"{cfg.model}: the reader needs a fast tokenizer (span offsets)")
    return resolved, tokenizer, model


def _evaluator(cfg: ReaderTrainConfig, base_model: str, device: str, tokenizer, model, dev: list[dict]):
    """A function scoring ``model`` on the validation records as `cq answer`'s extractive reader reads
    them (the top ``eval_passages``), in eval mode and back to train mode after."""
    options = ExtractiveOptions(n_passages=cfg.eval_passages, max_length=cfg.max_length,
                                max_answer_tokens=cfg.max_answer_tokens,
                                order="select" if cfg.selection_head else "rank")
    info = {"model": cfg.out, "base_model": base_model, "device": device, "dtype": "float32"}

    def evaluate() -> dict:
        model.eval()
        head = getattr(model, "cq_selection", None)
        scores = validation_scores(ExtractiveReader(tokenizer, model, info, options, head=head), dev,
                                   cfg.eval_passages)
        model.train()
        return scores

    return evaluate


def _evaluations(cfg: ReaderTrainConfig, model, evaluate, every: int, total: int) -> tuple:
    """(the :class:`.best.BestOnDev` of --keep best, or None; the loop's evaluation arguments). --keep last: the
    validation scores every --eval-every steps go into the history only (the last step: after training)."""
    if cfg.keep == "best":
        keeper = BestOnDev(model, evaluate, lambda s: (s["em"], s["f1"]), every, name="train reader")
        return keeper, {"evaluate_at": eval_steps(every, total), "on_eval": keeper, "keep": (keeper,)}

    def on_eval(step: int, epoch: int, state) -> bool:  # validation scores in the history; never stops
        history = state.history
        history.append({"step": step, "epoch": epoch, "loss": sum(state.losses[-cfg.eval_every:]) / cfg.eval_every,
                        **evaluate()})
        log.info("step %d (%.0f s): loss %.3f validation EM %.1f F1 %.1f", step, state.seconds(),
                 history[-1]["loss"], history[-1]["em"], history[-1]["f1"])
        return False

    return None, {"evaluate_at": lambda step, _: bool(cfg.eval_every) and step % cfg.eval_every == 0 and step < total,
                  "on_eval": on_eval}


def train_reader(cfg: ReaderTrainConfig) -> dict:
    """Fine-tune the span reader; returns the report written to ``out`` (cq_train.json)."""
    set_seed(cfg.seed)
    train, dev, hidden = _split(cfg)
    run = start(cfg)
    device = run.device
    resolved, tokenizer, model = _load(cfg, device, RunConfig.from_env().cache_root())
    groups, counts = examples_of(train, tokenizer, cfg, held_answers(hidden, cfg.passages, gold_aliases))
    if not groups:
        raise InputError("no training question has a gold answer in its passages (searched the top "
                         f"{cfg.passages}); retrieve more passages (--hits) or raise --passages")
    if cfg.selection_head:
        attach_head(model, device)
        units = groups  # a batch is --batch-size questions, each with all of its passages
    else:
        units = [example for group in groups for example in group]

    per_step = cfg.grad_accum * run.accelerator.num_processes
    total = total_steps(len(units), cfg.batch_size, cfg.epochs, cfg.max_steps, per_step)
    evaluate = _evaluator(cfg, resolved.name, device, tokenizer, model, dev)
    log.info("train reader: %d examples (%d positive) from %d of %d questions; %d validation records; "
             "%d steps at most, device %s", counts["positive"] + counts["negative"], counts["positive"],
             counts["questions_used"], counts["questions"], len(dev), total, device)

    loss_of = loss_function(cfg.selection_head, tokenizer, model, units, device)
    every = every_of(cfg.eval_every, len(units), cfg.batch_size * per_step)
    keeper, timing = _evaluations(cfg, model, evaluate, every, total)
    state = train_loop(run, model, len(units), loss_of, log_every=20, name="train reader", **timing,
                       peek=lambda idx: decoded_batch(tokenizer, tokenizer.pad(
                           [ex[0] for i in idx for ex in (units[i] if cfg.selection_head else [units[i]])],
                           return_tensors="pt")))
    if not run.is_main:
        return {}
    train_seconds = state.seconds()
    final = keeper.best_scores() if keeper is not None and keeper.restore() else evaluate()
    log.info("validation (%d records): EM %.1f F1 %.1f (answer in the top %d passages: %.1f%%)", final["records"],
             final["em"], final["f1"], cfg.eval_passages, final["answer_in_passages"])
    os.makedirs(cfg.out, exist_ok=True)
    if cfg.selection_head:
        save_head(model, cfg.out)
    model.save_pretrained(cfg.out)
    tokenizer.save_pretrained(cfg.out)
    report = {"task": "reader", "config": {**asdict(cfg), "more_train": list(cfg.more_train)},
              "base_model": resolved.describe(), "device": device, "processes": run.accelerator.num_processes,
              "steps": state.step, "stopped": state.stopped, **state.recipe(),
              "train_seconds": round(train_seconds, 1), "peak_rss_mb": round(peak_rss_mb()),
              "train_records": len(train), "examples": counts["positive"] + counts["negative"], "supervision": counts,
              **_loss_summary(state.losses), "validation": final,
              "dev_source": "holdout" if cfg.holdout is not None else "dev",
              "losses": [round(x, 4) for x in state.losses],
              "history": keeper.history if keeper is not None else state.history}
    if keeper is not None:
        report["best"] = keeper.best
    if cfg.holdout is not None:
        report["holdout_ids"] = [r.get("id") for r in dev]
    write_report(cfg.out, report)
    return report


def _loss_summary(losses: list[float]) -> dict:
    """first_loss and last_loss: the mean training loss of the first and last steps (up to 20 each,
    at most half the steps), None without steps."""
    window = max(1, min(20, len(losses) // 2))
    return {"first_loss": round(sum(losses[:window]) / window, 4) if losses else None,
            "last_loss": round(sum(losses[-window:]) / window, 4) if losses else None}
