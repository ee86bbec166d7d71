"""The one loop every stage command runs: read records lazily, keep this shard's share,
skip what ``--resume`` already has, map a batch function, write as it goes.

Memory stays constant in the input size: records are pulled through ``islice`` one batch
at a time and written (and flushed) before the next batch is read.

Under a multi-process launcher (``accelerate launch --multi_gpu --num_processes N -m cqtools ...``,
or torchrun: ``WORLD_SIZE`` > 1) only the main process reads stdin; it hands each process one
batch per round (consecutive batches, so every batch is the one a single process would have
formed), gathers the results and writes them in input order: the output is that of one process.
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
    if _world_size() > 1:
        return _run_distributed(process, spec, stdin, stdout)
    stdin = stdin if stdin is not None else click_stdin()
    skipped = Skipped()
    records, out_fh = _input_records(spec, stdin, skipped)
    writer = JsonlWriter(out_fh or (stdout if stdout is not None else sys.stdout.buffer))
    bar = tqdm(desc=spec.desc, unit="rec", file=sys.stderr, disable=spec.quiet or not sys.stderr.isatty())
    try:
        for batch in batched(records, spec.batch_size):
            recs = [r for _, r in batch]
            try:
                out = process(recs)
            except CQError as err:
                if err.where is None:
                    err.where = _locate(err, batch)
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


def _locate(err: CQError, batch: list[tuple[int, dict]]) -> str:
    """``line N`` of the record an error names, else the batch's line range."""
    for lineno, record in batch:
        if err.record_id is not None and record["id"] == err.record_id:
            return f"line {lineno}"
    if len(batch) == 1:
        return f"line {batch[0][0]} (record {batch[0][1]['id']})"
    return f"lines {batch[0][0]}-{batch[-1][0]}"


def _world_size() -> int:
    try:
        return int(os.environ.get("WORLD_SIZE", "1"))
    except ValueError:
        return 1


def _input_records(spec: StreamSpec, stdin, skipped: Skipped):
    """This run's (line number, record) pairs and the file ``--resume`` appends to (or None)."""
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
    return records, out_fh


def _run_distributed(process: BatchFn, spec: StreamSpec, stdin=None, stdout=None) -> int:
    """One round per ``world`` batches: the main process reads and scatters them, every process
    runs ``process`` on its batch, the main process gathers and writes in input order.

    A failure in any process stops every process; the main one raises it as a CQError."""
    import torch.distributed as dist
    from accelerate import PartialState

    PartialState()  # joins the process group the launcher set up (and picks this process's device)
    if not dist.is_initialized():
        dist.init_process_group("gloo")
    group = dist.new_group(backend="gloo")  # records travel as pickled objects, on CPU
    rank, world = dist.get_rank(), dist.get_world_size()
    main = rank == 0
    if not main:
        logging.getLogger("cqtools").setLevel(logging.WARNING)
    skipped = Skipped()
    records = out_fh = writer = bar = None
    if main:
        stdin = stdin if stdin is not None else click_stdin()
        records, out_fh = _input_records(spec, stdin, skipped)
        records = iter(records)
        writer = JsonlWriter(out_fh or (stdout if stdout is not None else sys.stdout.buffer))
        bar = tqdm(desc=spec.desc, unit="rec", file=sys.stderr, disable=spec.quiet or not sys.stderr.isatty())
        log.info("%s: %d processes, batches of %d", spec.desc, world, spec.batch_size)
    failure = None  # an input error on the main process, raised after the records before it
    try:
        while True:
            parts = None
            if main:
                parts = []
                while len(parts) < world and failure is None:
                    part: list = []
                    try:
                        part.extend(islice(records, spec.batch_size))  # keeps what came before an error
                    except CQError as err:
                        failure = err
                    parts.append(part)
                    if len(part) < spec.batch_size:
                        break
                parts += [[]] * (world - len(parts))
                if not any(parts):
                    parts = [None] * world  # end of input (or a failure): everyone stops
            box = [None]
            dist.scatter_object_list(box, parts, src=0, group=group)
            if box[0] is None:
                break
            result = _run_part(process, box[0])
            gathered = [None] * world if main else None
            dist.gather_object(result, gathered, dst=0, group=group)
            if not main:
                continue
            for part, (status, payload) in zip(parts, gathered):
                if status == "error":
                    failure = payload
                    break
                writer.write_all(payload)
                bar.update(len(part))
            if failure is not None:
                dist.scatter_object_list([None], [None] * world, src=0, group=group)
                raise failure
    finally:
        if main:
            bar.close()
            if out_fh:
                out_fh.close()
    if skipped.count:
        log.warning("skipped %d malformed line(s)", skipped.count)
    return writer.written if main else 0


def _run_part(process: BatchFn, batch: list) -> tuple[str, object]:
    """Run ``process`` on one process's batch; failures come back as values, not exceptions,
    so that no process is left waiting in a collective call."""
    if not batch:
        return "ok", []
    recs = [r for _, r in batch]
    try:
        out = process(recs)
        if len(out) != len(recs):
            raise CQError(f"internal: stage returned {len(out)} records for {len(recs)}")
        return "ok", out
    except CQError as err:  # pickles with its where/record_id (exceptions carry their __dict__)
        if err.where is None:
            err.where = _locate(err, batch)
        return "error", err
    except Exception as err:  # noqa: BLE001 - reported by the main process
        if os.environ.get("CQ_DEBUG"):
            import traceback

            traceback.print_exc()
        return "error", CQError(f"{type(err).__name__}: {err}", f"lines {batch[0][0]}-{batch[-1][0]}")


def batched(items: Iterable, size: int) -> Iterator[list]:
    """Lists of up to ``size`` items. If the source raises (a malformed line under
    ``--on-error fail``), the items read before it are yielded first, then the error."""
    it = iter(items)
    while True:
        batch: list = []
        try:
            batch.extend(islice(it, size))
        except CQError as err:
            if batch:
                yield batch
            raise err
        if batch:
            yield batch
        if len(batch) < size:
            return


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
