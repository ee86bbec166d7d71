"""``--task cq``: a generated clarifying question against ``gold.cq`` (BLEU, BERTScore, category
EM and BLEU-1, options P/R/F1; ``--plot``: options per CQ)."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from ..metrics import cq as m_cq
from ..metrics.bleu import BleuStats
from ..metrics.normalize import safe_div
from . import plots
from ..registry import option
from .base import DEFAULT_BERTSCORE_MODEL, Scored, ScoreOptions, Task
from .reading import gold_of, matcher_option, pct
from .rows import Metric, value
from .bertscore import BertScore


SUMMED = ("category_em", "p_sum", "r_sum", "n_pred", "n_gold", "n_options", "n_gold_options")
# What one question adds to the aggregation (--ci, --paired): its BLEU-4 and category BLEU-1
# statistics, the summed per-record numbers, and its BERTScore F1 (0 without BERTScore).


@dataclass(frozen=True)
class CQScoring:
    """BLEU, BERTScore, category, options"""

    bertscore_model: str = option(DEFAULT_BERTSCORE_MODEL, "BERTScore model (roberta-large, as the papers; "
                                  "offline: sentence-transformers/all-MiniLM-L6-v2).", env="CQ_MODEL_BERTSCORE")
    no_bertscore: bool = option(False, "skip BERTScore (no model is loaded).")
    cq_parser: str = option("askcq", "AskCQ's released CQ parser (splits on ',' and ', or' only, keeps quotes and "
                                     "the category as written) or cq's (also ' or ', unquotes, trims).",
                            choices=("askcq", "cq"))
    matcher: str = matcher_option()


COLUMNS = (*(f"m{n}" for n in range(1, 5)), *(f"p{n}" for n in range(1, 5)), "hyp_len", "ref_len",
           "cat_m1", "cat_p1", "cat_hyp_len", "cat_ref_len", *SUMMED, "bertscore")


def _question_stats(pred: str, gold_cq: str, row: dict) -> tuple:
    """One question's BLEU-4 and category BLEU-1 statistics (the first columns of :data:`COLUMNS`)."""
    bleu, category_bleu = BleuStats(4), BleuStats(1)
    bleu.add(pred, [gold_cq])
    category_bleu.add(row["category"] or "", [row["gold_category"]])
    return (*bleu.matches, *bleu.possible, bleu.hyp_len, bleu.ref_len, *category_bleu.matches,
            *category_bleu.possible, category_bleu.hyp_len, category_bleu.ref_len)


def _bleu(rows) -> float | None:
    return BleuStats(4, [rows.sum(f"m{n}") for n in range(1, 5)], [rows.sum(f"p{n}") for n in range(1, 5)],
                     rows.sum("hyp_len"), rows.sum("ref_len")).score()


def _category_bleu(rows) -> float | None:
    return BleuStats(1, [rows.sum("cat_m1")], [rows.sum("cat_p1")], rows.sum("cat_hyp_len"),
                     rows.sum("cat_ref_len")).score()


def _options(rows) -> tuple:
    return m_cq.micro_prf(rows.sum("p_sum"), rows.sum("r_sum"), rows.sum("n_pred"), rows.sum("n_gold"))


@dataclass
class CQTask(Task):
    reads = ("cq",)
    variant_keys = ("cq_parser", "matcher")
    columns = COLUMNS

    bertscore: BertScore | None = None

    def __post_init__(self):
        if not self.options.no_bertscore:  # a model the user named (not the default) must load
            model = self.options.bertscore_model
            self.bertscore = BertScore(model, self.opts.device, self.opts.batch_size,
                                       required=model != DEFAULT_BERTSCORE_MODEL, config=self.config)

    def skip_reason(self, record):
        return None if gold_of(record).get("cq") else "no gold CQ (gold.cq)"

    def score_scorable(self, records):
        golds, preds, scored = [], [], []
        for record in records:
            gold_cq = str(gold_of(record)["cq"])
            cq = record.get("cq")
            pred = cq.get("text") if isinstance(cq, dict) else cq
            pred = None if pred is None else str(pred)
            row = m_cq.score_record(gold_cq, pred, self.options.cq_parser, self.options.matcher)
            golds.append(gold_cq)
            preds.append(pred)
            values = dict(zip(COLUMNS, (*_question_stats(pred or "", gold_cq, row), *(row[k] for k in SUMMED), 0.0)))
            scored.append(Scored({"id": record["id"], **{k: row[k] for k in (
                "category_em", "options_precision", "options_recall", "options_f1", "n_options",
                "n_gold_options", "category")}}, values, missing=pred is None))
        if self.bertscore is not None:
            values = self.bertscore.f1(preds, golds)
            if values is not None:
                for item, value in zip(scored, values):
                    item.row["bertscore_f1"] = item.values["bertscore"] = value
        return scored

    def _bertscore_ok(self) -> bool:
        return self.bertscore is not None and not self.bertscore.error

    def aggregation(self, rows):
        if self.bertscore is None:
            model = None
        else:
            model = self.bertscore.name if self.bertscore.error else self.bertscore.describe()
        bertscore_ok = self._bertscore_ok()
        return [
            Metric("bleu", lambda r: pct(_bleu(r))),
            Metric("bertscore_f1", lambda r: pct(safe_div(r.sum("bertscore"), r.n)) if bertscore_ok and r.n else None),
            value("bertscore_model", model),
            Metric("category_em", lambda r: pct(safe_div(r.sum("category_em"), r.n))),
            Metric("category_bleu1", lambda r: pct(_category_bleu(r))),
            *(Metric(name, lambda r, i=i: pct(_options(r)[i]))
              for i, name in enumerate(("options_precision", "options_recall", "options_f1"))),
            Metric("avg_options", lambda r: safe_div(r.sum("n_options"), r.n)),
            Metric("avg_gold_options", lambda r: safe_div(r.sum("n_gold_options"), r.n)),
        ]

    def notes_for(self, rows, values):
        if self.bertscore is None:
            return ["bertscore: skipped (--no-bertscore)"]
        return [f"bertscore: {self.bertscore.error}"] if self.bertscore.error else []

    def plot(self, path):
        rows = self.rows()
        plots.options_histogram(path, Counter(int(v) for v in rows.column("n_options").tolist()),
                                Counter(int(v) for v in rows.column("n_gold_options").tolist()))


def cq_task(options: CQScoring, config, opts: ScoreOptions) -> Task:
    return CQTask(opts, options, config)


TASK = ("cq", cq_task, CQScoring)  # registered by cqtools/score/builtin_methods.py
