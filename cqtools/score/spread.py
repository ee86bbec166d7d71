"""How much a score moves between runs that differ in one thing (issue 46, item 5: the same dialogues
answered by two or more simulated users, `cq oracle` with another ``--prompt`` or ``--model``).

``cq score --task T RUN1 RUN2 [RUN3 ...]`` adds ``"spread"``: per metric, every run's value on the
questions all runs score, their range (max - min) and a bootstrap interval of the range, each resample
drawing the same questions for every run (paired, per question; the records `cq oracle --expand`
made from one question are one unit). A range near 0 with an interval near 0 says the score does
not depend on what differs between the runs; a wide one says it must be reported with the score."""
from __future__ import annotations

import numpy as np

from ..errors import InputError
from ..metrics import bootstrap as m_boot
from .settings import BootstrapOptions


def _shared(tasks: list, names: list[str], intersect: bool) -> tuple[list, list[str]]:
    """(the question ids every run scores, in the first run's order; notes)."""
    from .ci import question_positions

    positions = [question_positions(task.rows().unit_ids, name) for task, name in zip(tasks, names)]
    shared = [q for q in positions[0] if all(q in p for p in positions[1:])]
    left_out = [(name, len(p) - len(shared)) for name, p in zip(names, positions) if len(p) > len(shared)]
    if not left_out:
        return shared, []
    what = "; ".join(f"{n} only in {name}" for name, n in left_out)
    if not intersect:
        raise InputError(f"spread: the runs score different question ids ({what}); pass --intersect to compare "
                         f"the {len(shared)} ids all of them score")
    return shared, [f"spread: --intersect: on the {len(shared)} ids every run scores; left out {what}"]


def spread(tasks: list, names: list[str], boot: BootstrapOptions, intersect: bool = False) -> dict:
    """{n, runs, ci, metrics: {metric: {values, min, max, range, low, high}}, notes} of the scored
    ``tasks`` (one per run, same task and options) on the questions all of them score."""
    shared, notes = _shared(tasks, names, intersect)
    if not shared:
        raise InputError("spread: the runs share no scored question id")
    positions = [dict((q, i) for i, q in enumerate(task.rows().unit_ids)) for task in tasks]
    indices = [np.array([p[q] for q in shared], dtype=int) for p in positions]
    statistics = [task.statistic(task.rows()) for task in tasks]

    def per_run(idx) -> list[dict]:
        return [statistic(index[idx]) for statistic, index in zip(statistics, indices)]

    def ranges(idx) -> dict:
        values = per_run(idx)
        out = {}
        for name in values[0]:
            vs = [v.get(name) for v in values]
            out[name] = None if any(x is None for x in vs) else max(vs) - min(vs)
        return out

    everything = np.arange(len(shared))
    runs, point = per_run(everything), ranges(everything)
    intervals = m_boot.bootstrap(ranges, len(shared), point, boot)
    metrics = {}
    for name, iv in intervals.items():
        values = [run[name] for run in runs]
        metrics[name] = {"values": values, "min": min(values), "max": max(values), "range": point[name],
                         "low": iv.low, "high": iv.high}
    return {"n": len(shared), "runs": list(names), "ci": boot.describe(), "metrics": metrics, "notes": notes}
