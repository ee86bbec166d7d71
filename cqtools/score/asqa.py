"""``--task asqa``: ASQA's long-answer metrics against ``gold.long_answers`` and ``gold.answers``
(ROUGE-L, STR-EM, and with ``--reader`` Disambig-F1 and DR; answer F1 of predicted ``dqs``)."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Callable

from ..metrics import asqa as m_asqa
from ..metrics.ambigqa import set_f1
from ..metrics.normalize import safe_div
from ..registry import option
from .base import ScoreOptions, Task, gold_of, pct
from .reader import DisambigF1Reader
from .tokenizers import sentence_splitter


@dataclass(frozen=True)
class ASQAScoring:
    """ROUGE-L, STR-EM, Disambig-F1, DR"""

    reader: str | None = option(None, "extractive QA model for Disambig-F1 and DR (e.g. "
                                      "deepset/roberta-large-squad2); without it they are null.",
                                env="CQ_MODEL_SCORE_READER")
    str_em: str = option("asqa", "a short answer that normalises to '' counts as found (ASQA's scorer) or is "
                                 "ignored.", choices=("asqa", "cq"))


@dataclass
class ASQATask(Task):
    variant_keys = ("str_em",)

    sums: Counter = field(default_factory=Counter)
    reader: DisambigF1Reader | None = None
    rouge: object = None
    split_sentences: Callable[[str], list[str]] | None = None

    def __post_init__(self):
        from rouge_score import rouge_scorer

        self.rouge = rouge_scorer.RougeScorer(["rougeLsum"], use_stemmer=True)
        self.split_sentences, note = sentence_splitter()
        if note:
            self.notes.append(note)
        self.reader = (DisambigF1Reader(self.options.reader, self.opts.device, self.opts.batch_size, self.config)
                       if self.options.reader else None)

    def skip_reason(self, record):
        return None if gold_of(record).get("long_answers") else "no gold.long_answers (convert ASQA data)"

    def score_scorable(self, records):
        rows, questions, contexts, owners = [], [], [], []
        for record in records:
            gold = gold_of(record)
            long_answer = record.get("long_answer")
            self.n += 1
            self.missing += long_answer is None
            text = str(long_answer or "")
            sets = gold.get("answers") or []
            row = {"id": record["id"],
                   "rouge_l": m_asqa.rouge_lsum(text, gold["long_answers"], self.rouge, self.split_sentences),
                   "str_em": m_asqa.str_em(text, sets, count_empty=self.options.str_em == "asqa")}
            self.sums["rouge_l"] += row["rouge_l"]
            self.sums["length"] += len(text.split())
            if row["str_em"] is not None:
                self.sums["str_em"] += row["str_em"]
                self.sums["n_str_em"] += 1
            dqs = record.get("dqs")
            if isinstance(dqs, list):
                self.sums["with_dqs"] += 1
                row["answer_f1"] = set_f1(sets, [d.get("answer") or "" for d in dqs if isinstance(d, dict)])
                self.sums["answer_f1"] += row["answer_f1"]
            if self.reader is not None and sets:
                for dq in gold.get("dqs") or []:
                    questions.append(str(dq["question"]))
                    contexts.append(text)
                    owners.append(len(rows))
            rows.append(row)
        if self.reader is not None:
            answers = self.reader.answer(questions, contexts)
            if answers is not None:
                per_row: dict[int, list[str]] = {}
                for owner, answer in zip(owners, answers):
                    per_row.setdefault(owner, []).append(answer)
                for i, (record, row) in enumerate(zip(records, rows)):
                    sets = gold_of(record).get("answers") or []
                    value = m_asqa.disambig_f1(per_row.get(i, []), sets) if sets else None
                    if value is not None:
                        row["disambig_f1"] = value
                        self.sums["disambig_f1"] += value
                        self.sums["n_disambig"] += 1
        for record, row in zip(records, rows):
            self.keep(record["id"], (row["rouge_l"], row["str_em"] or 0.0, float(row["str_em"] is not None),
                                     row.get("answer_f1", 0.0), row.get("disambig_f1", 0.0),
                                     float("disambig_f1" in row), len(str(record.get("long_answer") or "").split())))
        return rows

    def _rates(self, s, n: int) -> dict:
        """ROUGE-L, STR-EM, Disambig-F1 and DR (when the reader answered), answer F1 (when some
        record has predicted pairs) and length from the sums ``s`` over ``n`` questions."""
        out = {"rouge_l": pct(safe_div(s["rouge_l"], n)) if n else None,
               "str_em": pct(safe_div(s["str_em"], s["n_str_em"])) if s["n_str_em"] else None}
        if self.reader is not None and not self.reader.error:
            out["disambig_f1"] = pct(safe_div(s["disambig_f1"], s["n_disambig"])) if s["n_disambig"] else None
            out["dr"] = m_asqa.dr_score(out["disambig_f1"], out["rouge_l"])
        if self.sums["with_dqs"]:
            out["answer_f1"] = pct(safe_div(s["answer_f1"], n))
        out["length"] = safe_div(s["length"], n)
        return out

    def resample(self, idx):
        return self._rates(self.kept_sums(idx, ("rouge_l", "str_em", "n_str_em", "answer_f1", "disambig_f1",
                                                "n_disambig", "length")), len(idx))

    def metrics(self):
        s = self.sums
        rates = self._rates(s, self.n)
        out = {"rouge_l": rates["rouge_l"], "str_em": rates["str_em"]}
        if self.reader is None:
            out["disambig_f1"] = out["dr"] = out["reader"] = None
            self.notes.append("disambig_f1/dr: need a reading-comprehension model; pass --reader MODEL "
                              "(ASQA used a RoBERTa-large SQuAD 2.0 reader)")
        elif self.reader.error:
            out["disambig_f1"] = out["dr"] = None
            out["reader"] = self.reader.name
            self.notes.append(f"disambig_f1/dr: {self.reader.error}")
        else:
            out["disambig_f1"], out["dr"] = rates["disambig_f1"], rates["dr"]
            out["reader"] = self.reader.name
            if self.reader.generative is not None:
                self.notes.append(f"disambig_f1/dr: read by {self.reader.name}, {self.reader.kind}: not the "
                                  f"papers' RoBERTa-large SQuAD 2.0 reader, so not comparable with their D-F1/DR")
        if s["with_dqs"]:
            out["answer_f1"] = rates["answer_f1"]
        else:
            out["answer_f1"] = None
            self.notes.append("answer_f1: no record has predicted question-answer pairs ('dqs')")
        out["length"] = rates["length"]
        return out


def asqa_task(options: ASQAScoring, config, opts: ScoreOptions) -> Task:
    return ASQATask(opts, options, config)


TASK = ("asqa", asqa_task, ASQAScoring)  # registered by cqtools/score/builtin_methods.py
