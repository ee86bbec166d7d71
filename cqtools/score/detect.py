"""``--task detect``: ambiguity detection against ``gold.ambiguous`` (accuracy, P/R/F1 with
*ambiguous* positive, AUROC, TPR/TNR; ``--sweep``: the best thresholds; ``--plot``: ROC and PR)."""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import InputError
from ..metrics import detect as m_detect
from . import plots
from ..registry import option
from .base import Scored, ScoreOptions, Task
from .reading import gold_of, pct
from .rows import Metric, count, value


@dataclass(frozen=True)
class DetectScoring:
    """accuracy, P/R/F1, AUROC"""

    threshold: float | None = option(None, "label = ambiguity.score > T (cq detect's rule) instead of the "
                                           "records' ambiguity.label.")
    sweep: bool = option(False, "also report the thresholds that maximise F1 and accuracy.")


RATES = ("accuracy", "precision", "recall", "f1", "auroc", "tpr", "tnr")


def _labels(rows) -> tuple[list[bool], list[bool]]:
    return rows.column("gold").astype(bool).tolist(), rows.column("label").astype(bool).tolist()


def _filled(rows) -> list[float] | None:
    """The rows' scores, a missing one set to the worst value for its record over the population
    (:func:`cqtools.metrics.detect.fill_missing`); None when no record has a score."""
    def fill(population):
        scores = [None if math.isnan(s) else s for s in population.column("score").tolist()]
        return m_detect.fill_missing(_labels(population)[0], scores)

    filled = rows.population.memo("filled", fill)
    if filled is None or rows is rows.population:
        return filled
    return [filled[i] for i in rows.idx.tolist()]


def _rates(rows) -> dict:
    """Accuracy, P/R/F1, AUROC, TPR and TNR of the rows (ambiguous is the positive class)."""
    gold, pred = _labels(rows)
    scores = _filled(rows)
    m = m_detect.confusion(gold, pred)
    out = {k: pct(m[k]) for k in ("accuracy", "precision", "recall", "f1")}
    out["auroc"] = pct(m_detect.auroc(gold, scores)) if scores else None
    out["tpr"], out["tnr"] = pct(m["tpr"]), pct(m["tnr"])
    return out


def _swept(rows) -> dict:
    swept = m_detect.sweep(_labels(rows)[0], _filled(rows))
    return {"best_f1": pct(swept["best_f1"]), "best_f1_threshold": swept["best_f1_threshold"],
            "best_accuracy": pct(swept["best_accuracy"]),
            "best_accuracy_threshold": swept["best_accuracy_threshold"]}


@dataclass
class DetectTask(Task):
    reads = ("ambiguity",)
    columns = ("gold", "label", "score", "threshold")

    def skip_reason(self, record):
        if gold_of(record).get("ambiguous") is None:
            return "gold.ambiguous is unknown"
        return None

    def score_record(self, record):
        gold = bool(gold_of(record)["ambiguous"])
        amb = record.get("ambiguity") if isinstance(record.get("ambiguity"), dict) else {}
        score = amb.get("score")
        score = float(score) if isinstance(score, (int, float)) else None
        threshold = None
        if self.options.threshold is not None and score is not None:
            label = score > self.options.threshold  # cq detect's rule
        else:
            label = amb.get("label")
            if amb.get("threshold") is not None:
                threshold = float(amb["threshold"])
        missing = label is None
        if missing:
            label, score = (not gold), None  # a missing prediction is a wrong one
        row = {"id": record["id"], "gold": gold, "label": bool(label), "score": score,
               "correct": int(bool(label) == gold)}
        return Scored(row, {"gold": gold, "label": bool(label), "score": score, "threshold": threshold}, missing)

    def _threshold(self, rows):
        """The threshold the labels used: --threshold, or the one the records carry (None if several)."""
        if self.options.threshold is not None:
            return self.options.threshold
        seen = {t for t in rows.column("threshold").tolist() if not math.isnan(t)}
        return next(iter(seen)) if len(seen) == 1 else None

    def aggregation(self, rows):
        metrics = [Metric(name, lambda r, name=name: r.memo("rates", _rates)[name]) for name in RATES]
        metrics += [value("threshold", self._threshold(rows)), count("positives", "gold")]
        if self.options.sweep and _filled(rows) is not None:
            metrics += [Metric(name, lambda r, name=name: r.memo("swept", _swept)[name],
                               resampled=not name.endswith("_threshold"))
                        for name in ("best_f1", "best_f1_threshold", "best_accuracy", "best_accuracy_threshold")]
        return metrics

    def notes_for(self, rows, values):
        notes = []
        if _filled(rows) is None:
            notes.append("auroc: no record has ambiguity.score")
        elif values["auroc"] is None:
            notes.append("auroc: needs both ambiguous and unambiguous gold records")
        seen = {t for t in rows.column("threshold").tolist() if not math.isnan(t)}
        if self.options.threshold is None and len(seen) > 1:
            notes.append(f"records carry {len(seen)} different thresholds")
        if self.options.sweep and _filled(rows) is None:
            notes.append("--sweep: no record has ambiguity.score")
        return notes

    def plot(self, path):
        rows = self.rows()
        scores = _filled(rows)
        if scores is None:
            raise InputError("--plot needs ambiguity.score on the records (ROC and PR curves)")
        plots.detection_curves(path, *_labels(rows), scores)


def detect_task(options: DetectScoring, config, opts: ScoreOptions) -> Task:
    return DetectTask(opts, options)


TASK = ("detect", detect_task, DetectScoring)  # registered by cqtools/score/builtin_methods.py
