"""``--task retrieval``: answer coverage AC@k of the retrieved ``passages`` over ``gold.answers``
(``--k`` cut-offs; ``--ac-average`` over records or gold answer clusters), and with ``--qrels``
the standard IR measures nDCG@10, MRR and R@k of the passages' ids (through ir_measures)."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import InputError
from ..metrics import retrieval as m_retrieval
from ..metrics.normalize import safe_div
from ..registry import option
from .base import ScoreOptions, Task, gold_of, pct


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

    coverage: m_retrieval.CoverageMean | None = None
    qrels: dict | None = None
    ir_sums: dict = field(default_factory=dict)
    judged: int = 0
    qids_seen: set = field(default_factory=set)
    ks: tuple[int, ...] = ()

    def __post_init__(self):
        self.ks = cutoffs(self.options.ks)
        self.coverage = m_retrieval.CoverageMean(self.ks, self.options.ac_average)
        if self.options.qrels is not None:
            self.qrels = read_qrels(self.options.qrels)
            self.ir_names = m_retrieval.ir_measure_names(self.ks)

    def skip_reason(self, record):
        return None if gold_of(record).get("answers") else "no gold.answers"

    def score_scorable(self, records):
        rows = []
        for record in records:
            passages = record.get("passages")  # its shape checked by Task.readable
            clusters = gold_of(record)["answers"]
            self.n += 1
            self.missing += passages is None
            coverage = m_retrieval.answer_coverage(clusters, passages or [], self.ks)
            self.coverage.add(coverage, len(clusters))
            rows.append({"id": record["id"], **{f"ac@{k}": v for k, v in coverage.items()}})
        ir = self._ir_measures(records) if self.qrels is not None else {}
        for record, row in zip(records, rows):
            values = ir.get(str(record["id"]))
            if values is not None:
                row.update(values)
            weight = len(gold_of(record)["answers"]) if self.options.ac_average == "cluster" else 1
            ir_stats = () if self.qrels is None else (
                (1.0, *(values[name] for name in self.ir_names)) if values is not None
                else (0.0,) * (1 + len(self.ir_names)))
            self.keep(record["id"], (*(row[f"ac@{k}"] * weight for k in self.ks), weight, *ir_stats))
        return rows

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
        values = m_retrieval.ir_measures_of(judged, rankings, self.ks)
        for per_query in values.values():
            self.judged += 1
            for name, value in per_query.items():
                self.ir_sums[name] = self.ir_sums.get(name, 0.0) + value
        return values

    def _ir_metrics(self, sums: dict, judged: float) -> dict:
        return {name: pct(safe_div(sums.get(name, 0.0), judged)) if judged else None for name in self.ir_names}

    def metrics(self):
        out = {f"ac@{k}": pct(value) for k, value in self.coverage.mean().items()}
        if self.qrels is not None:
            out.update(self._ir_metrics(self.ir_sums, self.judged))
            out["judged"] = self.judged
            if self.n > self.judged:
                self.notes.append(f"ndcg@10/mrr/r@k: {self.n - self.judged} record(s) left out: --qrels has no "
                                  f"relevant document for their id; they are averaged over the 'judged' ones")
            unseen = len(set(self.qrels) - self.qids_seen)
            if unseen:
                self.notes.append(f"--qrels judges {unseen} query id(s) absent from the input (not scored)")
        return out

    def columns(self) -> tuple[str, ...]:
        ir = () if self.qrels is None else ("judged", *self.ir_names)
        return (*(f"ac@{k}" for k in self.ks), "weight", *ir)

    def resample(self, idx):
        s = self.kept_sums(idx, self.columns())
        coverage = m_retrieval.CoverageMean(self.ks, self.options.ac_average,
                                            {k: s[f"ac@{k}"] for k in self.ks}, s["weight"])
        out = {f"ac@{k}": pct(value) for k, value in coverage.mean().items()}
        if self.qrels is not None:
            out.update(self._ir_metrics(s, s["judged"]))
        return out


def retrieval_task(options: RetrievalScoring, config, opts: ScoreOptions) -> Task:
    return RetrievalTask(opts, options)


TASK = ("retrieval", retrieval_task, RetrievalScoring)  # registered by cqtools/score/builtin_methods.py
