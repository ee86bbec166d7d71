"""``--task study``: the preferences recorded by ``cq chat --study`` (AskCQ-style human evaluation):
how often the person preferred the clarifying-question presentation, the multiple-answers one, or
neither, with Wilson score intervals (``--ci``: bootstrap intervals over questions instead)."""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import InputError
from .base import Scored, ScoreOptions, Task
from .reading import pct
from .rows import Metric, mean, value

PREFERENCES = ("cq", "answers", "same")
Z95 = 1.959963984540054


def wilson(k: int, n: int, z: float = Z95) -> list[float] | None:
    """The Wilson score interval of the proportion k/n, as percentages; None when n is 0."""
    if not n:
        return None
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return [pct(max(0.0, centre - half)), pct(min(1.0, centre + half))]


def _win_rate(rows):
    decided = rows.sum("prefer_cq") + rows.sum("prefer_answers")
    return pct(rows.sum("prefer_cq") / decided) if decided else None  # ties left out


@dataclass
class StudyTask(Task):
    columns = tuple(f"prefer_{p}" for p in PREFERENCES)

    def skip_reason(self, record):
        study = record.get("study")
        if not isinstance(study, dict):
            return "no 'study' (records from cq chat --study)"
        if study.get("skipped"):
            return f"study question skipped: {study['skipped']}"
        return None

    def score_record(self, record):
        preferred = record["study"].get("preferred")
        if preferred is not None and preferred not in PREFERENCES:
            raise InputError(f"record {record.get('id')}: study.preferred must be one of "
                             f"{', '.join(PREFERENCES)} or null, got {preferred!r}", record_id=record.get("id"))
        return Scored({"id": record["id"], **{f"prefer_{p}": int(preferred == p) for p in PREFERENCES}},
                      missing=preferred is None)

    def aggregation(self, rows):
        counts = {p: int(rows.sum(f"prefer_{p}")) for p in PREFERENCES}
        decided = counts["cq"] + counts["answers"]
        wilson_95 = {**{f"prefer_{p}": wilson(counts[p], rows.n) for p in PREFERENCES},
                     "cq_win_rate": wilson(counts["cq"], decided)}
        return [*(mean(f"prefer_{p}", f"prefer_{p}") for p in PREFERENCES),
                Metric("cq_win_rate", _win_rate), value("counts", counts), value("wilson_95", wilson_95)]

    def notes_for(self, rows, values):
        if rows.n and values["cq_win_rate"] is None:
            return ["cq_win_rate: no question with a preference"]
        return []


@dataclass(frozen=True)
class StudyScoring:
    """preferences of cq chat --study (CQ vs multiple answers)"""


def study_task(options: StudyScoring, config, opts: ScoreOptions) -> Task:
    return StudyTask(opts, options)


TASK = ("study", study_task, StudyScoring)  # registered by cqtools/score/builtin_methods.py
