"""`cq merge`: put the outputs of `--shard I/N` jobs back into input order."""
from __future__ import annotations

import sys

import click

from ..errors import InputError
from ..jsonl import JsonlWriter, read_records


@click.command(name="merge")
@click.argument("shards", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--order", type=click.Path(exists=True, dir_okay=False), metavar="INPUT",
              help="Order by the ids of INPUT instead of interleaving (use when shards skipped records; "
                   "holds the shard outputs in memory).")
def cli(shards, order):
    """Merge shard outputs (given in shard order 0..N-1) into input order on stdout.

    `--shard I/N` keeps the records at positions p with p % N == I, so reading one
    record from each shard in turn restores the input order, streaming.

    \b
    Example:
      for i in 0 1 2 3; do cq answer --shard $i/4 --resume out.$i.jsonl < in.jsonl & done; wait
      cq merge out.0.jsonl out.1.jsonl out.2.jsonl out.3.jsonl | cq score --task cbqa
    """
    writer = JsonlWriter(sys.stdout.buffer)
    if order:
        by_id = {}
        for path in shards:
            with open(path, "rb") as fh:
                for _, record in read_records(fh, required=()):
                    by_id[record["id"]] = record
        with open(order, "rb") as fh:
            for lineno, record in read_records(fh, required=()):
                if record["id"] not in by_id:
                    raise InputError(f"id {record['id']} of {order} is in no shard output; "
                                     f"rerun its shard with --resume", where=f"{order} line {lineno}")
                writer.write(by_id.pop(record["id"]))
        writer.stream.flush()
        return
    handles = [open(path, "rb") for path in shards]
    try:
        streams = [read_records(fh, required=()) for fh in handles]
        finished = None
        while True:
            for n, stream in enumerate(streams):
                item = next(stream, None)
                if item is None:
                    finished = n if finished is None else finished
                    continue
                if finished is not None:
                    raise InputError(f"{shards[n]} has more records than {shards[finished]}: shards are "
                                     f"incomplete or out of order; pass them as 0..N-1, or use --order INPUT")
                writer.write(item[1])
            if finished is not None:
                break
        writer.stream.flush()
    finally:
        for fh in handles:
            fh.close()
