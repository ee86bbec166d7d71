"""The searchers' options (``cq retrieve --method``), each declared once; the defaults are Anserini's and
cq's hybrid fusion's (cqtools/retrieval/base.py)."""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import InputError
from ..registry import option
from .base import ALPHA, B, FUSION, K1


def _finite(value: float, where: str) -> float:
    import math

    if not math.isfinite(value):
        raise InputError(f"{where}: BM25 k1 must be a finite number, not {value!r}")
    return value


def _k1():
    return option(K1, "BM25 k1", min=0.0, check=_finite)  # Lucene's BM25Similarity refuses others


def _b():
    return option(B, "BM25 b", min=0.0, max=1.0)


def _scorer():
    return option("auto", "how BM25 scores are computed, the same ids, scores and order either way: auto (the "
                          "index's BM25 matrix when it has one: `cq index` writes one for a small corpus, scored in "
                          "numpy; else Lucene), lucene, or matrix", choices=("auto", "lucene", "matrix"),
                  shaping=False)  # the same bytes either way (tests/test_bm25_matrix.py): --resume may switch


def _two_parts(value: str, where: str) -> str:
    names = [name.strip() for name in value.split(",")]
    if len(names) != 2 or not all(names) or names[0] == names[1]:
        raise InputError(f"{where}: --parts takes two different index parts, A,B (e.g. bm25,dense), not {value!r}")
    return ",".join(names)


def _encoder():
    return option(None, "dense query encoder [default: the one recorded in the index; for a prebuilt DPR index, its "
                        "DPR question encoder]")


def _ef_search():
    return option(None, "HNSW dense indexes: candidates kept while searching the graph (faiss's efSearch, raised "
                        "to --hits when lower; more: higher recall, slower) [default: faiss's, 16]", min=1,
                  metavar="N")


def _nprobe():
    return option(None, "IVF dense indexes: inverted lists searched per query (faiss's nprobe; more: higher "
                        "recall, slower) [default: faiss's, 1]", min=1, metavar="N")


@dataclass(frozen=True)
class Bm25Options:
    """Anserini's BM25 (Lucene)"""

    k1: float = _k1()
    b: float = _b()
    bm25_scorer: str = _scorer()


@dataclass(frozen=True)
class DenseOptions:
    """faiss inner product over the index's dense part (sentence-transformers or DPR)"""

    encoder: str | None = _encoder()
    ef_search: int | None = _ef_search()
    nprobe: int | None = _nprobe()


@dataclass(frozen=True)
class HybridOptions:
    """bm25 + dense, fused by --fusion"""

    encoder: str | None = _encoder()
    ef_search: int | None = _ef_search()
    nprobe: int | None = _nprobe()
    fusion: str = option(FUSION, "reciprocal rank (rrf), Pyserini's normalised interpolation (linear), or pool (both "
                                 "sides' top --hits, up to twice as many passages, in rrf order: ToC's pool)",
                         choices=("rrf", "linear", "pool"))
    alpha: float = option(ALPHA, "sparse weight for --fusion linear")
    k1: float = _k1()
    b: float = _b()
    bm25_scorer: str = _scorer()
    parts: str | None = option(None, "the two index parts fused, A,B: bm25, dense, or a plugin's searchable part "
                                     "(`cq plugins --all` lists the index parts); the first takes --alpha "
                                     "[default: bm25,dense]", check=_two_parts)


@dataclass(frozen=True)
class PartOptions:
    """(an index part searched alone)"""
