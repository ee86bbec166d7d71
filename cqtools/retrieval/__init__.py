"""Retrieval backends (Pyserini BM25, faiss dense, hybrid) behind one searcher shape:
``search(query, k)`` and ``batch_search(queries, ids, k, threads)`` returning ranked hits
(cqtools.protocols.Searcher). Methods live in the SEARCHERS registry; plugins add more."""
from __future__ import annotations

import os

from ..errors import ResourceError
from ..registry import SEARCHERS
from .base import DENSE_DIR, LUCENE_DIR, read_manifest


def open_searcher(index_dir: str, method: str = "bm25", **options):
    """The searcher for ``method`` over an index directory (options: see each method's factory)."""
    return SEARCHERS.build(method, index_dir=index_dir, **options)


@SEARCHERS.register("bm25", help="Anserini's BM25 (Lucene)")
def bm25_searcher(index_dir: str, k1: float = 0.9, b: float = 0.4, **_):
    return _open(index_dir, "bm25", k1=k1, b=b)


@SEARCHERS.register("dense", help="faiss inner product over the index's dense part")
def dense_searcher(index_dir: str, encoder: str | None = None, device: str = "cpu", **_):
    return _open(index_dir, "dense", encoder, device)


@SEARCHERS.register("hybrid", help="bm25 + dense, fused by --fusion")
def hybrid_searcher(index_dir: str, encoder: str | None = None, device: str = "cpu", fusion: str = "rrf",
                    alpha: float = 0.1, k1: float = 0.9, b: float = 0.4, **_):
    return _open(index_dir, "hybrid", encoder, device, fusion, alpha, k1, b)


def _open(index_dir: str, method: str, encoder: str | None = None, device: str = "cpu",
          fusion: str = "rrf", alpha: float = 0.1, k1: float = 0.9, b: float = 0.4):
    """The searcher for ``method`` over a ``cq index`` directory (or a plain Pyserini Lucene index)."""
    from .lucene import LuceneBM25

    manifest = read_manifest(index_dir)
    docstore = None
    if manifest.get("docstore"):
        from .docstore import DocStore

        docstore = DocStore(os.path.join(index_dir, manifest["docstore"]))
    sparse = LuceneBM25(os.path.join(index_dir, manifest.get("lucene") or LUCENE_DIR), k1=k1, b=b, docstore=docstore)
    if method == "bm25":
        return sparse
    if not manifest.get("dense"):
        raise ResourceError(f"index {index_dir} has no dense part; rebuild it with "
                            f"`cq index --corpus FILE --out {index_dir} --dense`")
    from .dense import DenseSearcher

    dense = DenseSearcher(os.path.join(index_dir, DENSE_DIR), encoder or manifest["dense"]["encoder"],
                          docstore=sparse, device=device)
    if method == "dense":
        return dense
    from .hybrid import HybridSearcher

    return HybridSearcher(sparse, dense, fusion=fusion, alpha=alpha)
