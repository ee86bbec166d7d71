"""``--task asqa``: ASQA's long-answer metrics against ``gold.long_answers`` and ``gold.answers``
(ROUGE-L, STR-EM, and with ``--reader`` Disambig-F1 and DR; answer F1 of predicted ``dqs``)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..metrics import asqa as m_asqa
from ..metrics.ambigqa import set_f1
from ..metrics.normalize import safe_div
from ..registry import option
from .base import Scored, ScoreOptions, Task
from .reading import gold_of, pct
from .rows import Metric, mean, ratio, value
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
    columns = ("rouge_l", "str_em", "n_str_em", "answer_f1", "disambig_f1", "n_disambig", "length", "with_dqs")

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
            text = str(record.get("long_answer") or "")
            sets = gold.get("answers") or []
            row = {"id": record["id"],
                   "rouge_l": m_asqa.rouge_lsum(text, gold["long_answers"], self.rouge, self.split_sentences),
                   "str_em": m_asqa.str_em(text, sets, count_empty=self.options.str_em == "asqa")}
            dqs = record.get("dqs")
            if isinstance(dqs, list):
                row["answer_f1"] = set_f1(sets, [d.get("answer") or "" for d in dqs if isinstance(d, dict)])
            if self.reader is not None and sets:
                for dq in gold.get("dqs") or []:
                    questions.append(str(dq["question"]))
                    contexts.append(text)
                    owners.append(len(rows))
            rows.append(row)
        if self.reader is not None:
            self._read(records, rows, questions, contexts, owners)
        return [Scored(row, {"rouge_l": row["rouge_l"], "str_em": row["str_em"] or 0.0,
                             "n_str_em": row["str_em"] is not None, "answer_f1": row.get("answer_f1", 0.0),
                             "disambig_f1": row.get("disambig_f1", 0.0), "n_disambig": "disambig_f1" in row,
                             "length": len(str(record.get("long_answer") or "").split()),
                             "with_dqs": isinstance(record.get("dqs"), list)},
                       missing=record.get("long_answer") is None) for record, row in zip(records, rows)]

    def _read(self, records, rows, questions, contexts, owners) -> None:
        """Disambig-F1 of each row whose record has gold answers: the reader answers the gold
        disambiguated questions from the long answer."""
        answers = self.reader.answer(questions, contexts)
        if answers is None:
            return
        per_row: dict[int, list[str]] = {}
        for owner, answer in zip(owners, answers):
            per_row.setdefault(owner, []).append(answer)
        for i, (record, row) in enumerate(zip(records, rows)):
            sets = gold_of(record).get("answers") or []
            value = m_asqa.disambig_f1(per_row.get(i, []), sets) if sets else None
            if value is not None:
                row["disambig_f1"] = value

    def aggregation(self, rows):
        metrics = [mean("rouge_l", "rouge_l"), ratio("str_em", "str_em", "n_str_em")]
        reader_ok = self.reader is not None and not self.reader.error
        if reader_ok:
            metrics += [ratio("disambig_f1", "disambig_f1", "n_disambig"), Metric("dr", _dr)]
        else:
            metrics += [value("disambig_f1", None), value("dr", None)]
        metrics.append(value("reader", None if self.reader is None else self.reader.name))
        has_dqs = rows.population.sum("with_dqs")
        metrics.append(Metric("answer_f1", lambda r: pct(safe_div(r.sum("answer_f1"), r.n))) if has_dqs
                       else value("answer_f1", None))
        return metrics + [Metric("length", lambda r: safe_div(r.sum("length"), r.n))]

    def notes_for(self, rows, values):
        notes = []
        if self.reader is None:
            notes.append("disambig_f1/dr: need a reading-comprehension model; pass --reader MODEL "
                         "(ASQA used a RoBERTa-large SQuAD 2.0 reader)")
        elif self.reader.error:
            notes.append(f"disambig_f1/dr: {self.reader.error}")
        elif self.reader.generative is not None:
            notes.append(f"disambig_f1/dr: read by {self.reader.name}, {self.reader.kind}: not the "
                         f"papers' RoBERTa-large SQuAD 2.0 reader, so not comparable with their D-F1/DR")
        if not rows.population.sum("with_dqs"):
            notes.append("answer_f1: no record has predicted question-answer pairs ('dqs')")
        return notes


def _dr(rows) -> float | None:
    """DR: the geometric mean of Disambig-F1 and ROUGE-L."""
    n_disambig = rows.sum("n_disambig")
    disambig = pct(rows.sum("disambig_f1") / n_disambig) if n_disambig else None
    return m_asqa.dr_score(disambig, pct(rows.sum("rouge_l") / rows.n) if rows.n else None)


def asqa_task(options: ASQAScoring, config, opts: ScoreOptions) -> Task:
    return ASQATask(opts, options, config)


TASK = ("asqa", asqa_task, ASQAScoring)  # registered by cqtools/score/builtin_methods.py
