"""`cq index`: build a Pyserini Lucene (BM25) index and, with --dense, a faiss index."""
from __future__ import annotations

import errno
import logging
import os
import re
import shutil
import tempfile
import time

import click

from .. import __version__
from ..errors import ResourceError
from ..jsonl import remove_stale
from .options import compose, device_options, load_options
from ..models.roles import ENCODER
from ..retrieval.base import MATRIX_MAX_PASSAGES

log = logging.getLogger("cqtools")


@click.command(name="index")
@click.option("--corpus", required=True, type=click.Path(dir_okay=False),
              help="Passages: JSONL {id, title, text} or DPR psgs_w100.tsv (id, text, title).")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False), help="Index directory to create.")
@click.option("--dense", is_flag=True, help="Also build a dense faiss index (Pyserini layout).")
@click.option("--encoder", default=ENCODER, show_default=True,
              envvar="CQ_MODEL_ENCODER",
              help="Passage encoder for --dense: a sentence-transformers model (normalised vectors) or a DPR "
                   "context encoder such as facebook/dpr-ctx_encoder-multiset-base (CLS vectors, raw inner "
                   "product); hub id, local dir or offline copy.")
@click.option("--query-encoder", default=None,
              help="DPR only: the question encoder recorded for `cq retrieve` [default: the context encoder's "
                   "pair by DPR's naming, e.g. facebook/dpr-question_encoder-multiset-base].")
@click.option("--threads", type=click.IntRange(min=1), default=os.cpu_count() or 1, show_default="number of CPUs")
@click.option("--batch-size", type=click.IntRange(min=1), default=128, show_default=True, help="Encoding batch size.")
@click.option("--bm25-matrix", "bm25_matrix", type=click.Choice(["auto", "yes", "no"]), default="auto",
              show_default=True,
              help="Also write the BM25 term-document matrix, with which `cq retrieve` scores BM25 in numpy "
                   "(Lucene's exact scores, 3-4x less CPU on a small corpus; ~16 bytes a posting in memory): auto "
                   f"writes it up to {MATRIX_MAX_PASSAGES:,} passages.")
@click.option("--overwrite", is_flag=True,
              help="Replace an existing cq or Pyserini index. The new one is built beside it and swapped in only "
                   "when complete; any other non-empty directory is never touched.")
@click.option("-q", "--quiet", is_flag=True, help="No info messages on stderr.")
@compose(device_options, load_options)
def cli(corpus, out_dir, dense, encoder, query_encoder, threads, batch_size, bm25_matrix, overwrite, quiet, device,
        dtype):
    """Index a corpus for `cq retrieve`.

    The index is built in a temporary directory beside --out and moved into place only when
    complete: a failed or killed build leaves any earlier index as it was.

    \b
    Example:
      cq index --corpus passages.jsonl --out idx --dense
      cq retrieve --index idx --method hybrid --hits 20 < questions.jsonl | cq rerank

    \b
    DPR (separate question and context encoders):
      cq index --corpus passages.jsonl --out idx-dpr --dense \\
        --encoder facebook/dpr-ctx_encoder-multiset-base
    """
    from ..formats import iter_corpus
    from ..retrieval import generation
    from ..retrieval.base import DENSE_DIR, write_manifest

    if quiet:
        log.setLevel(logging.WARNING)
    out_dir = os.path.abspath(out_dir)
    replace = _check_target(out_dir, corpus, overwrite)
    if query_encoder and not dense:
        raise ResourceError("--query-encoder goes with --dense (and a DPR --encoder)")
    if not os.path.isfile(corpus):
        raise ResourceError(f"corpus {corpus} not found; pass a JSONL or DPR .tsv file of passages")
    parent = os.path.dirname(out_dir)
    os.makedirs(parent, exist_ok=True)
    name = os.path.basename(out_dir)
    remove_stale(parent, rf"^\.{re.escape(name)}\.(?:building|old)-(\d+)-")  # a killed build's leftovers
    build_dir = tempfile.mkdtemp(prefix=f".{name}.building-{os.getpid()}-", dir=parent)
    try:
        manifest = _bm25(corpus, build_dir, threads, bm25_matrix)
        if dense:
            from ..retrieval.dense import build_dense

            start = time.perf_counter()
            info = build_dense(iter_corpus(corpus), os.path.join(build_dir, DENSE_DIR), encoder, batch_size,
                               device, query_encoder=query_encoder)
            generation.write_dense(os.path.join(build_dir, DENSE_DIR), manifest["generation"])
            info["seconds"] = round(time.perf_counter() - start, 2)
            manifest["dense"] = info | {"dir": DENSE_DIR}
            log.info("dense: encoded %d passages in %.1f s", info["passages"], info["seconds"])
        write_manifest(build_dir, manifest)
        _swap_in(build_dir, out_dir, replace)
    finally:
        if os.path.exists(build_dir):
            shutil.rmtree(build_dir, ignore_errors=True)


def _bm25(corpus: str, build_dir: str, threads: int, bm25_matrix: str) -> dict:
    """Build the Lucene index, its passage store and (``bm25_matrix``) its BM25 matrix: the manifest."""
    from ..formats import iter_corpus
    from ..retrieval import docstore as ds, generation
    from ..retrieval.base import LUCENE_DIR
    from ..retrieval.lucene import build_lucene

    start = time.perf_counter()
    build_id = generation.new()  # written into every half; searches compare them (retrieval/generation.py)
    store = ds.DocStoreWriter(os.path.join(build_dir, ds.NAME), generation=build_id)
    count = build_lucene(store.tee(iter_corpus(corpus)), os.path.join(build_dir, LUCENE_DIR), threads, docstore=store)
    store.close()
    manifest = {"corpus": os.path.abspath(corpus), "passages": count, "lucene": LUCENE_DIR, "docstore": ds.NAME,
                "dense": None, "generation": build_id, "bm25_seconds": round(time.perf_counter() - start, 2),
                "cqtools": __version__}
    log.info("bm25: indexed %d passages in %.1f s", count, manifest["bm25_seconds"])
    if bm25_matrix == "yes" or (bm25_matrix == "auto" and count <= MATRIX_MAX_PASSAGES):
        manifest.update(_bm25_matrix(build_dir, required=bm25_matrix == "yes"))
    return manifest


def _bm25_matrix(build_dir: str, required: bool) -> dict:
    """Write the index's BM25 matrix (:mod:`cqtools.retrieval.matrix`): its manifest entries."""
    from ..retrieval import docstore as ds, matrix
    from ..retrieval.base import LUCENE_DIR

    start = time.perf_counter()
    store = ds.DocStore(os.path.join(build_dir, ds.NAME), cache=0)  # each passage is read once
    try:
        why = matrix.build(os.path.join(build_dir, LUCENE_DIR), store, os.path.join(build_dir, matrix.FILE))
    finally:
        store.close()
    if why and required:
        raise ResourceError(f"--bm25-matrix yes: no BM25 matrix can be written for this corpus ({why}); pass "
                            f"--bm25-matrix auto or no to index it without one (searches then use Lucene)")
    if why:
        log.warning("no BM25 matrix written (searches use Lucene): %s", why)
        return {"bm25_matrix": None}
    seconds = round(time.perf_counter() - start, 2)
    log.info("bm25: matrix written in %.1f s", seconds)
    return {"bm25_matrix": matrix.FILE, "bm25_matrix_seconds": seconds}


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
