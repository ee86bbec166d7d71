"""``cq score --ci`` and ``--paired``: bootstrap intervals of a scored task's metrics, by
resampling its questions and recomputing the task's own aggregation (:meth:`Task.resample`);
the resampling and the intervals are :mod:`cqtools.metrics.bootstrap`.

The tasks must have been scored with ``ScoreOptions(keep_questions=True)``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from ..metrics import bootstrap as m_boot
from .base import Task


@dataclass(frozen=True)
class BootstrapOptions:
    n_boot: int = 1000
    seed: int = 0
    level: float = 0.95
    method: str = "percentile"

    def describe(self) -> dict:
        return {"method": self.method, "level": self.level, "n_boot": self.n_boot, "seed": self.seed}


def _left_out_notes(intervals: dict, n_boot: int) -> list[str]:
    return [f"ci {name}: {n_boot - iv.used} of {n_boot} resamples left out (the metric is undefined on them)"
            for name, iv in intervals.items() if iv.low is not None and iv.used < n_boot]


def with_intervals(summary: dict, task: Task, boot: BootstrapOptions) -> dict:
    """``summary`` with ``"ci"`` ({method, level, n_boot, seed, intervals: {metric: [low, high]}},
    intervals nested like the summary's groups) inserted before its notes."""
    n = len(task.question_ids)
    point = task.resample(np.arange(n))
    intervals = m_boot.bootstrap(task.resample, n, point, boot.n_boot, boot.seed, boot.level, boot.method)
    notes = summary.pop("notes")
    summary["ci"] = {**boot.describe(),
                     "intervals": m_boot.unflatten({name: [iv.low, iv.high] for name, iv in intervals.items()})}
    notes.extend(_left_out_notes(intervals, boot.n_boot))
    if not n:
        notes.append("ci: no scored questions to resample")
    summary["notes"] = notes
    return summary


def _positions(task: Task, name: str) -> dict:
    positions = {}
    for i, qid in enumerate(task.question_ids):
        if qid in positions:
            raise InputError(f"--paired: question id {qid!r} is scored twice in {name}; pairing needs unique ids")
        positions[qid] = i
    return positions


def paired(task_a: Task, task_b: Task, boot: BootstrapOptions, name_a: str, name_b: str,
           intersect: bool = False) -> dict:
    """A, B and B - A with its paired-bootstrap interval for every metric both define, on the
    question ids both score (all of them must be shared unless ``intersect``)."""
    pos_a, pos_b = _positions(task_a, name_a), _positions(task_b, name_b)
    only_a = [q for q in pos_a if q not in pos_b]
    only_b = [q for q in pos_b if q not in pos_a]
    shared = [q for q in pos_a if q in pos_b]  # A's order
    notes = []
    if only_a or only_b:
        what = "; ".join(f"{len(ids)} only in {name} (e.g. {ids[0]})" for ids, name in
                         ((only_a, name_a), (only_b, name_b)) if ids)
        if not intersect:
            raise InputError(f"--paired: {name_a} and {name_b} score different question ids ({what}); "
                             f"pass --intersect to compare the {len(shared)} ids both score")
        notes.append(f"--intersect: compared on the {len(shared)} ids both score; left out {what}")
    if not shared:
        raise InputError(f"--paired: {name_a} and {name_b} share no scored question id")
    idx_a = np.array([pos_a[q] for q in shared], dtype=int)
    idx_b = np.array([pos_b[q] for q in shared], dtype=int)
    diffs = m_boot.paired_bootstrap(lambda idx: task_a.resample(idx_a[idx]), lambda idx: task_b.resample(idx_b[idx]),
                                    len(shared), boot.n_boot, boot.seed, boot.level, boot.method)
    metrics = {name: {"a": d.a, "b": d.b, "diff": d.diff, "low": d.interval.low, "high": d.interval.high,
                      "excludes_zero": d.interval.excludes(0.0)} for name, d in diffs.items()}
    notes.extend(_left_out_notes({name: d.interval for name, d in diffs.items()}, boot.n_boot))
    missing = {"a": task_a.missing, "b": task_b.missing}
    notes.extend(_missing_notes(missing, {"a": task_a.n, "b": task_b.n}, {"a": name_a, "b": name_b}))
    return {"task": task_a.opts.task, "n": len(shared), "a": name_a, "b": name_b, "missing": missing,
            "ci": boot.describe(), "metrics": metrics, "notes": notes}


def _missing_notes(missing: dict, counts: dict, names: dict) -> list[str]:
    """What the paired report says about records without the prediction (they score 0 on each side)."""
    notes = []
    for side in ("a", "b"):
        if missing[side]:
            whole = " (all of them: its metrics are 0, so each difference restates the other side's score)" \
                if missing[side] >= counts[side] else ""
            notes.append(f"{names[side]}: {missing[side]} of {counts[side]} record(s) lack the prediction and score "
                         f"0{whole}")
    return notes
