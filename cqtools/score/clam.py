"""``--task clam``: CLAM's accuracy of the first answer against the intended gold answer, adjusted
for needless clarifying questions (``--lambda``), per ambiguous/unambiguous/all records."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import InputError
from ..metrics import clam as m_clam
from ..registry import option
from .base import ScoreOptions, Task, answer_texts, gold_of, pct

GROUPS = ("ambiguous", "unambiguous", "all")
RATES = ("accuracy", "adjusted_accuracy", "clarification_rate")


@dataclass(frozen=True)
class ClamScoring:
    """accuracy, adjusted accuracy, clarification rate"""

    lam: float = option(0.8, "weight of a correct answer after a needless clarifying question.", min=0, max=1,
                        flag="--lambda")


@dataclass
class ClamTask(Task):
    reads = ("answers",)
    groups: dict = field(default_factory=lambda: {g: m_clam.ClamTotals() for g in GROUPS})
    _clusters: dict = field(default_factory=dict, repr=False)  # question id -> its row in question_stats

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
                                      lam=self.options.lam)
            for group in ("ambiguous" if row["ambiguous"] else "unambiguous", "all"):
                self.groups[group].add(row)
            rows.append({"id": record["id"], **row})
            amb = float(row["ambiguous"])
            self.keep_in_cluster(question_of(record), (1.0, amb, amb * row["correct"], amb * row["adjusted"],
                                                       amb * row["asked"], row["correct"], row["adjusted"],
                                                       float(row["asked"])))
        return rows

    def keep_in_cluster(self, question, stats: tuple) -> None:
        """One resampling unit per question: the records `cq oracle --expand` made from one question
        (one per intended DQ) are not independent draws, so their stats are summed and resampled
        together (a cluster bootstrap); intervals per record would be too narrow."""
        if not self.opts.keep_questions:
            return
        at = self._clusters.get(question)
        if at is None:
            self._clusters[question] = len(self.question_ids)
            self.keep(question, stats)
        else:
            self.question_stats[at] = tuple(a + b for a, b in zip(self.question_stats[at], stats))
            self._matrix = None

    @staticmethod
    def _rates(totals: m_clam.ClamTotals) -> dict:
        rates = totals.rates()
        return {**{k: pct(rates[k]) if totals.n else None for k in RATES}, "n": totals.n}

    def metrics(self):
        out = {group: self._rates(totals) for group, totals in self.groups.items()}
        out["lambda"] = self.options.lam
        return out

    def resample(self, idx):
        s = self.kept_sums(idx, ("n", "amb", "amb_correct", "amb_adjusted", "amb_asked", "correct", "adjusted",
                                 "asked"))
        amb = m_clam.ClamTotals(round(s["amb"]), s["amb_correct"], s["amb_adjusted"], round(s["amb_asked"]))
        every = m_clam.ClamTotals(round(s["n"]), s["correct"], s["adjusted"], round(s["asked"]))
        unamb = m_clam.ClamTotals(every.n - amb.n, every.correct - amb.correct, every.adjusted - amb.adjusted,
                                  every.asked - amb.asked)
        return {f"{group}.{k}": v for group, totals in zip(GROUPS, (amb, unamb, every))
                for k, v in self._rates(totals).items() if k != "n"}


def question_of(record: dict):
    """The question a record was expanded from: ``<id>`` of ``<id>#<i>`` when ``gold.intended`` is i
    (`cq oracle --expand`), else the record's own id."""
    record_id, intended = record["id"], gold_of(record).get("intended")
    suffix = f"#{intended}"
    if isinstance(record_id, str) and isinstance(intended, int) and record_id.endswith(suffix):
        return record_id[:-len(suffix)]
    return record_id


def clam_task(options: ClamScoring, config, opts: ScoreOptions) -> Task:
    return ClamTask(opts, options)


TASK = ("clam", clam_task, ClamScoring)  # registered by cqtools/score/builtin_methods.py
