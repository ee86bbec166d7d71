"""``--task cbqa``: answers after clarification against ``gold.answers`` (AskCQ's partial-match
P/R/F1, EM of answers tied to a gold option, answers per question)."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ..metrics import cbqa as m_cbqa
from ..metrics import cq as m_cq
from ..metrics.normalize import safe_div
from ..registry import option
from .base import ScoreOptions, Task, answer_texts, gold_of, matcher_option, pct


@dataclass(frozen=True)
class CBQAScoring:
    """partial-match P/R/F1, EM, answers per question"""

    matcher: str = matcher_option()
    unique_answers: str = option("dataset", "avg_unique_answers = distinct answers over the whole input / "
                                            "questions (AskCQ) or the mean of distinct answers per question.",
                                 choices=("dataset", "question"))


SUMMED = ("p_sum", "r_sum", "n_pred", "n_gold", "n_answers", "n_unique_answers")


@dataclass
class CBQATask(Task):
    reads = ("answers",)
    variant_keys = ("matcher", "unique_answers")

    sums: Counter = field(default_factory=Counter)
    em_total: int = 0
    em_count: int = 0
    tied_seen: bool = False
    distinct: set = field(default_factory=set)  # --unique-answers dataset: every distinct answer seen

    def skip_reason(self, record):
        return None if isinstance(gold_of(record).get("answers"), list) else "no gold.answers"

    def score_scorable(self, records):
        rows = []
        for record in records:
            gold = gold_of(record)
            texts = answer_texts(record)
            self.n += 1
            self.missing += texts is None
            row = m_cbqa.score_record(gold["answers"], texts or [], self.options.matcher)
            if self.options.unique_answers == "dataset":
                self.distinct |= row["unique_answers"]
            for key in SUMMED:
                self.sums[key] += row[key]
            out = {"id": record["id"], **{k: row[k] for k in ("precision", "recall", "f1", "n_answers",
                                                               "n_unique_answers")}}
            if gold.get("cq"):
                if texts is None:
                    ems = [0] * len(m_cq.parse_cq(str(gold["cq"]))[1])
                else:
                    preds = [a for a in record["answers"] if isinstance(a, dict)]
                    ems = m_cbqa.exact_matches(str(gold["cq"]), gold["answers"], preds)
                    self.tied_seen |= bool(ems)
                self.em_total += sum(ems)
                self.em_count += len(ems)
                if ems:
                    out["em"] = sum(ems) / len(ems)
            else:
                ems = []
            self.keep(record["id"], (*(row[k] for k in SUMMED), sum(ems), len(ems)))
            rows.append(out)
        return rows

    def _rates(self, s, n: int, em_total: float, em_count: float, distinct: int) -> dict:
        """P/R/F1, EM (when predictions are tied to gold options) and answers per question of the
        sums ``s`` over ``n`` questions (``distinct``: distinct answers over them)."""
        p, r, f = m_cq.micro_prf(s["p_sum"], s["r_sum"], s["n_pred"], s["n_gold"])
        out = {"precision": pct(p), "recall": pct(r), "f1": pct(f)}
        if self.tied_seen:
            out["em"], out["em_n"] = pct(safe_div(em_total, em_count)), em_count
        else:
            out["em"], out["em_n"] = None, 0
        out["avg_answers"] = safe_div(s["n_answers"], n)
        if self.options.unique_answers == "dataset":
            out["avg_unique_answers"] = safe_div(distinct, n)
        else:
            out["avg_unique_answers"] = safe_div(s["n_unique_answers"], n)
        return out

    def metrics(self):
        if not self.tied_seen:
            self.notes.append("em: no prediction carries an 'option' tied to a gold CQ (gold.cq)")
        if self.opts.keep_questions and self.options.unique_answers == "dataset":
            self.notes.append("avg_unique_answers: no interval with --unique-answers dataset (distinct answers "
                              "over resampled questions undercount); --unique-answers question has one")
        return self._rates(self.sums, self.n, self.em_total, self.em_count, len(self.distinct))

    def resample(self, idx):
        """All but ``em_n`` and, with ``--unique-answers dataset``, ``avg_unique_answers``: distinct
        answers over a resample undercount (a question drawn twice adds no new answer), so its
        bootstrap values would sit below the estimate and give no meaningful interval."""
        s = self.kept_sums(idx, (*SUMMED, "em_total", "em_count"))
        out = self._rates(s, len(idx), s["em_total"], s["em_count"], 0)
        del out["em_n"]
        if self.options.unique_answers == "dataset":
            del out["avg_unique_answers"]
        return out


def cbqa_task(options: CBQAScoring, config, opts: ScoreOptions) -> Task:
    return CBQATask(opts, options)


TASK = ("cbqa", cbqa_task, CBQAScoring)  # registered by cqtools/score/builtin_methods.py
