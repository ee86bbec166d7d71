"""cq's own index parts (:mod:`.parts`): ``bm25`` (a Lucene index and the passage store), ``bm25_matrix``
(the BM25 term-document matrix, a scorer of ``bm25``) and ``dense`` (a faiss index). Their ``cq index``
flags are the command's own (``--bm25-matrix``, ``--dense``, ``--encoder`` ...), read from the build's
settings; their search options are their own (``search_options``: bm25's k1, b and scorer, dense's query
encoder and faiss knobs, :mod:`.options`), the flags of `cq retrieve --method bm25 / dense / hybrid`."""
from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass

from ..errors import ResourceError
from .base import DENSE_DIR, LUCENE_DIR, MATRIX_MAX_PASSAGES
from .options import Bm25Options, DenseOptions

log = logging.getLogger("cqtools")


@dataclass(frozen=True)
class Builtin:
    """(built from `cq index`'s own flags)"""


class Part:
    """What cq's parts share: made with their (empty) options and the run configuration."""

    searchable = False
    flag: str | None = None  # the `cq index` flag that builds the part

    def __init__(self, options, config):
        self.options, self.config = options, config


class Bm25Part(Part):
    """BM25 over a Lucene index (Anserini's), with the passage store every part's hits are read from"""

    searchable = True
    search_options = Bm25Options

    def build(self, ctx) -> dict:
        """The Lucene index and its passage store (with Lucene's document numbers)."""
        from . import docstore as ds, jvm
        from .lucene import build_lucene

        heap = ctx.settings.get("jvm_heap") or jvm.DEFAULT_XMX
        jvm.setup(heap=heap, exact=True)  # the first JVM start of the process decides its heap
        start = time.perf_counter()
        store = ds.DocStoreWriter(ctx.path(ds.NAME), generation=ctx.generation)
        count = build_lucene(store.tee(ctx.passages(progress=True)), ctx.path(LUCENE_DIR), ctx.settings["threads"],
                             docstore=store, buffer_mb=jvm.indexing_buffer_mb(heap))
        store.close()
        seconds = round(time.perf_counter() - start, 2)
        log.info("bm25: indexed %d passages in %.1f s", count, seconds)
        return {"passages": count, "lucene": LUCENE_DIR, "docstore": ds.NAME, "bm25_seconds": seconds}

    def open(self, index, options: Bm25Options):
        """LuceneBM25 with ``k1``, ``b``, scored by the index's BM25 matrix unless ``bm25_scorer`` is lucene."""
        from .lucene import LuceneBM25

        scorer, k1, b = options.bm25_scorer, options.k1, options.b
        matrix = index.store is not None and scorer != "lucene" and index.has("bm25_matrix")
        if scorer == "matrix" and not matrix:
            raise ResourceError(f"index {index.name} has no BM25 matrix (--bm25-scorer matrix); " + (
                f"rebuild it with `cq index --corpus FILE --out {index.name} --overwrite --bm25-matrix yes`"
                if index.store is not None else "it is a plain Lucene index: only `cq index` builds carry one"))
        return LuceneBM25(index.path(index.manifest.get("lucene") or LUCENE_DIR), k1=k1, b=b, docstore=index.store,
                          matrix=index.part("bm25_matrix") if matrix else None)


class MatrixPart(Part):
    """the BM25 term-document matrix: Lucene's exact BM25 scores from numpy (a scorer of bm25)"""

    flag = "--overwrite --bm25-matrix yes"
    search_options = Bm25Options  # bm25's k1 and b

    def build(self, ctx) -> dict | None:
        """The matrix (:mod:`.matrix`) with ``--bm25-matrix yes``, or ``auto`` up to MATRIX_MAX_PASSAGES."""
        from . import docstore as ds, matrix

        wanted = ctx.settings.get("bm25_matrix", "auto")
        if wanted == "no":
            return None
        if wanted == "auto" and ctx.manifest["passages"] > MATRIX_MAX_PASSAGES:
            postings = matrix.postings(ctx.path(ctx.manifest["lucene"]))
            log.info("bm25: no BM25 matrix above %s passages (--bm25-matrix auto; searches use Lucene): for these %s "
                     "passages it would hold %.1f GiB in memory at search (%s postings, 8 bytes each) and score whole "
                     "posting lists where Lucene skips; --bm25-matrix yes writes one anyway",
                     f"{MATRIX_MAX_PASSAGES:,}", f"{ctx.manifest['passages']:,}", postings * 8 / 2**30, f"{postings:,}")
            return None
        start = time.perf_counter()
        store = ds.DocStore(ctx.path(ctx.manifest["docstore"]), cache=0)  # each passage is read once
        try:
            why = matrix.build(ctx.path(ctx.manifest["lucene"]), store, ctx.path(matrix.FILE))
        finally:
            store.close()
        if why and wanted == "yes":
            raise ResourceError(f"--bm25-matrix yes: no BM25 matrix can be written for this corpus ({why}); pass "
                                f"--bm25-matrix auto or no to index it without one (searches then use Lucene)")
        if why:
            log.warning("no BM25 matrix written (searches use Lucene): %s", why)
            return None
        seconds = round(time.perf_counter() - start, 2)
        log.info("bm25: matrix written in %.1f s", seconds)
        return {"bm25_matrix": matrix.FILE, "bm25_matrix_seconds": seconds}

    def open(self, index, options: Bm25Options):
        """A :class:`~.matrix.MatrixScorer` with the search's ``k1`` and ``b`` (None: its scores would not be exact)."""
        from .matrix import open_scorer

        return open_scorer(index.path(index.manifest["bm25_matrix"]), options.k1, options.b)


class DensePart(Part):
    """faiss inner product over passage vectors (sentence-transformers or DPR)"""

    searchable = True
    flag = "--dense"
    search_options = DenseOptions

    def check(self, ctx) -> None:
        """With ``--dense``: ``--faiss-index`` is a type faiss builds for the vectors' dimension (the encoder's,
        which loads now, once: the build reuses it; or, with ``--vectors``, theirs)."""
        from .dense import encoder_dimension
        from .faiss_index import DEFAULT_FACTORY, check_factory

        factory = ctx.settings.get("faiss_index") or DEFAULT_FACTORY
        if not ctx.settings.get("dense") or factory == DEFAULT_FACTORY:
            return
        if ctx.settings.get("vectors"):  # the vectors' own dimension: no encoder loads
            from .vectors import VectorSet

            dim = VectorSet(ctx.settings["vectors"], ctx.corpus).info["dim"]
        else:
            dim = encoder_dimension(ctx.settings["encoder"], ctx.settings["device"], self.config)
        check_factory(factory, dim)

    def build(self, ctx) -> dict | None:
        """With ``--dense``: the passages encoded by ``--encoder`` into a faiss index of type ``--faiss-index``
        (Pyserini's layout), or with ``--vectors DIR`` the index of the vector files `cq encode` wrote there
        (:mod:`.vectors`), checked to be this corpus' by that encoder."""
        from . import generation
        from .dense import build_dense, index_vectors
        from .faiss_index import DEFAULT_FACTORY, DEFAULT_TRAIN_SAMPLE

        if not ctx.settings.get("dense"):
            return None
        start = time.perf_counter()
        settings = ctx.settings
        faiss = {"faiss_index": settings.get("faiss_index") or DEFAULT_FACTORY,
                 "train_sample": settings.get("faiss_train_sample") or DEFAULT_TRAIN_SAMPLE}
        if settings.get("vectors"):
            info = index_vectors(settings["vectors"], ctx.corpus, ctx.path(DENSE_DIR), settings["encoder"],
                                 settings.get("query_encoder"), **faiss)
        else:  # the passage count checks an IVF's lists before any encoding
            info = build_dense(ctx.corpus, ctx.path(DENSE_DIR), settings["encoder"], settings["batch_size"],
                               settings["device"], settings.get("chunk"), settings.get("query_encoder"), self.config,
                               expected=ctx.manifest.get("passages"), **faiss)
        generation.write_dense(ctx.path(DENSE_DIR), ctx.generation)
        info["seconds"] = round(time.perf_counter() - start, 2)
        log.info("dense: %s %d passages in %.1f s", "indexed the vectors of" if settings.get("vectors") else "encoded",
                 info["passages"], info["seconds"])
        return {"dense": info | {"dir": DENSE_DIR}}

    def open(self, index, options: DenseOptions):
        """The faiss index searched with the query encoder ``encoder`` (default: the one the manifest records) and
        the knobs ``ef_search`` / ``nprobe`` (None: the ones `cq index` calibrated, else the type's default)."""
        from .dense import DenseSearcher, encoder_device

        info = index.manifest["dense"]
        return DenseSearcher(index.path(info.get("dir") or DENSE_DIR),
                             options.encoder or info.get("query_encoder") or info["encoder"],
                             docstore=index.passages(), device=encoder_device(index.config),
                             normalize=info.get("normalized", True), config=index.config,
                             ef_search=options.ef_search, nprobe=options.nprobe, factory=info.get("faiss_index"),
                             calibrated=info.get("calibrated"))


def register_parts(register) -> None:
    register("bm25", Bm25Part, options=Builtin, help=Bm25Part.__doc__)
    register("bm25_matrix", MatrixPart, options=Builtin, help=MatrixPart.__doc__)
    register("dense", DensePart, options=Builtin, help=DensePart.__doc__)
