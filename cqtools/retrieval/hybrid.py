"""Hybrid retrieval: fuse two rankings of the same query (a sparse and a dense one by default).

``rrf`` (default): reciprocal-rank fusion, score = sum over runs of 1 / (rrf_k + rank), rrf_k=60
(Cormack et al. 2009; what ``pyserini.fusion`` computes).
``pool``: the union of both runs' top ``k`` (up to 2k passages, in RRF order): Tree of Clarifications pools
its retrievers' passages (more than 200 from two sources) before it reranks them for every node.
``linear``: Pyserini HybridSearcher's interpolation with normalization=True, alpha * sparse +
dense after centring each run on its mid-range and dividing by its range. A run whose scores are
all tied (or that has one hit) divides by zero in Pyserini; here its normalised scores are 0.
"""
from __future__ import annotations

from .base import ALPHA, FUSION, rank


def rrf(runs: list[list[dict]], k: int, rrf_k: int = 60) -> list[dict]:
    fused: dict[str, dict] = {}
    for hits in runs:
        for hit in hits:
            entry = fused.setdefault(hit["id"], {key: hit[key] for key in ("id", "title", "text")} | {"score": 0.0})
            entry["score"] += 1.0 / (rrf_k + hit["rank"])
    return rank(list(fused.values()), k)


def _normalizer(hits: list[dict]):
    """Pyserini's normalisation, (x - (min+max)/2) / (max-min); a zero range maps every score to 0."""
    scores = [h["score"] for h in hits] or [0.0]
    low, high = min(scores), max(scores)
    mid, span = (low + high) / 2, high - low
    return low, (lambda x: (x - mid) / span) if span > 0 else (lambda x: 0.0)


def linear(sparse: list[dict], dense: list[dict], k: int, alpha: float = ALPHA) -> list[dict]:
    """Pyserini HybridSearcher (normalization=True): alpha * sparse + dense; a hit missing from
    one run takes that run's minimum score."""
    s_min, s_norm = _normalizer(sparse)
    d_min, d_norm = _normalizer(dense)
    s = {h["id"]: h["score"] for h in sparse}
    d = {h["id"]: h["score"] for h in dense}
    by_id = {h["id"]: h for h in dense + sparse}
    fused = [{key: by_id[i][key] for key in ("id", "title", "text")}
             | {"score": alpha * s_norm(s.get(i, s_min)) + d_norm(d.get(i, d_min))} for i in by_id]
    return rank(fused, k)


DEFAULT_PAIR = ("bm25", "dense")  # the index parts `cq retrieve --method hybrid` fuses without --parts


def fuse(sides: list, parts: tuple[str, str], options: dict) -> HybridSearcher:
    """Two searchers' hits fused by ``options["fusion"]`` (``alpha``: the first's weight)."""
    return HybridSearcher(*sides, fusion=options["fusion"], alpha=options["alpha"],
                          parts=None if parts == DEFAULT_PAIR else parts)


class HybridSearcher:
    """Two searchers' rankings of each query fused (by default an index's bm25 and dense parts; any two
    searchable index parts with ``--parts``): ``linear`` weights the first by ``alpha``. ``parts``: their
    names, recorded in the hits' meta when they are not the default pair."""

    def __init__(self, first, second, fusion: str = FUSION, alpha: float = ALPHA, depth: int | None = None,
                 rrf_k: int = 60, parts: tuple[str, str] | None = None):
        self.first, self.second = first, second
        self.fusion, self.alpha, self.depth, self.rrf_k = fusion, alpha, depth, rrf_k
        self.params = {"fusion": fusion, "alpha": alpha if fusion == "linear" else None,
                       "rrf_k": rrf_k if fusion in ("rrf", "pool") else None,
                       "depth": "k" if fusion == "pool" else depth or "max(2k, 100)"}
        encoders = [side.params["encoder"] for side in (first, second) if "encoder" in getattr(side, "params", {})]
        self.params |= {"encoder": encoders[0]} if encoders else {}
        for knob in ("ef_search", "nprobe"):  # the dense side's faiss knobs, when set
            self.params |= {knob: side.params[knob] for side in (first, second) if knob in getattr(side, "params", {})}
        self.params |= {"parts": list(parts)} if parts else {}

    def search(self, query: str, k: int) -> list[dict]:
        return self.batch_search([query], ["q"], k)["q"]

    def batch_search(self, queries, ids, k, threads=1):
        depth = k if self.fusion == "pool" else max(k, self.depth or max(2 * k, 100))  # candidates per side
        first = self.first.batch_search(queries, ids, depth, threads)
        second = self.second.batch_search(queries, ids, depth, threads)
        if self.fusion == "pool":  # every candidate of either side, none cut
            return {i: rrf([first[i], second[i]], 2 * k, self.rrf_k) for i in ids}
        if self.fusion == "rrf":
            return {i: rrf([first[i], second[i]], k, self.rrf_k) for i in ids}
        return {i: linear(first[i], second[i], k, self.alpha) for i in ids}
