"""`cq show`: print records for people (question, passages, ambiguity, CQ, answers)."""
from __future__ import annotations

import sys

import click

from .options import stream_options
from .stream import batched, click_stdin, record_problem
from ..errors import InputError
from ..jsonl import open_input, read_records
from ..show import ShowSettings, render
from .declared import declared_flags
from ..terminal import safe


@click.command(name="show")
@click.argument("files", nargs=-1, type=click.Path(exists=True, dir_okay=False))
@declared_flags(ShowSettings)
@click.option("--gold", is_flag=True, help="Also print each record's gold (what `cq score` compares with).")
@click.option("--tree", "tree", is_flag=True, help="Draw each record's Tree of Clarifications (its \"tree\" from "
              "cq disambiguate --tree or --preset toc) instead of listing its disambiguations.")
@stream_options
def cli(files, passages, gold, tree, on_error, quiet):
    """Print records readably (the end of a pipeline, for people; not JSONL): from FILES (JSONL,
    gzipped or not), or standard input when none is given.

    \b
    Example:
      cq retrieve --index idx < questions.jsonl | cq show --passages 2
      cq show --gold answered.jsonl.gz
      cq disambiguate --method rac --tree < reranked.jsonl | cq show --tree --passages 0
    """
    for name, stream in _inputs(files):
        records = read_records(stream, required=(), on_error=on_error)
        for batch in batched(records, 64):
            for lineno, record in batch:
                problem = record_problem(record, ())
                if problem and on_error != "skip":
                    where = f"{name} line {lineno}" if name else f"line {lineno}"
                    raise InputError(f"{problem} (record {record['id']}); pass --on-error skip to show the rest",
                                     where=where)
                shown = render(record, passages, gold, tree) + (f"\n    not shown: {problem}" if problem else "")
                click.echo(safe(shown) + "\n")  # records' text is untrusted: its escapes are shown, not run
            sys.stdout.flush()


def _inputs(files):
    """(name, binary stream) of each file in turn, or of standard input (name None)."""
    if not files:
        yield None, click_stdin()
        return
    for path in files:
        with open_input(path) as stream:
            yield path, stream
