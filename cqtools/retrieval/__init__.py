"""Retrieval backends (Pyserini BM25, faiss dense, hybrid) behind one searcher shape:
``search(query, k)`` and ``batch_search(queries, ids, k, threads)`` returning ranked hits
(cqtools.protocols.Searcher). Methods live in the SEARCHERS registry; plugins add more.

``index_dir`` is a ``cq index`` directory, a plain Pyserini Lucene index, or the name of one of
Pyserini's prebuilt indexes (``wikipedia-dpr-100w``, ``wikipedia-dpr-100w.dpr-multi``: see
:mod:`.prebuilt`)."""
from __future__ import annotations

import os
import sqlite3

from ..errors import ResourceError
from .base import ALPHA, B, DENSE_DIR, FUSION, K1, LUCENE_DIR, SWAPPED, read_manifest


def open_searcher(index_dir: str, method: str = "bm25", config=None, **options):
    """The searcher for ``method`` over an index directory (options: see each method's factory), its query
    encoder loaded under ``config`` (None: the process's run configuration)."""
    from ..registry import SEARCHERS

    return SEARCHERS.build(method, config, index_dir=index_dir, **options)


def bm25_searcher(options, config, *, index_dir: str, **context):
    """:class:`.options.Bm25Options`."""
    return _open(index_dir, "bm25", None, config, FUSION, ALPHA, options.k1, options.b, options.bm25_scorer)


def dense_searcher(options, config, *, index_dir: str, **context):
    """``options.encoder``: the query encoder (default: the one recorded in the index, or for a prebuilt
    DPR index the question encoder Pyserini's DPR runs use)."""
    return _open(index_dir, "dense", options.encoder, config, FUSION, ALPHA, K1, B, "auto")


def hybrid_searcher(options, config, *, index_dir: str, **context):
    return _open(index_dir, "hybrid", options.encoder, config, options.fusion, options.alpha, options.k1, options.b,
                 options.bm25_scorer)


def encoder_device(config) -> str:
    """The query encoder's device: the run configuration's (``auto``: cpu, as before)."""
    return "cpu" if config.device == "auto" else config.device


def _open(index_dir: str, method: str, encoder: str | None, config, fusion: str, alpha: float, k1: float,
          b: float, scorer: str):
    """The searcher for ``method`` over a ``cq index`` directory, a plain Pyserini Lucene index or a
    prebuilt index name; ``scorer``: the BM25 side's (auto: the index's BM25 matrix when it has one)."""
    from . import prebuilt

    if prebuilt.looks_like_name(index_dir):
        if scorer == "matrix":
            raise ResourceError(f"{index_dir} is a prebuilt index: it has no BM25 matrix (--bm25-scorer matrix)")
        return _open_prebuilt(index_dir, method, encoder, config, fusion, alpha, k1, b)
    # A `cq index --overwrite` may swap the directory while its parts are opened one after another:
    # the parts, once open, are checked to be one generation (else opened again, then an error).
    for attempt in range(3):
        try:
            searcher = _open_parts(index_dir, method, encoder, config, fusion, alpha, k1, b, scorer)
        except (OSError, sqlite3.Error) as err:
            reason = str(err)
        else:
            reason = _mixed(searcher)
            if reason is None:
                return searcher
    raise ResourceError(SWAPPED.format(name=index_dir) + f" ({reason})")


def _mixed(searcher) -> str | None:
    """Why the open parts of a searcher are not one generation of an index, or None when they are."""
    parts = [searcher] + [getattr(searcher, name, None) for name in ("sparse", "dense", "docstore")]
    for part in filter(None, parts):
        check = getattr(part, "mixed", None)
        reason = check() if check else None
        if reason:
            return reason
    return None


def _open_parts(index_dir: str, method: str, encoder: str | None, config, fusion: str, alpha: float,
                k1: float, b: float, scorer: str):
    from .lucene import LuceneBM25

    manifest = read_manifest(index_dir)
    root, name = index_dir, index_dir
    docstore = None
    if manifest.get("docstore"):
        from .docstore import DocStore

        docstore = DocStore(os.path.join(root, manifest["docstore"]))
    matrix = manifest.get("bm25_matrix") if docstore is not None and scorer != "lucene" and method != "dense" else None
    if scorer == "matrix" and not matrix:
        raise ResourceError(f"index {name} has no BM25 matrix (--bm25-scorer matrix); " + (
            f"rebuild it with `cq index --corpus FILE --out {name} --overwrite --bm25-matrix yes`" if docstore else
            "it is a plain Lucene index: only `cq index` builds carry one"))
    from .matrix import open_scorer

    scorer = open_scorer(os.path.join(root, matrix), k1, b) if matrix else None
    sparse = LuceneBM25(os.path.join(root, manifest.get("lucene") or LUCENE_DIR), k1=k1, b=b, docstore=docstore,
                        matrix=scorer)
    if method == "bm25":
        return sparse
    if not manifest.get("dense"):
        raise ResourceError(f"index {name} has no dense part; rebuild it with "
                            f"`cq index --corpus FILE --out {name} --dense`")
    from .dense import DenseSearcher

    info = manifest["dense"]
    dense = DenseSearcher(os.path.join(root, info.get("dir") or DENSE_DIR),
                          encoder or info.get("query_encoder") or info["encoder"], docstore=sparse,
                          device=encoder_device(config), normalize=info.get("normalized", True), config=config)
    return _combine(method, sparse, dense, fusion, alpha)


def _combine(method: str, sparse, dense, fusion: str, alpha: float):
    if method == "dense":
        return dense
    from .hybrid import HybridSearcher

    return HybridSearcher(sparse, dense, fusion=fusion, alpha=alpha)


def _open_prebuilt(name: str, method: str, encoder: str | None, config, fusion: str, alpha: float,
                   k1: float, b: float):
    """A prebuilt sparse index answers bm25; a prebuilt dense one answers dense (and hybrid, and
    bm25, with the sparse index that holds its passages). Passages come from stored raw documents."""
    from . import prebuilt
    from .dense import DenseSearcher
    from .lucene import LuceneBM25

    index = prebuilt.locate(name, config)
    if index.kind == "sparse" and method != "bm25":
        raise ResourceError(f"{name} is a sparse (BM25) prebuilt index; --method {method} needs a dense one, such "
                            f"as {name}.dpr-multi if Pyserini has it")
    if index.kind == "dense" and not index.texts:
        raise ResourceError(f"Pyserini's registry names no index holding the passages of {name}; use one of its "
                            f"dense indexes that has one (as wikipedia-dpr-100w.dpr-multi has wikipedia-dpr-100w)")
    texts = index if index.kind == "sparse" else prebuilt.locate(index.texts, config)
    sparse = LuceneBM25(texts.path, k1=k1, b=b)
    sparse.params = {**sparse.params, "prebuilt": texts.name, "index_path": texts.path}
    if method == "bm25":
        return sparse
    query_encoder = encoder or prebuilt.QUERY_ENCODERS.get(name)
    if query_encoder is None:
        raise ResourceError(f"Pyserini's prebuilt index {name} does not say which query encoder made its vectors; "
                            f"pass it with --encoder")
    if not encoder:
        from ..models import resolve

        try:
            resolve(query_encoder, announce=False, config=config)
        except ResourceError as err:
            raise ResourceError(f"{name} is searched with the query encoder {query_encoder}, which is not available "
                                f"here ({err}); or pass another with --encoder") from None
    # Pyserini encodes queries as the model gives them: DPR vectors raw, a sentence-transformers model
    # with its own normalisation (if any)
    dense = DenseSearcher(index.path, query_encoder, docstore=sparse, device=encoder_device(config), normalize=False,
                          config=config)
    dense.params = {**dense.params, "prebuilt": name, "index_path": index.path}
    return _combine(method, sparse, dense, fusion, alpha)
