"""Pyserini's prebuilt indexes by name (``--index wikipedia-dpr-100w``), through Pyserini's own
registry (``pyserini.prebuilt_index_info``) and cache (``pyserini.util.get_cache_home()``:
``$PYSERINI_CACHE``, else ``~/.cache/pyserini``).

Pyserini unpacks a prebuilt index to ``<cache>/indexes/<archive name without .tar.gz>.<md5>``
(``pyserini.util.download_and_unpack_index``): a Lucene index directory for sparse ones, a faiss
``index`` + ``docid`` directory for dense ones, whose passage text lives in the sparse index the
registry names under ``texts``. A copy found there is used as is; otherwise Pyserini's own
download is tried (unless ``CQ_OFFLINE=1``), and failing that a one-line error says where to put
a copy downloaded elsewhere.
"""
from __future__ import annotations

import contextlib
import logging
import os
import re
import sys
from dataclasses import dataclass

from ..errors import ResourceError
from . import jvm

log = logging.getLogger("cqtools")

# Pyserini's registry records no query encoder for its faiss indexes (its CLI takes --encoder);
# these are the ones its DPR reproductions use. Other dense indexes need `--encoder NAME`.
QUERY_ENCODERS = {
    "wikipedia-dpr-100w.dpr-multi": "facebook/dpr-question_encoder-multiset-base",
    "wikipedia-dpr-100w.dpr-single-nq": "facebook/dpr-question_encoder-single-nq-base",
}

_KINDS = (("TF_INDEX_INFO", "sparse"), ("FAISS_INDEX_INFO", "dense"), ("IMPACT_INDEX_INFO", "impact"),
          ("LUCENE_HNSW_INDEX_INFO", "lucene-hnsw"), ("LUCENE_FLAT_INDEX_INFO", "lucene-flat"))


@dataclass(frozen=True)
class Prebuilt:
    name: str
    kind: str            # "sparse" (Lucene inverted, BM25) | "dense" (faiss)
    path: str            # the unpacked index in Pyserini's cache
    texts: str | None    # for a dense index: the prebuilt sparse index holding its passages


def looks_like_name(index: str) -> bool:
    """A prebuilt name has no path separator and is not an existing path."""
    return bool(index) and os.sep not in index and "/" not in index and not os.path.exists(index)


def cache_home() -> str:
    from pyserini.util import get_cache_home

    return os.path.join(get_cache_home(), "indexes")


def _registry() -> list[tuple[str, dict]]:
    jvm.setup()  # the registry module asks Anserini (in the JVM) for half of its entries
    with contextlib.redirect_stdout(sys.stderr):
        import pyserini.prebuilt_index_info as info
    return [(kind, getattr(info, attr)) for attr, kind in _KINDS]


def entry(name: str) -> tuple[str, dict] | None:
    """(kind, Pyserini's registry entry) for ``name``, or None when Pyserini does not know it."""
    for kind, table in _registry():
        if name in table:
            return kind, table[name]
    return None


def cache_dir_name(info: dict) -> str:
    """The directory Pyserini unpacks an index into: archive name, less .tar.gz, dot, md5."""
    archive = info.get("filename") or info["urls"][0].split("/")[-1]
    return f"{re.sub(r'.tar.gz.*$', '', archive)}.{info['md5']}"


def locate(name: str, config) -> Prebuilt:
    """The prebuilt index ``name`` in Pyserini's cache (downloading it with Pyserini's own code when
    absent and the run configuration ``config`` is not offline); ResourceError with the fix otherwise."""
    found = entry(name)
    if found is None:
        raise ResourceError(f"index {name} not found: not a directory, and not one of Pyserini's prebuilt index "
                            f"names (`cq indexes --match TEXT` lists them); "
                            f"build one with `cq index --corpus FILE --out {name}`")
    kind, info = found
    if kind not in ("sparse", "dense"):
        raise ResourceError(f"{name} is a Pyserini {kind} index; cq retrieve reads its Lucene inverted (BM25) and "
                            f"faiss prebuilt indexes: search this one with `cq pyserini search.lucene --index {name} ...`")
    path = os.path.join(cache_home(), cache_dir_name(info))
    if not os.path.isdir(path):
        path = _download(name, info, path, config.offline)
    log.info("prebuilt index %s from %s", name, path)
    return Prebuilt(name, kind, path, info.get("texts") if kind == "dense" else None)


def _download(name: str, info: dict, path: str, offline: bool) -> str:
    """``offline``: CQ_OFFLINE=1, never download (HF_HUB_OFFLINE is about the Hugging Face hub, not Pyserini's
    servers)."""
    home = os.path.dirname(path)
    fix = (f"download {info['urls'][0]}, unpack it into {home} and rename the unpacked directory to "
           f"{os.path.basename(path)} (or set PYSERINI_CACHE to the directory whose indexes/ holds that copy)")
    if offline:
        raise ResourceError(f"prebuilt index {name} is not in Pyserini's cache {home} and CQ_OFFLINE=1; {fix}")
    from pyserini.util import download_prebuilt_index

    size = info.get("size compressed (bytes)")
    log.info("prebuilt index %s is not in %s: downloading it with Pyserini%s", name, home,
             f" ({size / 1e9:.1f} GB)" if size else "")
    try:
        with contextlib.redirect_stdout(sys.stderr):  # Pyserini reports progress with print()
            got = download_prebuilt_index(name, verbose=False)
    except Exception as err:  # URLError, a checksum AssertionError, ValueError('Unable to download ...')
        reason = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise ResourceError(f"prebuilt index {name} is not in Pyserini's cache {home} and downloading it failed "
                            f"({reason}); {fix}") from None
    return got


METHODS = {("bm25",): "bm25", ("dense",): "dense", ("bm25", "dense"): "hybrid"}  # the parts a prebuilt index has


def open_searcher(name: str, parts: tuple[str, ...], options: dict, config):
    """A prebuilt sparse index answers bm25; a prebuilt dense one answers dense (and hybrid, and
    bm25, with the sparse index that holds its passages). Passages come from stored raw documents."""
    from .hybrid import fuse
    from .dense import DenseSearcher, encoder_device
    from .lucene import LuceneBM25

    method = METHODS.get(parts)
    if method is None:
        raise ResourceError(f"{name} is a prebuilt index: its parts are bm25 and dense, not {', '.join(parts)}")
    if options.get("bm25_scorer") == "matrix":
        raise ResourceError(f"{name} is a prebuilt index: it has no BM25 matrix (--bm25-scorer matrix)")
    index = locate(name, config)
    if index.kind == "sparse" and method != "bm25":
        raise ResourceError(f"{name} is a sparse (BM25) prebuilt index; --method {method} needs a dense one, such "
                            f"as {name}.dpr-multi if Pyserini has it")
    if index.kind == "dense" and not index.texts:
        raise ResourceError(f"Pyserini's registry names no index holding the passages of {name}; use one of its "
                            f"dense indexes that has one (as wikipedia-dpr-100w.dpr-multi has wikipedia-dpr-100w)")
    texts = index if index.kind == "sparse" else locate(index.texts, config)
    sparse = LuceneBM25(texts.path, **{k: options[k] for k in ("k1", "b") if k in options})
    sparse.params = {**sparse.params, "prebuilt": texts.name, "index_path": texts.path}
    if method == "bm25":
        return sparse
    query_encoder = _query_encoder(name, options.get("encoder"), config)
    # Pyserini encodes queries as the model gives them: DPR vectors raw, a sentence-transformers model
    # with its own normalisation (if any)
    dense = DenseSearcher(index.path, query_encoder, docstore=sparse, device=encoder_device(config), normalize=False,
                          config=config, ef_search=options.get("ef_search"), nprobe=options.get("nprobe"))
    dense.params = {**dense.params, "prebuilt": name, "index_path": index.path}
    return dense if method == "dense" else fuse([sparse, dense], parts, options)


def _query_encoder(name: str, encoder: str | None, config) -> str:
    """``encoder``, or the one Pyserini's DPR runs use for the prebuilt index ``name`` (checked to be here)."""
    query_encoder = encoder or QUERY_ENCODERS.get(name)
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
    return query_encoder
