"""Ambiguity detection (AskCQ Task 1, CLAM): *ambiguous* is the positive class."""
from __future__ import annotations

from typing import Sequence

from .normalize import f1, safe_div


def confusion(gold: Sequence[bool], pred: Sequence[bool]) -> dict:
    """Accuracy, precision, recall, F1, TPR and TNR in [0, 1] (0 where undefined)."""
    tp = sum(g and p for g, p in zip(gold, pred))
    fp = sum((not g) and p for g, p in zip(gold, pred))
    fn = sum(g and not p for g, p in zip(gold, pred))
    tn = sum((not g) and not p for g, p in zip(gold, pred))
    precision = safe_div(tp, tp + fp)
    recall = safe_div(tp, tp + fn)
    return {
        "accuracy": safe_div(tp + tn, len(gold)),
        "precision": precision,
        "recall": recall,
        "f1": f1(precision, recall),
        "tpr": recall,
        "tnr": safe_div(tn, tn + fp),
        "tp": tp, "fp": fp, "fn": fn, "tn": tn,
    }


def fill_missing(gold: Sequence[bool], scores: Sequence[float | None]) -> list[float] | None:
    """``scores`` with each missing (None) one set to the worst value for its record: below every
    known score for an ambiguous record, above them for an unambiguous one (a missing prediction is
    a wrong one). None when no score is known."""
    known = [s for s in scores if s is not None]
    if not known:
        return None
    low, high = min(known) - 1.0, max(known) + 1.0
    return [s if s is not None else (low if g else high) for s, g in zip(scores, gold)]


def auroc(gold: Sequence[bool], scores: Sequence[float]) -> float | None:
    """Area under the ROC curve = P(score of a positive > score of a negative), ties count 1/2.

    None when one class is absent (the area is undefined).
    """
    pos = sum(1 for g in gold if g)
    neg = len(gold) - pos
    if pos == 0 or neg == 0:
        return None
    # Mann-Whitney U with average ranks for ties.
    order = sorted(range(len(scores)), key=lambda i: scores[i])
    ranks = [0.0] * len(scores)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and scores[order[j + 1]] == scores[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    rank_sum = sum(r for r, g in zip(ranks, gold) if g)
    return (rank_sum - pos * (pos + 1) / 2) / (pos * neg)


def _counts(gold: Sequence[bool], scores: Sequence[float]) -> list[tuple[float | None, int, int]]:
    """(threshold, tp, fp) when predicting ambiguous for score >= threshold, for every distinct
    score high to low, preceded by (None, 0, 0): nothing predicted ambiguous."""
    pairs = sorted(zip(scores, gold), key=lambda x: -x[0])
    out: list[tuple[float | None, int, int]] = [(None, 0, 0)]
    tp = fp = 0
    for i, (score, g) in enumerate(pairs):
        tp += bool(g)
        fp += not g
        if i + 1 == len(pairs) or pairs[i + 1][0] != score:
            out.append((score, tp, fp))
    return out


def sweep(gold: Sequence[bool], scores: Sequence[float]) -> dict:
    """The thresholds that maximise F1 and accuracy under `cq detect`'s rule, predict ambiguous
    when score > t (so ``cq detect --threshold t`` reproduces them): each candidate is a score seen
    in the data (the next one below a cut), or 1 below the lowest to predict every record
    ambiguous; ties go to the higher threshold. None when there is nothing to sweep."""
    pos = sum(1 for g in gold if g)
    neg = len(gold) - pos
    best = {"f1": (-1.0, None), "accuracy": (-1.0, None)}
    cuts = _counts(gold, scores)[1:]
    for i, (_, tp, fp) in enumerate(cuts):
        # the records scoring >= this cut are exactly those scoring > the next cut's score
        t = cuts[i + 1][0] if i + 1 < len(cuts) else cuts[i][0] - 1.0
        values = {"f1": f1(safe_div(tp, tp + fp), safe_div(tp, pos)),
                  "accuracy": safe_div(tp + neg - fp, len(gold))}
        for key, value in values.items():
            if value > best[key][0]:
                best[key] = (value, t)
    return {
        "best_f1": best["f1"][0] if best["f1"][1] is not None else None,
        "best_f1_threshold": best["f1"][1],
        "best_accuracy": best["accuracy"][0] if best["accuracy"][1] is not None else None,
        "best_accuracy_threshold": best["accuracy"][1],
    }


def roc_points(gold: Sequence[bool], scores: Sequence[float]) -> list[tuple[float, float]]:
    """(FPR, TPR) from the strictest threshold to the loosest, starting at (0, 0)."""
    pos = sum(1 for g in gold if g)
    neg = len(gold) - pos
    return [(safe_div(fp, neg), safe_div(tp, pos)) for _, tp, fp in _counts(gold, scores)]


def pr_points(gold: Sequence[bool], scores: Sequence[float]) -> list[tuple[float, float]]:
    """(recall, precision) for every threshold that predicts something."""
    pos = sum(1 for g in gold if g)
    return [(safe_div(tp, pos), safe_div(tp, tp + fp)) for _, tp, fp in _counts(gold, scores)[1:]]
