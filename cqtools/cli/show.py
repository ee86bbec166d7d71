"""`cq show`: print records for people (question, passages, ambiguity, CQ, answers)."""
from __future__ import annotations

import sys

import click

from .options import stream_options
from .stream import batched, click_stdin, record_problem
from ..errors import InputError
from ..jsonl import read_records
from ..show import render


@click.command(name="show")
@click.option("--passages", type=click.IntRange(min=0), default=3, show_default=True, help="Passages to print per record.")
@stream_options
def cli(passages, on_error, quiet):
    """Print records readably (the end of a pipeline, for people; not JSONL).

    \b
    Example:
      cq retrieve --index idx < questions.jsonl | cq show --passages 2
    """
    records = read_records(click_stdin(), required=(), on_error=on_error)
    for batch in batched(records, 64):
        for lineno, record in batch:
            problem = record_problem(record, ())
            if problem and on_error != "skip":
                raise InputError(f"{problem} (record {record['id']}); pass --on-error skip to show the rest",
                                 where=f"line {lineno}")
            click.echo(render(record, passages) + (f"\n    not shown: {problem}" if problem else "") + "\n")
        sys.stdout.flush()
