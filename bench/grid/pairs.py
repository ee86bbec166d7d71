"""The paired comparisons of the grid's cells: the metrics each is read on, what its n counts, and when it cannot
tell (results.md states them: report.py; the forest plot of the differences draws them: figures.py)."""
from __future__ import annotations

from cqtools.score import ci

# The metrics each paired comparison is read on, by task.
PAIR_METRICS = {
    "detect": [("auroc", "AUROC"), ("accuracy", "accuracy")],
    "cq": [("options_f1", "options F1")],
    "cbqa": [("f1", "F1")],
    "ambigqa": [("f1_ans", "F1 ans (all)")],
    "clam": [("all.adjusted_accuracy", "adjusted accuracy (all)")],
    "asqa": [("disambig_f1", "D-F1"), ("dr", "DR")],
}
UNITS = {"clam": "evaluation records"}  # what a paired comparison's n counts; others: questions
# The fewest shared questions a paired claim is read on (`results --min-paired-n`; `cq score --paired` applies
# the same default). Below it the percentile bootstrap cannot be trusted: with n = 1 every resample is the same
# question (a zero-width interval), and for n < 10 the resampled differences take only a handful of distinct
# values and the interval is too narrow (it covers the spread of the n observed differences, not the uncertainty
# about their mean); ten is also the fewest at which a single question moves a mean difference by at most a tenth
# of its range.
MIN_PAIRED_N = ci.MIN_PAIRED_N


def cannot_tell(metric: dict, n, unit: str, min_n: int) -> str | None:
    """:func:`cqtools.score.ci.cannot_tell` of a pair file's metric (one rule for `cq score --paired` and here)."""
    return ci.cannot_tell(metric.get("low"), metric.get("high"), n, unit, min_n)
