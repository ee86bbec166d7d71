"""cq's own retrieval methods, registered through the plugin hooks like any plugin's (cqtools/plugins.py)."""
from __future__ import annotations

from ..plugins import hookimpl
from ..registry import Option

K1 = Option("k1", float, 0.9, "BM25 k1")
B = Option("b", float, 0.4, "BM25 b")
ENCODER = Option("encoder", str, None, "dense query encoder [default: the one recorded in the index; for a prebuilt "
                 "DPR index, its DPR question encoder]")


@hookimpl
def register_searchers(register):
    from . import bm25_searcher, dense_searcher, hybrid_searcher

    register("bm25", bm25_searcher, help="Anserini's BM25 (Lucene)", options=[K1, B])
    register("dense", dense_searcher,
             help="faiss inner product over the index's dense part (sentence-transformers or DPR)", options=[ENCODER])
    register("hybrid", hybrid_searcher, help="bm25 + dense, fused by --fusion",
             options=[ENCODER, Option("fusion", str, "rrf", "reciprocal rank (rrf), Pyserini's normalised "
                                      "interpolation (linear), or pool (both sides' top --hits, up to twice as many "
                                      "passages, in rrf order: ToC's pool)", choices=("rrf", "linear", "pool")),
                      Option("alpha", float, 0.1, "sparse weight for --fusion linear"), K1, B])
