"""``--task cq``: a generated clarifying question against ``gold.cq`` (BLEU, BERTScore, category
EM and BLEU-1, options P/R/F1; ``--plot``: options per CQ)."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ..metrics import cq as m_cq
from ..metrics.bleu import BleuStats
from ..metrics.normalize import safe_div
from ..registry import SCORE_TASKS
from . import plots
from .base import ScoreOptions, Task, gold_of, pct
from .bertscore import BertScore


@dataclass
class CQTask(Task):
    variant_keys = ("cq_parser", "matcher")

    bleu: BleuStats = field(default_factory=lambda: BleuStats(4))
    category_bleu: BleuStats = field(default_factory=lambda: BleuStats(1))
    sums: Counter = field(default_factory=Counter)
    pred_hist: Counter = field(default_factory=Counter)
    gold_hist: Counter = field(default_factory=Counter)
    bertscore: BertScore | None = None

    def __post_init__(self):
        if self.opts.bertscore_model is not None:
            self.bertscore = BertScore(self.opts.bertscore_model, self.opts.device, self.opts.batch_size,
                                       required=self.opts.bertscore_required)

    def skip_reason(self, record):
        return None if gold_of(record).get("cq") else "no gold CQ (gold.cq)"

    def score_scorable(self, records):
        golds, preds, rows = [], [], []
        for record in records:
            gold_cq = str(gold_of(record)["cq"])
            cq = record.get("cq")
            pred = cq.get("text") if isinstance(cq, dict) else cq
            pred = None if pred is None else str(pred)
            row = m_cq.score_record(gold_cq, pred, self.opts.cq_parser, self.opts.matcher)
            self.n += 1
            self.missing += pred is None
            self.bleu.add(pred or "", [gold_cq])
            self.category_bleu.add(row["category"] or "", [row["gold_category"]])
            for key in ("category_em", "p_sum", "r_sum", "n_pred", "n_gold", "n_options", "n_gold_options"):
                self.sums[key] += row[key]
            self.pred_hist[row["n_options"]] += 1
            self.gold_hist[row["n_gold_options"]] += 1
            golds.append(gold_cq)
            preds.append(pred)
            rows.append({"id": record["id"], **{k: row[k] for k in (
                "category_em", "options_precision", "options_recall", "options_f1", "n_options",
                "n_gold_options", "category")}})
        if self.bertscore is not None:
            values = self.bertscore.f1(preds, golds)
            if values is not None:
                for row, value in zip(rows, values):
                    row["bertscore_f1"] = value
                    self.sums["bertscore"] += value
        return rows

    def metrics(self):
        n = self.n
        p, r, f = m_cq.micro_prf(self.sums["p_sum"], self.sums["r_sum"], self.sums["n_pred"], self.sums["n_gold"])
        out = {"bleu": pct(self.bleu.score())}
        if self.bertscore is None:
            out["bertscore_f1"], out["bertscore_model"] = None, None
            self.notes.append("bertscore: skipped (--no-bertscore)")
        elif self.bertscore.error:
            out["bertscore_f1"], out["bertscore_model"] = None, self.bertscore.name
            self.notes.append(f"bertscore: {self.bertscore.error}")
        else:
            out["bertscore_f1"] = pct(safe_div(self.sums["bertscore"], n)) if n else None
            out["bertscore_model"] = self.bertscore.describe()
        out.update({
            "category_em": pct(safe_div(self.sums["category_em"], n)),
            "category_bleu1": pct(self.category_bleu.score()),
            "options_precision": pct(p), "options_recall": pct(r), "options_f1": pct(f),
            "avg_options": safe_div(self.sums["n_options"], n),
            "avg_gold_options": safe_div(self.sums["n_gold_options"], n),
        })
        return out

    def plot(self, path):
        plots.options_histogram(path, self.pred_hist, self.gold_hist)


@SCORE_TASKS.register("cq", help="BLEU, BERTScore, category, options")
def cq_task(opts: ScoreOptions) -> Task:
    return CQTask(opts)
