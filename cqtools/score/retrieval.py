"""``--task retrieval``: answer coverage AC@k of the retrieved ``passages`` over ``gold.answers``
(``--k`` cut-offs; ``--ac-average`` over records or gold answer clusters), and with ``--qrels``
the standard IR measures nDCG@10, MRR and R@k of the passages' ids (through ir_measures)."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import InputError
from ..metrics import retrieval as m_retrieval
from ..registry import option
from .base import Scored, ScoreOptions, Task
from .reading import gold_of
from .rows import count, ratio


def cutoffs(text: str, where: str = "--k") -> tuple[int, ...]:
    """``"5,10,20"`` as (5, 10, 20): comma-separated integers, each >= 1 (an InputError otherwise)."""
    try:
        ks = tuple(int(k) for k in str(text).split(","))
    except ValueError:
        raise InputError(f"{where}: use comma-separated integers, e.g. 5,10,20,100 (got {text!r})") from None
    if not ks or min(ks) < 1:
        raise InputError(f"{where}: every k must be >= 1 (got {text!r})")
    return ks


def _cutoffs_text(text: str, where: str) -> str:
    """The option's check: ``text`` as given, once :func:`cutoffs` reads it."""
    cutoffs(text, f"{where}: --k")
    return text


@dataclass(frozen=True)
class RetrievalScoring:
    """AC@k; with --qrels nDCG@10, MRR, R@k"""

    ks: str = option("5,10,20,100", "cut-offs of answer coverage AC@k (comma-separated).", flag="--k",
                     check=_cutoffs_text)
    ac_average: str = option("record", "AC@k averaged over records, or over all gold answer clusters (micro; "
                                       "what docs/benchmarks/retrieve.md reports).", choices=("record", "cluster"))
    qrels: str | None = option(None, "TREC qrels ('qid 0 docid relevance'; qid = the record's id, docid = a "
                                     "passages[].id) for nDCG@10, MRR and R@k (--k) through ir_measures.")


def read_qrels(path: str) -> dict[str, dict[str, int]]:
    """A TREC qrels file (``qid iteration docid relevance`` per line) as {qid: {docid: relevance}}."""
    qrels: dict[str, dict[str, int]] = {}
    try:
        with open(path, encoding="utf-8") as fh:
            for number, line in enumerate(fh, start=1):
                fields = line.split()
                if not fields:
                    continue
                try:
                    if len(fields) != 4:
                        raise ValueError
                    qid, _, docid, rel = fields
                    qrels.setdefault(qid, {})[docid] = int(rel)
                except ValueError:
                    raise InputError(f"--qrels {path} line {number}: expected 'qid 0 docid relevance' "
                                     f"(TREC qrels, relevance an integer), got {line.strip()[:80]!r}") from None
    except OSError as err:
        raise InputError(f"--qrels {path}: cannot read it ({err.strerror})") from None
    return qrels


@dataclass
class RetrievalTask(Task):
    reads = ("passages",)
    variant_keys = ("ac_average",)

    qrels: dict | None = None
    qids_seen: set = field(default_factory=set)
    ks: tuple[int, ...] = ()
    ir_names: tuple[str, ...] = ()

    def __post_init__(self):
        self.ks = cutoffs(self.options.ks)
        if self.options.qrels is not None:
            self.qrels = read_qrels(self.options.qrels)
            self.ir_names = tuple(m_retrieval.ir_measure_names(self.ks))

    @property
    def columns(self):
        """AC@k times the record's weight (1, or its gold clusters with --ac-average cluster), the
        weight, and with --qrels whether it is judged and its IR measures (0 when not judged)."""
        ir = () if self.qrels is None else ("judged", *self.ir_names)
        return (*(f"ac@{k}" for k in self.ks), "weight", *ir)

    def skip_reason(self, record):
        return None if gold_of(record).get("answers") else "no gold.answers"

    def score_scorable(self, records):
        rows = []
        for record in records:
            coverage = m_retrieval.answer_coverage(gold_of(record)["answers"], record.get("passages") or [], self.ks)
            rows.append({"id": record["id"], **{f"ac@{k}": v for k, v in coverage.items()}})
        ir = self._ir_measures(records) if self.qrels is not None else {}
        scored = []
        for record, row in zip(records, rows):
            measures = ir.get(str(record["id"]))
            if measures is not None:
                row.update(measures)
            weight = len(gold_of(record)["answers"]) if self.options.ac_average == "cluster" else 1
            values = {**{f"ac@{k}": row[f"ac@{k}"] * weight for k in self.ks}, "weight": weight,
                      "judged": measures is not None,
                      **{name: (measures or {}).get(name, 0.0) for name in self.ir_names}}
            scored.append(Scored(row, values, missing=record.get("passages") is None))
        return scored

    def _ir_measures(self, records) -> dict[str, dict[str, float]]:
        """nDCG@10, MRR, R@k of the records judged in the qrels (their ids are the qids; a qid
        without a relevant document leaves its measures undefined, as in ir_measures)."""
        rankings, judged = {}, {}
        for record in records:
            qid = str(record["id"])
            if any(rel > 0 for rel in self.qrels.get(qid, {}).values()):
                judged[qid] = self.qrels[qid]
                rankings[qid] = [str(p["id"]) if p.get("id") is not None else f"\0unjudged-{rank}"
                                 for rank, p in enumerate(record.get("passages") or [])]
            self.qids_seen.add(qid)
        return m_retrieval.ir_measures_of(judged, rankings, self.ks)

    def aggregation(self, rows):
        metrics = [ratio(f"ac@{k}", f"ac@{k}", "weight") for k in self.ks]
        if self.qrels is not None:
            metrics += [ratio(name, name, "judged") for name in self.ir_names] + [count("judged", "judged")]
        return metrics

    def notes_for(self, rows, values):
        notes = []
        if self.qrels is not None:
            if rows.n > values["judged"]:
                notes.append(f"ndcg@10/mrr/r@k: {rows.n - values['judged']} record(s) left out: --qrels has no "
                             f"relevant document for their id; they are averaged over the 'judged' ones")
            unseen = len(set(self.qrels) - self.qids_seen)
            if unseen and rows.group is None:
                notes.append(f"--qrels judges {unseen} query id(s) absent from the input (not scored)")
        return notes


def retrieval_task(options: RetrievalScoring, config, opts: ScoreOptions) -> Task:
    return RetrievalTask(opts, options)


TASK = ("retrieval", retrieval_task, RetrievalScoring)  # registered by cqtools/score/builtin_methods.py
