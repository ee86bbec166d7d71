"""Answer coverage AC@k of retrieved passages (Tree of Clarifications, Kim et al. 2023)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from .normalize import normalize_answer, safe_div


def answer_coverage(clusters: Sequence[Sequence[str]], passages: Sequence[dict], ks: Sequence[int]) -> dict[int, float]:
    """Share of gold answer clusters (one per disambiguated question) with any alias, normalised,
    inside the normalised "title text" of one of the top-k passages; {k: coverage}.

    Passages are taken in the order given (ranked). No clusters: coverage 0 for every k.
    """
    if not clusters:
        return {k: 0.0 for k in ks}
    aliases = [[n for a in cluster if (n := normalize_answer(a))] for cluster in clusters]
    texts = [normalize_answer(f"{p.get('title') or ''} {p.get('text') or ''}") for p in passages[:max(ks)]]
    first_hit = []  # rank (1-based) of the first passage covering each cluster, or None
    for names in aliases:
        rank = next((r for r, text in enumerate(texts, start=1) if any(n in text for n in names)), None)
        first_hit.append(rank)
    return {k: sum(1 for r in first_hit if r is not None and r <= k) / len(clusters) for k in ks}


AVERAGES = ("record", "cluster")


@dataclass
class CoverageMean:
    """Mean AC@k over a stream of records: over records (``average="record"``, each record counts
    once) or over all gold answer clusters (``"cluster"``, micro: a record counts once per cluster)."""

    ks: Sequence[int]
    average: str = "record"
    sums: dict = field(default_factory=dict)
    weight: int = 0

    def add(self, coverage: dict[int, float], n_clusters: int) -> None:
        """Add one record's :func:`answer_coverage` (``n_clusters``: its number of gold clusters)."""
        weight = n_clusters if self.average == "cluster" else 1
        for k, value in coverage.items():
            self.sums[k] = self.sums.get(k, 0) + value * weight
        self.weight += weight

    def mean(self) -> dict[int, float | None]:
        """{k: mean AC@k in [0, 1]}, None for every k before any record."""
        return {k: safe_div(self.sums.get(k, 0), self.weight) if self.weight else None for k in self.ks}


def ir_measure_names(ks: Sequence[int]) -> list[str]:
    """cq's names of the standard IR measures, in summary order: nDCG@10, MRR, R@k for each k."""
    return ["ndcg@10", "mrr", *(f"r@{k}" for k in ks)]


def ir_measures_of(qrels: dict[str, dict[str, int]], rankings: dict[str, Sequence[str]],
                   ks: Sequence[int]) -> dict[str, dict[str, float]]:
    """{qid: {"ndcg@10", "mrr", "r@k"...}} in [0, 1] for every qid of ``qrels``, through ir_measures
    (pytrec_eval, i.e. trec_eval: nDCG with the relevance grade as gain and log2(rank+1) discount,
    reciprocal rank and recall counting relevance >= 1).

    ``rankings[qid]`` is the ranked list of docids as retrieved (duplicates after the first are
    dropped); the rank, not a score, decides the order, so trec_eval's tie-breaking by docid never
    reorders it. A qid of ``qrels`` without a ranking (or an empty one) scores 0 on every measure.
    """
    import ir_measures
    from ir_measures import RR, R, nDCG

    measures = {nDCG @ 10: "ndcg@10", RR: "mrr", **{R @ k: f"r@{k}" for k in ks}}
    run = {}
    for qid, docids in rankings.items():
        scores: dict[str, float] = {}
        for rank, docid in enumerate(docids):
            scores.setdefault(docid, float(-rank))
        if scores and qid in qrels:
            run[qid] = scores
    out = {qid: {name: 0.0 for name in measures.values()} for qid in qrels}
    if run:
        for metric in ir_measures.iter_calc(list(measures), {q: qrels[q] for q in run}, run):
            out[metric.query_id][measures[metric.measure]] = float(metric.value)
    return out
