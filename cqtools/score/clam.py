"""``--task clam``: CLAM's accuracy of the first answer against the intended gold answer, adjusted
for needless clarifying questions (``--lambda``), per ambiguous/unambiguous/all records."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import InputError
from ..metrics import clam as m_clam
from ..registry import option
from .base import Scored, ScoreOptions, Task, answer_texts, gold_of
from .rows import count, ratio, value



@dataclass(frozen=True)
class ClamScoring:
    """accuracy, adjusted accuracy, clarification rate"""

    lam: float = option(0.8, "weight of a correct answer after a needless clarifying question.", min=0, max=1,
                        flag="--lambda")


def _oracles_seen():
    from .oracle import OraclesSeen  # oracle.py imports question_of from here

    return OraclesSeen()


# Each group's columns in the row: its records (1 or 0), and their correct, adjusted and asked.
GROUP_COLUMNS = {"ambiguous": ("amb", "amb_correct", "amb_adjusted", "amb_asked"),
                 "unambiguous": ("unamb", "unamb_correct", "unamb_adjusted", "unamb_asked"),
                 "all": ("n", "correct", "adjusted", "asked")}


@dataclass
class ClamTask(Task):
    reads = ("answers",)
    columns = ("n", "amb", "amb_correct", "amb_adjusted", "amb_asked", "correct", "adjusted", "asked",
               "unamb", "unamb_correct", "unamb_adjusted", "unamb_asked")

    oracles: OraclesSeen = field(default_factory=_oracles_seen)  # meta.oracle of the records: the summary's "oracle"

    def skip_reason(self, record):
        gold = gold_of(record)
        if gold.get("ambiguous") is None:
            return "gold.ambiguous is unknown"
        if not gold.get("answers"):
            return "no gold.answers"
        return None

    def score_record(self, record):
        gold = gold_of(record)
        intended = gold.get("intended", 0)
        if not isinstance(intended, int) or not 0 <= intended < len(gold["answers"]):
            raise InputError(f"record {record['id']}: gold.intended must index gold.answers")
        self.oracles.add(record)
        texts = answer_texts(record)
        row = m_clam.score_record(gold["answers"][intended], texts[0] if texts else None,
                                  asked=bool(record.get("cq")), ambiguous=bool(gold["ambiguous"]),
                                  lam=self.options.lam)
        values = {"n": 1.0, "correct": row["correct"], "adjusted": row["adjusted"], "asked": float(row["asked"])}
        for group, own in (("ambiguous", row["ambiguous"]), ("unambiguous", not row["ambiguous"])):
            for column, total in zip(GROUP_COLUMNS[group], GROUP_COLUMNS["all"]):
                values[column] = float(own) * values[total]
        return Scored({"id": record["id"], **row}, values, missing=not texts)

    def unit_of(self, record):
        """One resampling unit per question: the records `cq oracle --expand` made from one question
        (one per intended DQ) are not independent draws, so they are summed and resampled together
        (a cluster bootstrap); intervals per record would be too narrow."""
        return question_of(record)

    def aggregation(self, rows):
        metrics = []
        for group, (n, correct, adjusted, asked) in GROUP_COLUMNS.items():
            metrics += [ratio(f"{group}.accuracy", correct, n), ratio(f"{group}.adjusted_accuracy", adjusted, n),
                        ratio(f"{group}.clarification_rate", asked, n), count(f"{group}.n", n)]
        return metrics + [value("lambda", self.options.lam), *self.oracles.metrics()]


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
