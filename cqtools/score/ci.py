"""``cq score --ci`` and ``--paired``: bootstrap intervals of a scored task's metrics, by
resampling its questions and recomputing the task's own aggregation (:meth:`Task.statistic`),
for the whole input and for each ``--by`` group;
the resampling and the intervals are :mod:`cqtools.metrics.bootstrap`.

The tasks must have been scored with ``ScoreOptions(keep_questions=True)``.
"""
from __future__ import annotations

import numpy as np

from ..errors import InputError
from ..metrics import bootstrap as m_boot
from .base import Task
from .identity import differences, identity
from .rows import Population
from .settings import MIN_PAIRED_N, BootstrapOptions  # noqa: F401 (their home is settings.py: no numpy for cq score --help)


def counted(n, unit: str = "questions") -> str:
    """"1 shared question", "5 shared questions" (``unit`` is plural)."""
    return f"{n} shared {unit[:-1] if n == 1 and unit.endswith('s') else unit}"


def cannot_tell(low, high, n, unit: str = "questions", min_n: int = MIN_PAIRED_N) -> str | None:
    """Why a paired difference is no finding however its interval lies: too few shared questions, or an
    interval of zero width (every resample gave the same difference); None when it can be read."""
    if not isinstance(n, int) or n < min_n:
        return f"cannot tell: {counted(n, unit)}, fewer than {min_n}"
    if low is not None and high is not None and low == high:
        return f"cannot tell: the interval has zero width ({low:+.1f}) on {counted(n, unit)}"
    return None




def _left_out_notes(intervals: dict, n_boot: int) -> list[str]:
    return [f"ci {name}: {n_boot - iv.used} of {n_boot} resamples left out (the metric is undefined on them)"
            for name, iv in intervals.items() if iv.low is not None and iv.used < n_boot]


def _intervals(task: Task, rows: Population, boot: BootstrapOptions) -> tuple[dict, list[str]]:
    """({metric: [low, high]} nested like the summary, notes) of ``rows``' resampled questions."""
    n = len(rows.unit_ids)
    statistic = task.statistic(rows)
    intervals = m_boot.bootstrap(statistic, n, statistic(np.arange(n)), boot)
    notes = _left_out_notes(intervals, boot.n_boot)
    if not n:
        notes.append("ci: no scored questions to resample")
    return m_boot.unflatten({name: [iv.low, iv.high] for name, iv in intervals.items()}), notes


def with_intervals(summary: dict, task: Task, boot: BootstrapOptions) -> dict:
    """``summary`` with ``"ci"`` ({method, level, n_boot, seed, intervals: {metric: [low, high]}},
    intervals nested like the summary's groups) inserted before its notes; each ``--by`` group
    gets ``"ci": {"intervals"}`` of its own questions resampled."""
    notes = summary.pop("notes")
    intervals, more = _intervals(task, task.rows(), boot)
    summary["ci"] = {**boot.describe(), "intervals": intervals}
    for group, body in summary.get("groups", {}).items():
        group_notes = body.pop("notes")
        group_intervals, group_more = _intervals(task, task.rows(group), boot)
        body["ci"] = {"intervals": group_intervals}
        body["notes"] = group_notes + group_more
    summary["notes"] = notes + more
    return summary


def question_positions(ids: list, name: str) -> dict:
    positions = {}
    for i, qid in enumerate(ids):
        if qid in positions:
            raise InputError(f"--paired: question id {qid!r} is scored twice in {name}; pairing needs unique ids")
        positions[qid] = i
    return positions


def _compare(sides: tuple, boot: BootstrapOptions, names: tuple[str, str], intersect: bool) -> dict:
    """{n, missing, metrics, notes} of B - A on the question ids both sides' rows score; ``sides``
    is ((task_a, rows_a), (task_b, rows_b))."""
    (task_a, rows_a), (task_b, rows_b) = sides
    name_a, name_b = names
    pos_a, pos_b = question_positions(rows_a.unit_ids, name_a), question_positions(rows_b.unit_ids, name_b)
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
    idx_a = np.array([pos_a[q] for q in shared], dtype=int)
    idx_b = np.array([pos_b[q] for q in shared], dtype=int)
    stat_a, stat_b = task_a.statistic(rows_a), task_b.statistic(rows_b)
    diffs = m_boot.paired_bootstrap(lambda idx: stat_a(idx_a[idx]), lambda idx: stat_b(idx_b[idx]),
                                    len(shared), boot) if shared else {}
    metrics = {}
    for name, d in diffs.items():
        refused = cannot_tell(d.interval.low, d.interval.high, len(shared))
        metrics[name] = {"a": d.a, "b": d.b, "diff": d.diff, "low": d.interval.low, "high": d.interval.high,
                         "excludes_zero": d.interval.excludes(0.0) and not refused,
                         **({"cannot_tell": refused} if refused else {})}
    notes.extend(_left_out_notes({name: d.interval for name, d in diffs.items()}, boot.n_boot))
    missing = {"a": rows_a.missing, "b": rows_b.missing}
    notes.extend(_missing_notes(missing, {"a": rows_a.n, "b": rows_b.n}, {"a": name_a, "b": name_b}))
    return {"n": len(shared), "missing": missing, "metrics": metrics, "notes": notes}


def paired(task_a: Task, task_b: Task, boot: BootstrapOptions, name_a: str, name_b: str,
           intersect: bool = False) -> dict:
    """A, B and B - A with its paired-bootstrap interval for every metric both define, on the
    question ids both score (all of them must be shared unless ``intersect``); with ``--by``, the
    same per group of A's records, each with B's records of the same ids (``"groups"``). Two sides scored
    by different metric variants (:func:`identity.differences`) are refused."""
    differ = differences(identity(task_a), identity(task_b))
    if differ:
        raise InputError(f"--paired: {name_a} and {name_b} were scored by different metric variants "
                         f"({'; '.join(differ)}); score both the same way (same options and models)")
    whole = _compare(((task_a, task_a.rows()), (task_b, task_b.rows())), boot, (name_a, name_b), intersect)
    if not whole["n"]:
        raise InputError(f"--paired: {name_a} and {name_b} share no scored question id")
    report = {"task": task_a.opts.task, "n": whole["n"], "a": name_a, "b": name_b, "missing": whole["missing"],
              "ci": boot.describe(), "metric": identity(task_a), "metrics": whole["metrics"]}
    if task_a.opts.by:
        report["by"] = task_a.opts.by
        report["groups"] = {group: _paired_group(task_a, task_b, group, boot, (name_a, name_b))
                            for group in sorted(task_a.group_tallies)}
    report["notes"] = whole["notes"]
    return report


def _paired_group(task_a: Task, task_b: Task, group: str, boot: BootstrapOptions, names: tuple[str, str]) -> dict:
    """The paired report of A's ``group``: its records, and B's records with the same ids."""
    rows_a, whole_b = task_a.rows(group), task_b.rows()
    rows_b = whole_b.select(whole_b.positions_of(set(rows_a.record_ids)), group)
    report = _compare(((task_a, rows_a), (task_b, rows_b)), boot, names, intersect=True)
    elsewhere = len(set(rows_b.record_ids) - set(task_b.rows(group).record_ids))
    if elsewhere:
        report["notes"].append(f"{elsewhere} of its record(s) are in another --by group in {names[1]}; "
                               f"the groups are {names[0]}'s")
    if not report["n"]:
        report["notes"].append(f"no question of this group is scored in both {names[0]} and {names[1]}")
    return report

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
