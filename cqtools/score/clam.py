"""``--task clam``: CLAM's accuracy of the first answer against the intended gold answer, adjusted
for needless clarifying questions (``--lambda``), per ambiguous/unambiguous/all records."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import InputError
from ..metrics import clam as m_clam
from ..registry import SCORE_TASKS
from .base import ScoreOptions, Task, answer_texts, gold_of, pct

GROUPS = ("ambiguous", "unambiguous", "all")
RATES = ("accuracy", "adjusted_accuracy", "clarification_rate")


@dataclass
class ClamTask(Task):
    groups: dict = field(default_factory=lambda: {g: m_clam.ClamTotals() for g in GROUPS})

    def skip_reason(self, record):
        gold = gold_of(record)
        if gold.get("ambiguous") is None:
            return "gold.ambiguous is unknown"
        if not gold.get("answers"):
            return "no gold.answers"
        return None

    def score_scorable(self, records):
        rows = []
        for record in records:
            gold = gold_of(record)
            intended = gold.get("intended", 0)
            if not isinstance(intended, int) or not 0 <= intended < len(gold["answers"]):
                raise InputError(f"record {record['id']}: gold.intended must index gold.answers")
            texts = answer_texts(record)
            self.n += 1
            self.missing += not texts
            row = m_clam.score_record(gold["answers"][intended], texts[0] if texts else None,
                                      asked=bool(record.get("cq")), ambiguous=bool(gold["ambiguous"]),
                                      lam=self.opts.lam)
            for group in ("ambiguous" if row["ambiguous"] else "unambiguous", "all"):
                self.groups[group].add(row)
            rows.append({"id": record["id"], **row})
        return rows

    def metrics(self):
        out = {}
        for group, totals in self.groups.items():
            rates = totals.rates()
            out[group] = {**{k: pct(rates[k]) if totals.n else None for k in RATES}, "n": totals.n}
        out["lambda"] = self.opts.lam
        return out


@SCORE_TASKS.register("clam", help="accuracy, adjusted accuracy, clarification rate")
def clam_task(opts: ScoreOptions) -> Task:
    return ClamTask(opts)
