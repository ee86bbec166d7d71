"""The one loop every stage command runs: read records lazily, keep this shard's share,
skip what ``--resume`` already has, map a batch function, write as it goes.

Memory stays constant in the input size: records are pulled through ``islice`` one batch
at a time and written (and flushed) before the next batch is read.
"""
from __future__ import annotations

import logging
import os
import sys
from dataclasses import dataclass
from itertools import islice
from typing import Callable, Iterable, Iterator

import orjson
from tqdm import tqdm

from ..errors import CQError, InputError
from ..jsonl import JsonlWriter, Skipped, read_records

log = logging.getLogger("cqtools")

BatchFn = Callable[[list[dict]], list[dict]]


@dataclass
class StreamSpec:
    """What a command asked for on its command line (the stream/scale option bundles)."""

    on_error: str = "fail"
    quiet: bool = False
    batch_size: int = 32
    shard: tuple[int, int] | None = None
    resume: str | None = None
    required: tuple[str, ...] = ("question",)
    desc: str = "records"


def spec_from(kwargs: dict, **overrides) -> StreamSpec:
    """Pop the shared options out of a command's kwargs into a :class:`StreamSpec`."""
    spec = StreamSpec(
        on_error=kwargs.pop("on_error", "fail"),
        quiet=kwargs.pop("quiet", False),
        batch_size=kwargs.pop("batch_size", 32),
        shard=kwargs.pop("shard", None),
        resume=kwargs.pop("resume", None),
    )
    for key, value in overrides.items():
        setattr(spec, key, value)
    if spec.quiet:
        logging.getLogger("cqtools").setLevel(logging.WARNING)
    return spec


def run_stream(process: BatchFn, spec: StreamSpec, stdin=None, stdout=None) -> int:
    """Run ``process`` over every record of stdin and write its output; returns records written.

    ``process`` gets a list of records and must return one record per input, in order.
    Errors carry the failing record's id; everything written before them stays written.
    """
    stdin = stdin if stdin is not None else click_stdin()
    skipped = Skipped()
    records = read_records(stdin, spec.required, spec.on_error, skipped)
    if spec.shard is not None:
        records = _take_shard(records, *spec.shard)
    out_fh = None
    if spec.resume:
        done = _ids_done(spec.resume)
        if done:
            log.info("resume: %d records already in %s", len(done), spec.resume)
        records = ((n, r) for n, r in records if r["id"] not in done)
        out_fh = open(spec.resume, "ab")
    writer = JsonlWriter(out_fh or (stdout if stdout is not None else sys.stdout.buffer))
    bar = tqdm(desc=spec.desc, unit="rec", file=sys.stderr, disable=spec.quiet or not sys.stderr.isatty())
    try:
        for batch in batched(records, spec.batch_size):
            recs = [r for _, r in batch]
            try:
                out = process(recs)
            except CQError as err:
                if err.where is None:
                    err.where = f"line {batch[0][0]} (record {recs[0]['id']})" if len(batch) == 1 else (
                        f"lines {batch[0][0]}-{batch[-1][0]}")
                raise
            if len(out) != len(recs):
                raise CQError(f"internal: stage returned {len(out)} records for {len(recs)}")
            writer.write_all(out)
            bar.update(len(recs))
    finally:
        bar.close()
        if out_fh:
            out_fh.close()
    if skipped.count:
        log.warning("skipped %d malformed line(s)", skipped.count)
    return writer.written


def batched(items: Iterable, size: int) -> Iterator[list]:
    it = iter(items)
    while batch := list(islice(it, size)):
        yield batch


def click_stdin():
    return sys.stdin.buffer


def _take_shard(records, index: int, total: int):
    for position, item in enumerate(records):
        if position % total == index:
            yield item


def _ids_done(path: str) -> set[str]:
    """Ids already written to ``path``; a torn last line (killed mid-write) is cut off."""
    if not os.path.exists(path):
        return set()
    done: set[str] = set()
    good_end = 0
    with open(path, "rb") as fh:
        for raw in fh:
            if not raw.endswith(b"\n"):
                break
            try:
                done.add(str(orjson.loads(raw)["id"]))
            except (orjson.JSONDecodeError, KeyError, TypeError):
                raise InputError(f"{path} has a line that is not a cq record; pass a file cq wrote") from None
            good_end += len(raw)
    if good_end != os.path.getsize(path):
        log.warning("resume: dropping a partly written last line of %s", path)
        with open(path, "r+b") as fh:
            fh.truncate(good_end)
    return done
