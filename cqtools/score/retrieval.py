"""``--task retrieval``: answer coverage AC@k of the retrieved ``passages`` over ``gold.answers``
(``--k`` cut-offs; ``--ac-average`` over records or gold answer clusters)."""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import InputError
from ..metrics import retrieval as m_retrieval
from ..registry import SCORE_TASKS
from .base import ScoreOptions, Task, gold_of, pct


@dataclass
class RetrievalTask(Task):
    variant_keys = ("ac_average",)

    coverage: m_retrieval.CoverageMean | None = None

    def __post_init__(self):
        self.coverage = m_retrieval.CoverageMean(self.opts.ks, self.opts.ac_average)

    def skip_reason(self, record):
        return None if gold_of(record).get("answers") else "no gold.answers"

    def score_scorable(self, records):
        rows = []
        for record in records:
            passages = record.get("passages")
            if passages is not None and not (isinstance(passages, list)
                                             and all(isinstance(p, dict) for p in passages)):
                raise InputError(f"record {record['id']}: 'passages' must be a list of {{title, text}} objects "
                                 f"(as `cq retrieve` writes), not {type(passages).__name__}")
            clusters = gold_of(record)["answers"]
            self.n += 1
            self.missing += passages is None
            coverage = m_retrieval.answer_coverage(clusters, passages or [], self.opts.ks)
            self.coverage.add(coverage, len(clusters))
            rows.append({"id": record["id"], **{f"ac@{k}": v for k, v in coverage.items()}})
        return rows

    def metrics(self):
        return {f"ac@{k}": pct(value) for k, value in self.coverage.mean().items()}


@SCORE_TASKS.register("retrieval", help="AC@k")
def retrieval_task(opts: ScoreOptions) -> Task:
    return RetrievalTask(opts)
