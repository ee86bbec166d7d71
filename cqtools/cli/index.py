"""`cq index`: build an index's parts (cqtools/retrieval/parts.py): a Pyserini Lucene (BM25) index, its
BM25 matrix, with --dense a faiss index, and any part a plugin adds (its own flags)."""
from __future__ import annotations

import errno
import logging
import os
import re
import shutil
import tempfile

import click

from ..errors import ResourceError
from ..jsonl import remove_stale
from .declared import declared_flags
from .method_flags import method_options
from .options import compose, device_options, load_options
from ..registry import INDEX_PARTS
from ..retrieval.base import MATRIX_MAX_PASSAGES
from ..retrieval.jvm import DEFAULT_XMX
from ..retrieval.vectors import EncodeSettings
from ..retrieval.faiss_index import DEFAULT_FACTORY, DEFAULT_TRAIN_SAMPLE

log = logging.getLogger("cqtools")
PART_OPTIONS, _ = method_options(INDEX_PARTS, skip=(), opt_flag=False)  # a plugin part's own flags


@click.command(name="index")
@click.option("--corpus", required=True, type=click.Path(dir_okay=False),
              help="Passages: JSONL {id, title, text} or DPR psgs_w100.tsv (id, text, title).")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False), help="Index directory to create.")
@click.option("--dense", is_flag=True, help="Also build a dense faiss index (Pyserini layout).")
@click.option("--vectors", type=click.Path(file_okay=False), metavar="DIR",
              help="With --dense: index the vectors `cq encode` wrote into DIR (its shards, each checked to be of this "
                   "corpus, by one encoder, every chunk there) instead of encoding the corpus here.")
@declared_flags(EncodeSettings, "encoder", "query_encoder")
@click.option("--faiss-index", "faiss_index", default=DEFAULT_FACTORY, show_default=True, metavar="TYPE",
              help="faiss index type for --dense, an index_factory string: Flat (exact; Pyserini's layout), HNSW32 "
                   "(graph, --ef-search), IVF4096,Flat / IVF4096,PQ64 (inverted lists, --nprobe), SQ8 ... "
                   "(docs/architecture.md, docs/benchmarks/scale.md). An HNSW or IVF type gets the smallest "
                   "efSearch / nprobe that finds 0.98 of Flat's top 100 for 256 corpus passages searched as "
                   "queries, stored for `cq retrieve`.")
@click.option("--faiss-train-sample", "faiss_train_sample", type=click.IntRange(min=1), default=DEFAULT_TRAIN_SAMPLE,
              show_default=True, metavar="N",
              help="Vectors a trained --faiss-index type (IVF, PQ, SQ) learns from, drawn uniformly (seeded) from "
                   "the corpus, at most all of it: 64 a list for IVF4096; 384 MiB at 384 dimensions.")
@click.option("--threads", type=click.IntRange(min=1), default=os.cpu_count() or 1, show_default="number of CPUs")
@declared_flags(EncodeSettings, "batch_size", "chunk")
@click.option("--bm25-matrix", "bm25_matrix", type=click.Choice(["auto", "yes", "no"]), default="auto",
              show_default=True,
              help="Also write the BM25 term-document matrix, with which `cq retrieve` scores BM25 in numpy "
                   "(Lucene's exact scores, 3-4x less CPU on a small corpus; ~16 bytes a posting in memory): auto "
                   f"writes it up to {MATRIX_MAX_PASSAGES:,} passages.")
@click.option("--jvm-heap", default=DEFAULT_XMX, envvar="CQ_JVM_XMX", show_default=True,
              help="The JVM's heap while Lucene indexes (e.g. 1g, 8g; 'default': the JVM's own, a quarter of the "
                   "memory). Lucene's indexing buffer is an eighth of it (64 MiB to 2 GiB): memory stays within it "
                   "however large the corpus; a larger heap indexes a large corpus with fewer segment merges.")
@click.option("--overwrite", is_flag=True,
              help="Replace an existing cq or Pyserini index. The new one is built beside it and swapped in only "
                   "when complete; any other non-empty directory is never touched.")
@click.option("-q", "--quiet", is_flag=True, help="No info messages on stderr.")
@compose(device_options, load_options, PART_OPTIONS)
def cli(corpus, out_dir, dense, vectors, encoder, query_encoder, faiss_index, faiss_train_sample, threads,
        batch_size, chunk, bm25_matrix, jvm_heap, overwrite, quiet, device, dtype, **part_options):
    """Index a corpus for `cq retrieve`.

    The index is built in a temporary directory beside --out and moved into place only when
    complete: a failed or killed build leaves any earlier index as it was.

    \b
    Example:
      cq index --corpus passages.jsonl --out idx --dense
      cq retrieve --index idx --method hybrid --hits 20 < questions.jsonl | cq rerank

    \b
    A corpus encoded by many jobs (`cq encode --shard I/N --out vecs`), then indexed:
      cq index --corpus passages.jsonl --out idx --dense --vectors vecs

    \b
    DPR (separate question and context encoders):
      cq index --corpus passages.jsonl --out idx-dpr --dense \\
        --encoder facebook/dpr-ctx_encoder-multiset-base
    """
    from .options import run_config
    from ..retrieval.parts import build_index

    if quiet:
        log.setLevel(logging.WARNING)
    out_dir = os.path.abspath(out_dir)
    replace = _check_target(out_dir, corpus, overwrite)
    from ..retrieval import jvm

    jvm.heap_option(jvm_heap, exact=True)  # a heap size the JVM takes, checked before anything is read
    from ..data.formats import corpus_file

    corpus_file(corpus)
    encoder = _check_dense(corpus, dense, vectors, encoder, query_encoder, faiss_index)
    parent = os.path.dirname(out_dir)
    os.makedirs(parent, exist_ok=True)
    name = os.path.basename(out_dir)
    remove_stale(parent, rf"^\.{re.escape(name)}\.(?:building|old)-(\d+)-")  # a killed build's leftovers
    build_dir = tempfile.mkdtemp(prefix=f".{name}.building-{os.getpid()}-", dir=parent)
    settings = {"threads": threads, "device": device, "dense": dense, "encoder": encoder,
                "query_encoder": query_encoder, "batch_size": batch_size, "chunk": chunk, "bm25_matrix": bm25_matrix,
                "vectors": os.path.abspath(vectors) if vectors else None, "jvm_heap": jvm_heap,
                "faiss_index": faiss_index, "faiss_train_sample": faiss_train_sample}
    try:
        build_index(corpus, build_dir, settings, part_options, run_config())
        _swap_in(build_dir, out_dir, replace)
    finally:
        if os.path.exists(build_dir):
            shutil.rmtree(build_dir, ignore_errors=True)


def _check_dense(corpus: str, dense: bool, vectors: str | None, encoder: str, query_encoder: str | None,
                 faiss_index: str) -> str | None:
    """The dense flags' errors, before anything is built; returns the encoder the build checks vectors against
    (with --vectors and no --encoder given: None, any)."""
    for flag, given in (("--query-encoder", query_encoder), ("--vectors", vectors),
                        ("--faiss-index", faiss_index != DEFAULT_FACTORY)):
        if given and not dense:
            raise ResourceError(f"{flag} goes with --dense" + (": pass both to index the vectors `cq encode` wrote"
                                                               if flag == "--vectors" else ""))
    if not vectors:
        return encoder
    source = click.get_current_context().get_parameter_source("encoder")
    encoder = None if source == click.core.ParameterSource.DEFAULT else encoder
    from ..retrieval.vectors import VectorSet

    VectorSet(vectors, corpus).check(encoder, query_encoder)  # now, not after the BM25 index is built
    return encoder


def _is_index(path: str) -> bool:
    from ..retrieval.base import MANIFEST

    names = set(os.listdir(path))
    return MANIFEST in names or any(n.startswith("segments_") for n in names)


def _check_target(out_dir: str, corpus: str, overwrite: bool) -> bool:
    """Whether an existing index is to be replaced; refuses anything that would lose a user's files."""
    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        raise ResourceError(f"{out_dir} is a file, not a directory; pass another --out")
    if not os.path.isdir(out_dir) or not os.listdir(out_dir):
        return False
    if not overwrite:
        raise ResourceError(f"{out_dir} already exists and is not empty; pass --overwrite to replace the index "
                            f"there, or another --out")
    if not _is_index(out_dir):
        raise ResourceError(f"{out_dir} is not a cq or Pyserini index (no cq_index.json, no Lucene segments): "
                            f"--overwrite replaces only indexes, never other files; pass another --out")
    corpus_path = os.path.abspath(corpus)
    if os.path.commonpath([corpus_path, out_dir]) == out_dir:
        raise ResourceError(f"the corpus {corpus} is inside {out_dir}, which --overwrite would replace; "
                            f"move the corpus out first")
    return True


def _raced(out_dir: str) -> ResourceError:
    return ResourceError(f"another `cq index` finished into {out_dir} while this one was building; its index is "
                         "kept; pass --overwrite to replace it, or another --out")


def _swap_in(build_dir: str, out_dir: str, replace: bool) -> None:
    """Move the finished index into place; the old one is removed only after the new one is there."""
    old = None
    if os.path.isdir(out_dir):
        if replace:
            old = tempfile.mkdtemp(prefix=f".{os.path.basename(out_dir)}.old-{os.getpid()}-",
                                   dir=os.path.dirname(out_dir))
            os.rename(out_dir, os.path.join(old, "index"))
        else:
            try:
                os.rmdir(out_dir)  # empty when checked, unless another `cq index` has filled it since
            except OSError:
                raise _raced(out_dir) from None
    try:
        os.rename(build_dir, out_dir)
    except OSError as err:
        if err.errno not in (errno.ENOTEMPTY, errno.EEXIST):
            raise
        raise _raced(out_dir) from None
    if old:
        shutil.rmtree(old, ignore_errors=True)
