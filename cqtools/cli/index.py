"""`cq index`: build a Pyserini Lucene (BM25) index and, with --dense, a faiss index."""
from __future__ import annotations

import logging
import os
import shutil
import time

import click

from .. import __version__
from ..errors import ResourceError
from .options import device_options

log = logging.getLogger("cqtools")


@click.command(name="index")
@click.option("--corpus", required=True, type=click.Path(dir_okay=False),
              help="Passages: JSONL {id, title, text} or DPR psgs_w100.tsv (id, text, title).")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False), help="Index directory to create.")
@click.option("--dense", is_flag=True, help="Also build a dense faiss index (Pyserini layout).")
@click.option("--encoder", default="sentence-transformers/all-MiniLM-L6-v2", show_default=True,
              envvar="CQ_MODEL_ENCODER", help="Sentence-transformers encoder: hub id, local dir or offline copy.")
@click.option("--threads", type=click.IntRange(min=1), default=os.cpu_count() or 1, show_default="number of CPUs")
@click.option("--batch-size", type=click.IntRange(min=1), default=128, show_default=True, help="Encoding batch size.")
@click.option("--overwrite", is_flag=True, help="Replace an existing index directory.")
@device_options
def cli(corpus, out_dir, dense, encoder, threads, batch_size, overwrite, device, dtype):
    """Index a corpus for `cq retrieve`.

    \b
    Example:
      cq index --corpus passages.jsonl --out idx --dense
      cq retrieve --index idx --method hybrid --hits 20 < questions.jsonl | cq rerank
    """
    from ..formats import iter_corpus
    from ..retrieval import docstore as ds
    from ..retrieval.base import DENSE_DIR, LUCENE_DIR, write_manifest
    from ..retrieval.lucene import build_lucene

    if os.path.exists(out_dir) and os.listdir(out_dir):
        if not overwrite:
            raise ResourceError(f"{out_dir} already exists and is not empty; pass --overwrite to replace it")
        shutil.rmtree(out_dir)
    os.makedirs(out_dir, exist_ok=True)
    start = time.perf_counter()
    store = ds.DocStoreWriter(os.path.join(out_dir, ds.NAME))
    count = build_lucene(store.tee(iter_corpus(corpus)), os.path.join(out_dir, LUCENE_DIR), threads, docstore=store)
    store.close()
    manifest = {"corpus": os.path.abspath(corpus), "passages": count, "lucene": LUCENE_DIR, "docstore": ds.NAME,
                "dense": None,
                "bm25_seconds": round(time.perf_counter() - start, 2), "cqtools": __version__}
    log.info("bm25: indexed %d passages in %.1f s", count, manifest["bm25_seconds"])
    if dense:
        from ..retrieval.dense import build_dense

        start = time.perf_counter()
        info = build_dense(iter_corpus(corpus), os.path.join(out_dir, DENSE_DIR), encoder, batch_size,
                           "cpu" if device == "auto" else device)
        info["seconds"] = round(time.perf_counter() - start, 2)
        manifest["dense"] = info | {"dir": DENSE_DIR}
        log.info("dense: encoded %d passages in %.1f s", info["passages"], info["seconds"])
    write_manifest(out_dir, manifest)
