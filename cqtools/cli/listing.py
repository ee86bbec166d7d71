"""What every listing command (cq models, cq presets, cq cache info, cq data list) shares: a table with
a header on a terminal, JSONL (one object per row) when stdout is piped or with --json; --table asks
for the table anywhere (e.g. piped into less)."""
from __future__ import annotations

import sys

import click
import orjson

WIDEST = 60  # a cell longer than this is cut, with "..." (the JSONL has it whole)


def listing_options(func):
    """``--json`` and ``--table`` (the command receives ``as_json`` and ``as_table``)."""
    func = click.option("--table", "as_table", is_flag=True,
                        help="A table even when stdout is not a terminal.")(func)
    return click.option("--json", "as_json", is_flag=True,
                        help="JSONL rows (one object per line) even on a terminal; piped output is JSONL anyway.")(func)


def wants_table(as_json: bool, as_table: bool) -> bool:
    if as_json and as_table:
        raise click.UsageError("--json and --table: pick one")
    return as_table or (not as_json and sys.stdout.isatty())


def cell(value) -> str:
    if value is None:
        return "-"
    text = value if isinstance(value, str) else orjson.dumps(value).decode() if isinstance(value, (dict, list)) \
        else str(value)
    text = " ".join(text.split())
    return text if len(text) <= WIDEST else text[:WIDEST - 3] + "..."


def table(rows: list[dict], columns: list[str]) -> str:
    """``rows`` as a text table of ``columns`` with a header line (upper-case column names)."""
    cells = [[cell(r.get(c)) for c in columns] for r in rows]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(columns)]
    lines = ["  ".join(c.upper().ljust(w) for c, w in zip(columns, widths)).rstrip()]
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip() for row in cells]
    return "\n".join(lines)


def emit(rows: list[dict], columns: list[str], as_json: bool, as_table: bool) -> None:
    """The rows as a table (``columns``) or as JSONL, as :func:`wants_table` decides."""
    if wants_table(as_json, as_table):
        click.echo(table(rows, columns))
        return
    for row in rows:
        sys.stdout.buffer.write(orjson.dumps(row) + b"\n")
