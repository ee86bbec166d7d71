"""Shard outputs back into one: the checks and the merges behind ``cq merge``.

``--shard I/N`` keeps the records at positions p with p % N == I, so one record from each shard
in turn restores the input order. Shards written with ``--resume`` carry a run record
(cqtools/runrecord.py) that says whether the shard finished and how much input it read.
"""
from __future__ import annotations

import logging

from . import runrecord
from .errors import InputError
from .jsonl import JsonlWriter, open_input, read_records

log = logging.getLogger("cqtools")


def check_run_records(shards: tuple[str, ...]) -> list[str]:
    """Refuse shards that cannot make one complete output (see the command's help); the shards that
    have no run record (cq cannot check them), each named in a warning."""
    records = [runrecord.read(path) for path in shards]
    missing = [path for path, record in zip(shards, records) if record is None]
    if missing:
        log.warning("merge: %s has no run record (written by a redirect, not --resume): cq cannot check that "
                    "it is complete and made with the same configuration as the others", ", ".join(missing))
    present = [(path, record) for path, record in zip(shards, records) if record is not None]
    if not present:
        return missing
    first_path, first = present[0]
    for path, record in present[1:]:
        why = runrecord.difference(first, record, ignore=("shard",))
        if why:
            raise InputError(f"{path} was made with a different configuration than {first_path} ({why}); "
                             f"rerun it with the same options")
    total = len(shards)
    for index, (path, record) in enumerate(zip(shards, records)):
        if record is None:
            continue
        if record.get("shard") != [index, total] and not (total == 1 and record.get("shard") is None):
            got = "no --shard" if record.get("shard") is None else "--shard {}/{}".format(*record["shard"])
            raise InputError(f"{path} was written with {got}, but is shard {index}/{total} here; "
                             f"pass all N shard outputs in order 0..N-1")
        if not record.get("complete"):
            raise InputError(f"{path}: its run did not finish (killed?); rerun that shard with the same "
                             f"--resume {path} to complete it")
        expected = len(range(index, record["input_records"], total))
        held = _count_lines(path)
        if held != expected:
            raise InputError(f"{path} holds {held} records, but its share of the {record['input_records']} "
                             f"input records is {expected}; rerun it with --resume {path}")
        if record["input_records"] != first.get("input_records"):
            raise InputError(f"{path} read {record['input_records']} input records but {first_path} read "
                             f"{first.get('input_records')}: the shards were run on different inputs")
    return missing


def _count_lines(path: str) -> int:
    with open_input(path) as fh:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 20), b""))


def _records(path: str):
    """A shard's records; a bad line names the shard file."""
    with open_input(path) as fh:
        try:
            yield from read_records(fh, required=())
        except InputError as err:
            err.where = f"{path} {err.where}"
            raise


def interleave(shards: tuple[str, ...], writer: JsonlWriter, unchecked: list[str] | None = None) -> None:
    """One record from each shard in turn. Shard sizes must fit an I/N split of one input: never
    growing from one shard to the next, and at most one apart. With shards that have no run record
    (``unchecked``), a shard that lost its last record cannot be told from a shorter input: the
    warning names the shard that would be short."""
    streams = [_records(path) for path in shards]
    written = 0
    fix = "rerun the short shard with --resume, pass the shards in order 0..N-1, or use --order INPUT"
    while True:
        ended = None  # the first shard to run out in this round
        for n, stream in enumerate(streams):
            item = next(stream, None)
            if item is None:
                ended = n if ended is None else ended
            elif ended is not None:
                raise InputError(f"{shards[n]} has more records than {shards[ended]}: a shard is incomplete; {fix}")
            else:
                writer.write(item[1])
                written += 1
        if ended is not None:
            for n in range(ended):
                if next(streams[n], None) is not None:
                    raise InputError(f"{shards[n]} has at least two more records than {shards[ended]}: "
                                     f"a shard is incomplete; {fix}")
            break
    writer.stream.flush()
    if unchecked:
        log.warning("merge: the %d shards hold %d records, which fits an input of %d; if the input had more, %s "
                    "is short (it would hold input record %d): `cq merge --order INPUT` checks against the input",
                    len(shards), written, written, shards[written % len(shards)], written + 1)


def merge_by_input(shards: tuple[str, ...], order: str, writer: JsonlWriter) -> None:
    by_id = {}
    for path in shards:
        for _, record in _records(path):
            by_id.setdefault(record["id"], []).append(record)
    with open_input(order) as fh:
        for lineno, record in read_records(fh, required=()):
            if not by_id.get(record["id"]):
                raise InputError(f"id {record['id']} of {order} is in no shard output; "
                                 f"rerun its shard with --resume", where=f"{order} line {lineno}")
            writer.write(by_id[record["id"]].pop(0))
    left = [rid for rid, records in by_id.items() for _ in records]
    if left:
        raise InputError(f"{len(left)} shard record(s) are not in {order} (first: {left[0]}): the shards "
                         f"come from another input")
    writer.stream.flush()
