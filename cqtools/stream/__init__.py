"""The one loop every stage command runs: read records lazily, check them, keep this shard's share,
skip what ``--resume`` already has, map a batch function, write as it goes.

Memory stays constant in the input size: records are pulled through ``islice`` one batch
at a time and written (and flushed) before the next batch is read.

One record out per record in, always in input order. A record a stage cannot handle (a
``question`` that is not a string, a stage error naming the record) stops the run under
``--on-error fail``; under ``--on-error skip`` it is written through unchanged with the reason
under ``errors.<stage>`` and the rest of its batch is processed as usual. Only a line that is not
a JSON object at all is dropped (it is no record); each is reported with its line number.

``--resume OUT`` resumes by input position: OUT's complete lines are the first records of this
run's input (their ids are checked in order), a torn last line is cut off, and the run record
``OUT.cq.json`` (cqtools/runrecord.py) must show the same configuration. ``-o FILE`` instead writes
all or nothing: a temp file renamed to FILE when the input is exhausted. Either is gzip if named
``.gz``; gzip input (a file or stdin) is recognised by its magic bytes. ``spec.sinks`` (``cq retrieve
--run``) see every record written, OUT's earlier ones included, and are committed with the run.

Under a multi-process launcher (``accelerate launch --multi_gpu --num_processes N -m cqtools ...``,
or torchrun: ``WORLD_SIZE`` > 1) only the main process reads stdin; it hands each process one
batch per round (consecutive batches, so every batch is the one a single process would have
formed), gathers the results and writes them in input order: the output is that of one process.
"""
from __future__ import annotations

import logging
import os
import sys
from itertools import islice
from typing import Callable

from .. import progress, resume_lock, runrecord
from ..config import RunConfig, env
from ..jsonl import AtomicFile, JsonlWriter, Skipped, batched, open_append, open_input, read_records
from . import refusals
from .batches import ERRORS, apply, record_problem
from .batches import checked_items
from .inputs import Counted, take_shard, already_there, count_records, count_stdin, read_files
from .spec import StreamSpec, not_shaping

log = logging.getLogger("cqtools")

BatchFn = Callable[[list[dict]], list[dict]]

# What each stage adds, and the likely cause when it is empty on every record (said once, on stderr); a cause
# that depends on the stage's method is keyed by it (None: any other method).
_UNLABELLED = "gen-cq writes a CQ only where ambiguity.label is true (run cq detect first, or pass --all), or "
EMPTY_HINTS = {
    "retrieve": ("passages", "the index matched none of the questions: check --index (and the corpus it holds)"),
    "gen-cq": ("cq", {
        "pred-answers": _UNLABELLED + "pred-answers found fewer than two options in any record: the records have no "
                        "passages (run cq retrieve first) or none the reranker scored at least --min-rerank-score "
                        "(run cq rerank; a lower floor offers less relevant ones), and one answer is not a choice",
        "from-dqs": _UNLABELLED + "no record's gold holds two interpretations or more (from-dqs asks nothing where "
                                  "the gold is unambiguous)",
        None: _UNLABELLED + "the model wrote no question (a tiny LM often cannot: try a stronger --model)"}),
    "disambiguate": ("dqs", "the model wrote nothing usable (a tiny LM often cannot: try a stronger --model), or "
                            "--method qd found no 'answers' to disambiguate (run cq answer --mode multi first)"),
    "answer": ("answers", "the reader found no answer in the passages shown (are there passages? run cq retrieve "
                          "first, or raise --passages)"),
}


def _total(spec: StreamSpec, stdin) -> int | None:
    """The progress line's total: --total, or the records of the FILE arguments or of a regular file on stdin."""
    total = spec.total if spec.total is not None or spec.quiet else count_records(spec.inputs)
    if total is None and not spec.quiet and not spec.inputs:  # `cq STAGE < file`: the file's records
        total = count_stdin(stdin if stdin is not None else sys.stdin.buffer)
    if total is not None and spec.shard is not None:
        total = len(range(spec.shard[0], total, spec.shard[1]))
    return total


class _Run:
    """This run's input (read, checked, sharded, resumed) and output (stdout, ``-o FILE``, or
    ``--resume OUT`` with its run record), and the sinks that see what is written."""

    def __init__(self, spec: StreamSpec, stdin, stdout):
        self.spec = spec
        self.skipped = Skipped()
        # whole: the input is all there already (reading a batch ahead then waits for nothing; from a pipe it
        # would hold this batch's output until the next batch arrives: a person typing, a slow stage upstream)
        if spec.inputs and stdin is None:
            source = read_files(spec.inputs, spec.on_error, self.skipped)
            self.whole = all(os.path.isfile(path) for path in spec.inputs)
        else:
            stream = stdin if stdin is not None else sys.stdin.buffer
            source = read_records(stream, (), spec.on_error, self.skipped)
            self.whole = already_there(stream)
        self.counted = Counted(source)
        total = _total(spec, stdin)  # before any output is opened: nothing to clean up if it fails
        records = iter(self.counted)
        if spec.shard is not None:
            records = take_shard(records, *spec.shard)
        self.out_fh = None
        self.record = None
        self.done = 0
        self.filled = 0  # records written whose stage output (EMPTY_HINTS) is not empty
        self.lock = None
        if spec.resume:
            self.lock = resume_lock.lock(spec.resume)  # held until close() (or this process's end)
            try:
                records = self._open_resume(spec, records)
            except BaseException:
                resume_lock.unlock(self.lock)
                self.lock = None
                raise
        elif spec.output:
            self.out_fh = AtomicFile(spec.output)
        self.items = checked_items(records, spec)
        self.writer = JsonlWriter(self.out_fh or (stdout if stdout is not None else sys.stdout.buffer))
        self.bar = progress.record_bar(spec.desc, total, not spec.quiet and sys.stderr.isatty(), spec.quiet)

    def _open_resume(self, spec: StreamSpec, records):
        """Check OUT's run record, skip the records it holds, open it for appending."""
        command, params = (spec.command, spec.params or {}) if spec.command else runrecord.command_and_params()
        self.record, self.done = runrecord.open_resume(spec.resume, command, params, spec.force_resume,
                                                       shard=list(spec.shard) if spec.shard else None,
                                                       config=spec.config, ignore=not_shaping(command, params))
        if self.done:
            log.info("resume: %d records already in %s", self.done, spec.resume)
            records = runrecord.skip_done(records, spec.resume, self.done)
        self.out_fh = open_append(spec.resume)
        self._replay(spec.resume, self.done)
        return records

    def _replay(self, path: str, done: int) -> None:
        """Sinks see the records OUT already holds, so that they cover the whole output."""
        if self.spec.sinks and done:
            with open_input(path) as fh:
                for _, record in islice(read_records(fh, required=()), done):
                    for sink in self.spec.sinks:
                        sink.write([record])

    def write(self, records: list, n_inputs: int) -> None:
        records = [r for group in records for r in group] if self.spec.fanout else records
        watched = EMPTY_HINTS.get(self.spec.desc)
        if watched is not None:
            self.filled += sum(1 for r in records if isinstance(r, dict) and r.get(watched[0]) not in (None, [], {}, "")
                               and ERRORS not in r)
        self.writer.write_all(records)
        for sink in self.spec.sinks:
            sink.write(records)
        self.bar.update(n_inputs)

    def finish(self) -> None:
        """The input is exhausted: say so in the run record (cq merge checks it), and off a terminal in one last
        progress line when the stage took a few seconds (progress.Lines.end)."""
        getattr(self.bar, "end", lambda: None)()
        if self.record is not None:
            self.record.update(complete=True, input_records=self.counted.count,
                               records_written=self.done + self.writer.written)
            runrecord.write(self.spec.resume, self.record)
        if self.skipped.count:
            log.warning("skipped %d malformed line(s)", self.skipped.count)
        if not self.counted.count:
            where = ", ".join(self.spec.inputs) if self.spec.inputs else "standard input"
            log.warning("%s: 0 records on %s: nothing to do", self.spec.desc, where)
        elif self.writer.written and not self.filled and self.spec.desc in EMPTY_HINTS:
            key, hint = EMPTY_HINTS[self.spec.desc]
            if isinstance(hint, dict):
                method = (self.spec.params or {}).get("method")
                hint = hint.get(method, hint[None])
            log.warning("%s: '%s' is empty on every one of the %d records written; likely: %s", self.spec.desc, key,
                        self.writer.written, hint)
        if isinstance(self.out_fh, AtomicFile):
            self.out_fh.commit()
        for sink in self.spec.sinks:
            sink.commit()

    def close(self) -> None:
        """After :meth:`finish` (committed), or after a failure: ``-o`` and sinks leave no file behind."""
        self.bar.close()
        for sink in self.spec.sinks:
            sink.abort()
        if isinstance(self.out_fh, AtomicFile):
            self.out_fh.abort()
        elif self.out_fh:
            self.out_fh.close()
        if self.lock is not None:
            resume_lock.unlock(self.lock)
            self.lock = None


def run_stream(process: BatchFn, spec: StreamSpec, stdin=None, stdout=None) -> int:
    """Run ``process`` over every record of stdin and write its output; returns records written.

    ``process`` gets a list of records and must return one record per input, in order (with
    ``spec.fanout``: one list of records per input).
    Errors carry the failing record's id; everything written before them stays written.
    """
    if spec.command is None and getattr(process, "cq_command", None):
        # the run record holds the options the method runs with (its schema's values); the CLI puts the
        # command's other flags in spec.params first (cqtools/cli/stream.py)
        spec.command = process.cq_command
        spec.params = {**(spec.params or {}), **process.cq_params}
    if spec.config is None:
        spec.config = RunConfig.from_env()
    preset = spec.preset or getattr(process, "cq_preset", None)
    if preset and spec.params is not None:
        spec.params = {**spec.params, "preset": preset}  # the run record names it, from the CLI or Python
    stage = spec.stage or spec.command or getattr(process, "cq_command", None) or spec.desc
    if preset:
        process = _noting_preset(process, stage, preset, spec.fanout,
                                 spec.preset_rows or getattr(process, "cq_preset_rows", None))
    if spec.config.usage:
        from .usage import noting_usage

        process = noting_usage(process, stage, spec.fanout)
    if _world_size() > 1:
        from .distributed import run_distributed

        return run_distributed(process, spec, stdin, stdout, new_run=_Run, apply=apply)
    run = _Run(spec, stdin, stdout)
    step = _call_size(spec, run.bar)
    processed = 0
    ahead = getattr(process, "prefetch", None) if step == spec.batch_size and run.whole else None
    try:
        for batch in _looking_ahead(batched(run.items, spec.batch_size), ahead):
            for start in range(0, len(batch), step):
                part = batch[start:start + step]
                run.write(apply(process, part, spec), len(part))
                processed += len(part)
        run.finish()
        refusals.check(spec.refused, processed, spec.desc)
    finally:
        run.close()
    return run.writer.written


def _looking_ahead(batches, prefetch):
    """``batches``, each read one batch early when the stage has a ``prefetch`` hint: the next batch's
    records are shown to it before the current batch is processed, so it can start on them meanwhile
    (cq retrieve searches them in the JVM while Python turns this batch's hits into passages). A
    reading error after a batch still comes after that batch is processed and written."""
    if prefetch is None:
        yield from batches
        return
    current = next(batches, None)
    while current is not None:
        try:
            following = next(batches, None)
        except Exception:
            yield current
            raise
        if following is not None:
            prefetch([item.record for item in following if not item.problem])
        yield current
        current = following


def _call_size(spec: StreamSpec, bar) -> int:
    """Records per call of the stage: the batch, except under a progress bar (a terminal), where records go
    one at a time so that the bar moves per record. The records are the same either way (every backend
    computes each input alone: docs/benchmarks/determinism.md); API stages keep --concurrency records per
    call (their requests stay in flight together), and padded batches (CQ_PADDED_BATCHES=1) keep the batch."""
    if bar.disable or spec.config.padded_batches:
        return spec.batch_size
    from ..models.openai_backend import settings

    api = settings(spec.config)
    return max(1, min(spec.batch_size, api.concurrency)) if api.api_base else 1


def _noting_preset(process: BatchFn, command: str, preset: str, fanout: bool, rows: dict | None = None) -> BatchFn:
    """``process`` that also notes ``meta.presets.<command> = preset`` on every record it returns, and which of its
    rows applied (``meta.preset_rows.<command>``: :func:`cqtools.presets.rows_note`)."""

    def note(record):
        if isinstance(record, dict):
            meta = record.setdefault("meta", {})
            meta.setdefault("presets", {})[command] = preset
            if rows is not None:
                meta.setdefault("preset_rows", {})[command] = {k: (list(v) if isinstance(v, list) else dict(v))
                                                               for k, v in rows.items()}
        return record

    def run(records):
        out = process(records)
        return [[note(r) for r in group] if fanout else note(group) for group in out]

    for attr in ("cq_command", "cq_params", "prefetch"):
        if hasattr(process, attr):
            setattr(run, attr, getattr(process, attr))
    return run


def _world_size() -> int:
    try:
        return int(env("WORLD_SIZE", "1"))
    except ValueError:
        return 1


__all__ = ["StreamSpec", "run_stream", "apply", "record_problem", "batched", "read_files", "count_records", "ERRORS",
           "EMPTY_HINTS"]
