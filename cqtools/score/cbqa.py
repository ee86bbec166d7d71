"""``--task cbqa``: answers after clarification against ``gold.answers`` (AskCQ's partial-match
P/R/F1, EM of answers tied to a gold option, answers per question)."""
from __future__ import annotations

from dataclasses import dataclass

from ..metrics import cbqa as m_cbqa
from ..metrics import cq as m_cq
from ..metrics.normalize import safe_div
from ..registry import option
from .base import Scored, ScoreOptions, Task
from .reading import answer_texts, gold_of, matcher_option, pct
from .rows import Metric, count, ratio, value


@dataclass(frozen=True)
class CBQAScoring:
    """partial-match P/R/F1, EM, answers per question"""

    matcher: str = matcher_option()
    unique_answers: str = option("dataset", "avg_unique_answers = distinct answers over the whole input / "
                                            "questions (AskCQ) or the mean of distinct answers per question.",
                                 choices=("dataset", "question"))


SUMMED = ("p_sum", "r_sum", "n_pred", "n_gold", "n_answers", "n_unique_answers")


def _prf(rows) -> tuple:
    return m_cq.micro_prf(rows.sum("p_sum"), rows.sum("r_sum"), rows.sum("n_pred"), rows.sum("n_gold"))


@dataclass
class CBQATask(Task):
    reads = ("answers",)
    variant_keys = ("matcher", "unique_answers")
    columns = (*SUMMED, "em_total", "em_count", "tied")  # tied: some prediction names a gold CQ option

    @property
    def set_columns(self):
        return ("answers",) if self.options.unique_answers == "dataset" else ()  # distinct answers over the set

    def skip_reason(self, record):
        return None if isinstance(gold_of(record).get("answers"), list) else "no gold.answers"

    def score_record(self, record):
        gold = gold_of(record)
        texts = answer_texts(record)
        row = m_cbqa.score_record(gold["answers"], texts or [], self.options.matcher)
        out = {"id": record["id"], **{k: row[k] for k in ("precision", "recall", "f1", "n_answers",
                                                           "n_unique_answers")}}
        ems, tied = [], False
        if gold.get("cq"):
            if texts is None:
                ems = [0] * len(m_cq.parse_cq(str(gold["cq"]))[1])
            else:
                preds = [a for a in record["answers"] if isinstance(a, dict)]
                ems = m_cbqa.exact_matches(str(gold["cq"]), gold["answers"], preds)
                tied = bool(ems)
            if ems:
                out["em"] = sum(ems) / len(ems)
        values = {**{k: row[k] for k in SUMMED}, "em_total": sum(ems), "em_count": len(ems), "tied": tied,
                  "answers": row["unique_answers"]}
        return Scored(out, values, missing=texts is None)

    def aggregation(self, rows):
        tied = rows.population.sum("tied") > 0
        metrics = [Metric(name, lambda r, i=i: pct(_prf(r)[i])) for i, name in enumerate(("precision", "recall", "f1"))]
        metrics += [ratio("em", "em_total", "em_count", empty=0.0) if tied else value("em", None),
                    count("em_n", "em_count") if tied else value("em_n", 0),
                    Metric("avg_answers", lambda r: safe_div(r.sum("n_answers"), r.n))]
        if self.options.unique_answers == "dataset":  # no interval: distinct answers over a resample undercount
            metrics.append(Metric("avg_unique_answers", lambda r: safe_div(r.distinct("answers"), r.n),
                                  resampled=False))
        else:
            metrics.append(Metric("avg_unique_answers", lambda r: safe_div(r.sum("n_unique_answers"), r.n)))
        return metrics

    def notes_for(self, rows, values):
        notes = []
        if not rows.population.sum("tied"):
            notes.append("em: no prediction carries an 'option' tied to a gold CQ (gold.cq)")
        if self.opts.keep_questions and self.options.unique_answers == "dataset" and rows.group is None:
            notes.append("avg_unique_answers: no interval with --unique-answers dataset (distinct answers "
                         "over resampled questions undercount); --unique-answers question has one")
        return notes


def cbqa_task(options: CBQAScoring, config, opts: ScoreOptions) -> Task:
    return CBQATask(opts, options)


TASK = ("cbqa", cbqa_task, CBQAScoring)  # registered by cqtools/score/builtin_methods.py
