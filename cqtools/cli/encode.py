"""`cq encode`: encode one shard of a corpus into vector files (cqtools/retrieval/vectors.py), for `cq index --dense
--vectors DIR` to index once every shard is there."""
from __future__ import annotations

import logging

import click

from ..retrieval.vectors import EncodeSettings
from .declared import declared_flags
from .options import compose, device_options, load_options, parse_shard

log = logging.getLogger("cqtools")


@click.command(name="encode")
@click.option("--corpus", required=True, type=click.Path(dir_okay=False),
              help="Passages: JSONL {id, title, text} or DPR psgs_w100.tsv (id, text, title).")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False), metavar="DIR",
              help="Directory of vector files, shared by every shard of one run (created if missing).")
@click.option("--shard", callback=parse_shard, metavar="I/N",
              help="Encode only the chunks c with c % N == I (cluster array jobs) [default: the whole corpus, 0/1].")
@declared_flags(EncodeSettings)
@click.option("-q", "--quiet", is_flag=True, help="No progress bar or info messages on stderr.")
@compose(device_options, load_options)
def cli(corpus, out_dir, shard, encoder, query_encoder, batch_size, chunk, quiet, device, dtype):
    """Encode a corpus' passages (one shard of them) into vector files, for `cq index --dense --vectors DIR`.

    The corpus is cut into chunks of --chunk passages; shard I/N encodes chunks c with c % N == I, each
    written as DIR/chunk-NNNNNN.npy (float32 vectors) and .ids (their ids) under temporary names,
    then renamed. Run again, the same command encodes only the chunks not finished yet (a killed
    job loses at most one chunk). DIR/vectors.I-of-N.json records the corpus (size and checksums,
    not its path), the encoder, the chunk size and I/N; a shard with other settings than the
    manifests already in DIR is refused. `cq index --dense --vectors DIR` checks that every
    chunk is there, by one encoder, and of that corpus, then builds the same index as
    `cq index --dense` would, bit for bit.

    \b
    Example (four jobs, e.g. a SLURM array with I=$SLURM_ARRAY_TASK_ID):
      cq encode --corpus passages.jsonl --out vecs --shard $I/4 --device cuda
      cq index --corpus passages.jsonl --out idx --dense --vectors vecs
    """
    from ..retrieval.dense import PassageEncoder
    from ..retrieval.vectors import encode_shard
    from .options import run_config

    if quiet:
        log.setLevel(logging.WARNING)
    from ..data.formats import corpus_file

    corpus_file(corpus)
    config = run_config()
    passage_encoder = PassageEncoder(encoder, device, query_encoder, config)
    encode_shard(corpus, out_dir, shard or (0, 1), passage_encoder, chunk, batch_size)
