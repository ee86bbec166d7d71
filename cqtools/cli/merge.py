"""`cq merge`: put the outputs of `--shard I/N` jobs back into input order."""
from __future__ import annotations

import sys

import click

from ..jsonl import AtomicFile, JsonlWriter
from ..shards import check_run_records, interleave, merge_by_input
from .options import output_option


@click.command(name="merge")
@click.argument("shards", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--order", type=click.Path(exists=True, dir_okay=False), metavar="INPUT",
              help="Order by the ids of INPUT instead of interleaving (use when shards skipped records; "
                   "holds the shard outputs in memory).")
@output_option
def cli(shards, order, output):
    """Merge shard outputs (given in shard order 0..N-1) into input order on stdout.

    `--shard I/N` keeps the records at positions p with p % N == I, so reading one
    record from each shard in turn restores the input order, streaming. Shards written with
    `--resume OUT` carry a run record (OUT.cq.json): merge then refuses shards made with
    different configurations, shards given out of order, and shards whose run did not finish
    or holds fewer records than its share of the input. Without run records it can only check
    that the shards' sizes fit together, and says so. Shards may be gzipped (`--resume out.0.jsonl.gz`).

    \b
    Example:
      for i in 0 1 2 3; do cq answer --shard $i/4 --resume out.$i.jsonl < in.jsonl & done; wait
      cq merge out.0.jsonl out.1.jsonl out.2.jsonl out.3.jsonl | cq score --task cbqa
    """
    unchecked = check_run_records(shards)
    out = AtomicFile(output) if output else None
    writer = JsonlWriter(out or sys.stdout.buffer)
    try:
        if order:
            merge_by_input(shards, order, writer)
        else:
            interleave(shards, writer, unchecked)
        if out:
            out.commit()
    finally:
        if out:
            out.abort()
