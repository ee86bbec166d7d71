"""``--task clam``: CLAM's accuracy of the first answer against the intended gold answer, adjusted
for needless clarifying questions (``--lambda``), per ambiguous/unambiguous/all records; ``--curves``:
the cost of clarifying (:mod:`.clam_curves`: a lambda sweep and a risk-coverage curve over the
detector's threshold, from the same rows)."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import InputError
from ..metrics import clam as m_clam
from ..registry import option
from . import clam_curves
from .base import Scored, ScoreOptions, Task
from .reading import answer_texts, gold_of
from .oracle import OraclesSeen, question_of
from .rows import Metric, count, ratio, value
from .study import wilson



@dataclass(frozen=True)
class ClamScoring:
    """accuracy, adjusted accuracy, clarification rate"""

    lam: float = option(0.8, "weight of a correct answer after a needless clarifying question.", min=0, max=1,
                        flag="--lambda")
    curves: bool = option(False, "also report the cost of clarifying: adjusted accuracy at lambda 0, 0.1 .. 1, "
                                 "and accuracy against the share clarified at every threshold of ambiguity.score "
                                 "(a risk-coverage curve); --plot draws both. With meta.usage on the records (stages "
                                 "run with CQ_USAGE=1): LM calls, tokens and seconds per answered question (cost, which is reported without --curves too).")
    direct: str | None = option(None, "--curves: a run of the same records that never asked (the question "
                                      "answered alone); a clarified record's direct answer is read from it by id.",
                                metavar="FILE.jsonl")


# Each group's columns in the row: its records (1 or 0), and their correct, adjusted and asked.
GROUP_COLUMNS = {"ambiguous": ("amb", "amb_correct", "amb_adjusted", "amb_asked"),
                 "unambiguous": ("unamb", "unamb_correct", "unamb_adjusted", "unamb_asked"),
                 "all": ("n", "correct", "adjusted", "asked")}


@dataclass
class ClamTask(Task):
    reads = ("answers",)
    columns = ("n", "amb", "amb_correct", "amb_adjusted", "amb_asked", "correct", "adjusted", "asked",
               "unamb", "unamb_correct", "unamb_adjusted", "unamb_asked",
               # --curves: the detector's score, the answer's correctness on each path (None: no record holds
               # it), and a correct answer to a needlessly clarified question (what lambda weighs)
               "score", "cq_correct", "direct_correct", "needless_correct",
               # --curves: the LM cost noted in meta.usage (summed over stages), and the record's answered flag
               "lm_calls", "lm_prompt_tokens", "lm_generated_tokens", "lm_seconds", "with_usage", "answered",
               # an ambiguous question answered without asking (under-clarification's numerator)
               "amb_unasked")
    direct_answers: dict | None = field(default=None, repr=False)  # --direct: {id: first answer text or None}

    oracles: OraclesSeen = field(default_factory=OraclesSeen)  # meta.oracle of the records: the summary's "oracle"

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
        values = {"n": 1.0, "correct": row["correct"], "adjusted": row["adjusted"], "asked": float(row["asked"]),
                  **self.path_values(record, gold["answers"][intended], row),
                  **clam_curves.usage_values(record, answered=bool(texts)),
                  "amb_unasked": float(row["ambiguous"] and not row["asked"])}
        for group, own in (("ambiguous", row["ambiguous"]), ("unambiguous", not row["ambiguous"])):
            for column, total in zip(GROUP_COLUMNS[group], GROUP_COLUMNS["all"]):
                values[column] = float(own) * values[total]
        return Scored({"id": record["id"], **row}, values, missing=not texts)

    def path_values(self, record, aliases, row) -> dict:
        """The --curves columns of a record: its detector score and its correctness on each path."""
        amb = record.get("ambiguity") if isinstance(record.get("ambiguity"), dict) else {}
        score = amb.get("score") if isinstance(amb.get("score"), (int, float)) else None
        direct = row["correct"] if not row["asked"] else None
        if row["asked"] and self.direct_answers is not None and record["id"] in self.direct_answers:
            text = self.direct_answers[record["id"]]
            direct = m_clam.score_record(aliases, text, False, row["ambiguous"], 1.0)["correct"]
        return {"score": score, "cq_correct": row["correct"] if row["asked"] else None, "direct_correct": direct,
                "needless_correct": row["correct"] if row["asked"] and not row["ambiguous"] else 0.0}

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
        metrics += [*clarification_costs(), value("lambda", self.options.lam), *self.oracles.metrics()]
        if self.options.curves:
            metrics.append(Metric("curves", self.curves, resampled=False))
        if self.options.curves or rows.sum("with_usage"):
            metrics.append(Metric("cost", clam_curves.cost, resampled=False))
        return metrics

    def curves(self, rows) -> dict:
        return {"lambda": clam_curves.lambda_curve(rows),
                "threshold": clam_curves.threshold_curve(rows, self.options.lam)}

    def notes_for(self, rows, values):
        return clam_curves.curve_notes(rows, values.get("curves")) + clam_curves.cost_notes(rows, values.get("cost"))

    def plot(self, path):
        if not self.options.curves:
            raise InputError("--plot for --task clam draws the --curves: add --curves")
        from .plots import clarifying_cost

        curves = self.curves(self.rows())
        clarifying_cost(path, curves["lambda"] or [], curves["threshold"] or [])


def clarification_costs() -> list[Metric]:
    """What clarifying cost (issue 59, item 2): ``over_clarification`` (the share of unambiguous questions asked
    about), ``under_clarification`` (the share of ambiguous ones answered without asking), each with its Wilson
    95% interval over records (``--ci``: a bootstrap over questions), and per question the clarifying questions
    asked and the turns (the questions asked and the answer)."""
    def interval(k: str, n: str):
        return lambda rows: wilson(int(round(rows.sum(k))), int(round(rows.sum(n))))

    return [ratio("over_clarification", "unamb_asked", "unamb"), ratio("under_clarification", "amb_unasked", "amb"),
            Metric("over_clarification_wilson_95", interval("unamb_asked", "unamb"), resampled=False),
            Metric("under_clarification_wilson_95", interval("amb_unasked", "amb"), resampled=False),
            ratio("questions_asked", "asked", "n", percent=False),
            Metric("turns", lambda rows: 1 + rows.sum("asked") / rows.n if rows.n else None)]


def clam_task(options: ClamScoring, config, opts: ScoreOptions) -> Task:
    if options.direct is not None and not options.curves:
        raise InputError("--direct is read by --curves only: add --curves")
    return ClamTask(opts, options, direct_answers=clam_curves.read_direct(options.direct) if options.direct else None)


TASK = ("clam", clam_task, ClamScoring)  # registered by cqtools/score/builtin_methods.py
