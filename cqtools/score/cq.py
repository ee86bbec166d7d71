"""``--task cq``: a generated clarifying question against ``gold.cq`` (BLEU, BERTScore, category
EM and BLEU-1, options P/R/F1; ``--plot``: options per CQ)."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ..metrics import cq as m_cq
from ..metrics.bleu import BleuStats
from ..metrics.normalize import safe_div
from . import plots
from ..registry import option
from .base import DEFAULT_BERTSCORE_MODEL, ScoreOptions, Task, gold_of, matcher_option, pct
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


@dataclass
class CQTask(Task):
    reads = ("cq",)
    variant_keys = ("cq_parser", "matcher")

    bleu: BleuStats = field(default_factory=lambda: BleuStats(4))
    category_bleu: BleuStats = field(default_factory=lambda: BleuStats(1))
    sums: Counter = field(default_factory=Counter)
    pred_hist: Counter = field(default_factory=Counter)
    gold_hist: Counter = field(default_factory=Counter)
    bertscore: BertScore | None = None

    def __post_init__(self):
        if not self.options.no_bertscore:  # a model the user named (not the default) must load
            model = self.options.bertscore_model
            self.bertscore = BertScore(model, self.opts.device, self.opts.batch_size,
                                       required=model != DEFAULT_BERTSCORE_MODEL, config=self.config)

    def skip_reason(self, record):
        return None if gold_of(record).get("cq") else "no gold CQ (gold.cq)"

    def score_scorable(self, records):
        golds, preds, rows = [], [], []
        for record in records:
            gold_cq = str(gold_of(record)["cq"])
            cq = record.get("cq")
            pred = cq.get("text") if isinstance(cq, dict) else cq
            pred = None if pred is None else str(pred)
            row = m_cq.score_record(gold_cq, pred, self.options.cq_parser, self.options.matcher)
            self.n += 1
            self.missing += pred is None
            self.bleu.add(pred or "", [gold_cq])
            self.category_bleu.add(row["category"] or "", [row["gold_category"]])
            for key in SUMMED:
                self.sums[key] += row[key]
            self.pred_hist[row["n_options"]] += 1
            self.gold_hist[row["n_gold_options"]] += 1
            golds.append(gold_cq)
            preds.append(pred)
            if self.opts.keep_questions:
                self.keep(record["id"], self._question_stats(pred or "", gold_cq, row))
            rows.append({"id": record["id"], **{k: row[k] for k in (
                "category_em", "options_precision", "options_recall", "options_f1", "n_options",
                "n_gold_options", "category")}})
        if self.bertscore is not None:
            values = self.bertscore.f1(preds, golds)
            if values is not None:
                for row, value in zip(rows, values):
                    row["bertscore_f1"] = value
                    self.sums["bertscore"] += value
                if self.opts.keep_questions:  # the last len(values) kept questions are this batch's
                    start = len(self.question_stats) - len(values)
                    for i, value in enumerate(values):
                        self.question_stats[start + i] = (*self.question_stats[start + i][:-1], value)
        return rows

    @staticmethod
    def _question_stats(pred: str, gold_cq: str, row: dict) -> tuple:
        """What one question adds to the aggregation (columns in :data:`COLUMNS` order)."""
        bleu, category_bleu = BleuStats(4), BleuStats(1)
        bleu.add(pred, [gold_cq])
        category_bleu.add(row["category"] or "", [row["gold_category"]])
        return (*bleu.matches, *bleu.possible, bleu.hyp_len, bleu.ref_len, *category_bleu.matches,
                *category_bleu.possible, category_bleu.hyp_len, category_bleu.ref_len,
                *(row[k] for k in SUMMED), 0.0)

    def _rates(self, s, n: int, bleu: BleuStats, category_bleu: BleuStats, bertscore: bool) -> dict:
        """The metrics of the sums ``s`` over ``n`` questions, in summary order (bertscore_f1 None
        unless ``bertscore``)."""
        p, r, f = m_cq.micro_prf(s["p_sum"], s["r_sum"], s["n_pred"], s["n_gold"])
        return {
            "bleu": pct(bleu.score()),
            "bertscore_f1": pct(safe_div(s["bertscore"], n)) if bertscore and n else None,
            "category_em": pct(safe_div(s["category_em"], n)),
            "category_bleu1": pct(category_bleu.score()),
            "options_precision": pct(p), "options_recall": pct(r), "options_f1": pct(f),
            "avg_options": safe_div(s["n_options"], n),
            "avg_gold_options": safe_div(s["n_gold_options"], n),
        }

    def _bertscore_ok(self) -> bool:
        return self.bertscore is not None and not self.bertscore.error

    def metrics(self):
        out = self._rates(self.sums, self.n, self.bleu, self.category_bleu, self._bertscore_ok())
        if self.bertscore is None:
            out["bertscore_model"] = None
            self.notes.append("bertscore: skipped (--no-bertscore)")
        elif self.bertscore.error:
            out["bertscore_model"] = self.bertscore.name
            self.notes.append(f"bertscore: {self.bertscore.error}")
        else:
            out["bertscore_model"] = self.bertscore.describe()
        order = ["bleu", "bertscore_f1", "bertscore_model"]
        return {**{k: out[k] for k in order}, **{k: v for k, v in out.items() if k not in order}}

    def resample(self, idx):
        s = self.kept_sums(idx, COLUMNS)
        bleu = BleuStats(4, [s[f"m{n}"] for n in range(1, 5)], [s[f"p{n}"] for n in range(1, 5)],
                         s["hyp_len"], s["ref_len"])
        category_bleu = BleuStats(1, [s["cat_m1"]], [s["cat_p1"]], s["cat_hyp_len"], s["cat_ref_len"])
        return self._rates(s, len(idx), bleu, category_bleu, self._bertscore_ok())

    def plot(self, path):
        plots.options_histogram(path, self.pred_hist, self.gold_hist)


def cq_task(options: CQScoring, config, opts: ScoreOptions) -> Task:
    return CQTask(opts, options, config)


TASK = ("cq", cq_task, CQScoring)  # registered by cqtools/score/builtin_methods.py
