"""``--task study``: the preferences recorded by ``cq chat --study`` (AskCQ-style human evaluation):
how often the person preferred the clarifying-question presentation, the multiple-answers one, or
neither, with Wilson score intervals (``--ci``: bootstrap intervals over questions instead)."""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import InputError
from .base import ScoreOptions, Task, pct

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


@dataclass
class StudyTask(Task):
    counts: dict | None = None

    def skip_reason(self, record):
        study = record.get("study")
        if not isinstance(study, dict):
            return "no 'study' (records from cq chat --study)"
        if study.get("skipped"):
            return f"study question skipped: {study['skipped']}"
        return None

    def score_scorable(self, records):
        self.counts = self.counts or {p: 0 for p in PREFERENCES}
        rows = []
        for record in records:
            preferred = record["study"].get("preferred")
            if preferred is not None and preferred not in PREFERENCES:
                raise InputError(f"record {record.get('id')}: study.preferred must be one of "
                                 f"{', '.join(PREFERENCES)} or null, got {preferred!r}", record_id=record.get("id"))
            self.n += 1
            if preferred is None:
                self.missing += 1
            else:
                self.counts[preferred] += 1
            row = {"id": record["id"], **{f"prefer_{p}": int(preferred == p) for p in PREFERENCES}}
            rows.append(row)
            self.keep(record["id"], tuple(row[f"prefer_{p}"] for p in PREFERENCES))
        return rows

    def _rates(self, counts: dict, n: float) -> dict:
        out = {f"prefer_{p}": pct(counts[p] / n) if n else None for p in PREFERENCES}
        decided = counts["cq"] + counts["answers"]
        out["cq_win_rate"] = pct(counts["cq"] / decided) if decided else None  # ties left out
        return out

    def metrics(self):
        counts = self.counts or {p: 0 for p in PREFERENCES}
        out = self._rates(counts, self.n)
        out["counts"] = dict(counts)
        decided = counts["cq"] + counts["answers"]
        out["wilson_95"] = {**{f"prefer_{p}": wilson(counts[p], self.n) for p in PREFERENCES},
                            "cq_win_rate": wilson(counts["cq"], decided)}
        if self.n and not decided:
            self.notes.append("cq_win_rate: no question with a preference")
        return out

    def resample(self, idx):
        sums = self.kept_sums(idx, tuple(f"prefer_{p}" for p in PREFERENCES))
        return self._rates({p: sums[f"prefer_{p}"] for p in PREFERENCES}, float(len(idx)))


@dataclass(frozen=True)
class StudyScoring:
    """preferences of cq chat --study (CQ vs multiple answers)"""


def study_task(options: StudyScoring, config, opts: ScoreOptions) -> Task:
    return StudyTask(opts, options)


TASK = ("study", study_task, StudyScoring)  # registered by cqtools/score/builtin_methods.py
