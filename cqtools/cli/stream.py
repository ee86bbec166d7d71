"""The stream loop as the commands run it (the engine is :mod:`cqtools.stream`): the shared options popped into
a :class:`StreamSpec`, the command's flags, the preset and the run configuration taken from click's context,
standard input with a hint when it is a terminal."""
from __future__ import annotations

import logging
import sys

import click

from ..errors import InputError
from ..stream import EMPTY_HINTS, ERRORS, StreamSpec, apply, batched, count_records, read_files, record_problem
from ..stream import run_stream as run_engine
from ..stream.inputs import FileLine

log = logging.getLogger("cqtools")


def spec_from(kwargs: dict, **overrides) -> StreamSpec:
    """Pop the shared options out of a command's kwargs into a :class:`StreamSpec`."""
    spec = StreamSpec(
        on_error=kwargs.pop("on_error", "fail"),
        quiet=kwargs.pop("quiet", False),
        batch_size=kwargs.pop("batch_size", 32),
        shard=kwargs.pop("shard", None),
        resume=kwargs.pop("resume", None),
        force_resume=kwargs.pop("force_resume", False),
        output=kwargs.pop("output", None),
        inputs=tuple(kwargs.pop("inputs", ()) or ()),
        total=kwargs.pop("total", None),
    )
    for key, value in overrides.items():
        setattr(spec, key, value)
    if spec.quiet:
        logging.getLogger("cqtools").setLevel(logging.WARNING)
    if spec.output and spec.resume:
        raise click.UsageError("-o/--output and --resume both name the output: use -o FILE for an all-or-nothing "
                               "file, --resume OUT for one that a killed run can continue")
    return spec


def run_stream(process, spec: StreamSpec, stdin=None, stdout=None) -> int:
    """The engine's :func:`cqtools.stream.run_stream` with what click knows: the command's name and flags for
    the run record, the preset it runs under, the run configuration, and standard input."""
    from .options import run_config

    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        if spec.command is None and getattr(process, "cq_command", None):
            spec.command = ctx.command.name
            spec.params = {**ctx.meta.get("cq.params", {}), **ctx.params, **process.cq_params}
        spec.preset = spec.preset or ctx.meta.get("cq.preset")
        spec.preset_rows = spec.preset_rows or ctx.meta.get("cq.preset_rows")
        spec.stage = spec.stage or ctx.command.name
    spec.config = spec.config or (run_config(ctx) if ctx is not None else None)  # None: the engine's from_env
    if stdin is None and not spec.inputs:
        stdin = click_stdin()
    return run_engine(process, spec, stdin, stdout)


def click_stdin():
    """Standard input; a terminal there gets a hint on stderr (the stage waits for records typed or pasted)."""
    if sys.stdin is None:  # closed (<&-): cli.main held its number
        raise InputError("standard input is closed (<&-): give the records on it (< FILE or a pipe) or name "
                         "them as FILE arguments")
    if sys.stdin.isatty():
        log.warning("reading JSONL records from the terminal: paste or type them, end with Ctrl-D; or give a "
                    "file: cq COMMAND < records.jsonl")
    return sys.stdin.buffer


__all__ = ["StreamSpec", "spec_from", "run_stream", "apply", "record_problem", "batched", "click_stdin",
           "read_files", "count_records", "FileLine", "EMPTY_HINTS", "ERRORS"]


QUESTION = ("question", "every record needs a question")


def checked_first(spec: StreamSpec, *needs: tuple[str, str], when=None):
    """Standard input (or None, for FILE arguments) once its first record has been read and checked, before the
    command loads any model: a line that is not a JSON object, or a record without one of ``needs`` ((key,
    hint) pairs; with ``when``, only a record ``when(record)`` accepts), is the one-line error the run would
    end with, seconds instead of a model load. Input the first record of which cannot be seen without waiting on
    an upstream stage is checked as it arrives, as before."""
    import io

    from ..jsonl import read_records
    from ..records import require
    from ..stream.inputs import first_line

    stdin = None if spec.inputs else click_stdin()
    where, line, stdin = first_line(stdin, spec.inputs)
    if line is None or spec.on_error == "skip":
        return stdin
    try:
        for _, record in read_records(io.BytesIO(line), spec.required):
            if when is None or when(record):
                for key, hint in needs:
                    require(record, key, hint)
    except InputError as err:
        err.where = f"line {where}"
        raise
    return stdin
