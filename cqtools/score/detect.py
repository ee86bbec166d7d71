"""``--task detect``: ambiguity detection against ``gold.ambiguous`` (accuracy, P/R/F1 with
*ambiguous* positive, AUROC, TPR/TNR; ``--sweep``: the best thresholds; ``--plot``: ROC and PR)."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import InputError
from ..metrics import detect as m_detect
from . import plots
from ..registry import option
from .base import ScoreOptions, Task, gold_of, pct


@dataclass(frozen=True)
class DetectScoring:
    """accuracy, P/R/F1, AUROC"""

    threshold: float | None = option(None, "label = ambiguity.score > T (cq detect's rule) instead of the "
                                           "records' ambiguity.label.")
    sweep: bool = option(False, "also report the thresholds that maximise F1 and accuracy.")


@dataclass
class DetectTask(Task):
    reads = ("ambiguity",)
    gold_labels: list[bool] = field(default_factory=list)
    pred_labels: list[bool] = field(default_factory=list)
    scores: list[float | None] = field(default_factory=list)
    thresholds_seen: set = field(default_factory=set)
    _filled: tuple | None = field(default=None, repr=False)  # resample: (scores, fill_missing(scores))

    def skip_reason(self, record):
        if gold_of(record).get("ambiguous") is None:
            return "gold.ambiguous is unknown"
        return None

    def score_scorable(self, records):
        rows = []
        for record in records:
            gold = bool(gold_of(record)["ambiguous"])
            amb = record.get("ambiguity") if isinstance(record.get("ambiguity"), dict) else {}
            score = amb.get("score")
            score = float(score) if isinstance(score, (int, float)) else None
            if self.options.threshold is not None and score is not None:
                label = score > self.options.threshold  # cq detect's rule
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
            self.keep(record["id"])  # resample reads the lists above
        return rows

    def _rates(self, gold: list[bool], pred: list[bool], scores: list[float] | None) -> dict:
        """The metrics of these labels and scores (``scores`` filled by fill_missing, or None)."""
        m = m_detect.confusion(gold, pred)
        out = {k: pct(m[k]) for k in ("accuracy", "precision", "recall", "f1")}
        out["auroc"] = pct(m_detect.auroc(gold, scores)) if scores else None
        out["tpr"], out["tnr"] = pct(m["tpr"]), pct(m["tnr"])
        return out

    def metrics(self):
        scores = m_detect.fill_missing(self.gold_labels, self.scores)
        out = self._rates(self.gold_labels, self.pred_labels, scores)
        if scores is None:
            self.notes.append("auroc: no record has ambiguity.score")
        elif out["auroc"] is None:
            self.notes.append("auroc: needs both ambiguous and unambiguous gold records")
        if self.options.threshold is not None:
            out["threshold"] = self.options.threshold
        elif len(self.thresholds_seen) == 1:
            out["threshold"] = next(iter(self.thresholds_seen))
        else:
            out["threshold"] = None
            if len(self.thresholds_seen) > 1:
                self.notes.append(f"records carry {len(self.thresholds_seen)} different thresholds")
        out["positives"] = sum(self.gold_labels)
        if self.options.sweep:
            if scores is None:
                self.notes.append("--sweep: no record has ambiguity.score")
            else:
                out.update(self._swept(self.gold_labels, scores))
        return out

    @staticmethod
    def _swept(gold: list[bool], scores: list[float]) -> dict:
        swept = m_detect.sweep(gold, scores)
        return {"best_f1": pct(swept["best_f1"]), "best_f1_threshold": swept["best_f1_threshold"],
                "best_accuracy": pct(swept["best_accuracy"]),
                "best_accuracy_threshold": swept["best_accuracy_threshold"]}

    def resample(self, idx):
        """The rates (and with --sweep the best F1 and accuracy) of the questions ``idx``; the
        thresholds themselves get no interval."""
        gold = [self.gold_labels[i] for i in idx]
        pred = [self.pred_labels[i] for i in idx]
        if self._filled is None or len(self._filled[0]) != len(self.scores):
            self._filled = (self.scores, m_detect.fill_missing(self.gold_labels, self.scores))
        filled = self._filled[1]
        scores = None if filled is None else [filled[i] for i in idx]
        out = self._rates(gold, pred, scores)
        if self.options.sweep and scores is not None:
            swept = self._swept(gold, scores)
            out.update(best_f1=swept["best_f1"], best_accuracy=swept["best_accuracy"])
        return out

    def plot(self, path):
        scores = m_detect.fill_missing(self.gold_labels, self.scores)
        if scores is None:
            raise InputError("--plot needs ambiguity.score on the records (ROC and PR curves)")
        plots.detection_curves(path, self.gold_labels, self.pred_labels, scores)


def detect_task(options: DetectScoring, config, opts: ScoreOptions) -> Task:
    return DetectTask(opts, options)


TASK = ("detect", detect_task, DetectScoring)  # registered by cqtools/score/builtin_methods.py
