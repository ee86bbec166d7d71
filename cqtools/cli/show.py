"""`cq show`: print records for people (question, passages, ambiguity, CQ, answers)."""
from __future__ import annotations

import sys
import textwrap

import click

from .options import stream_options
from .stream import batched, click_stdin
from ..jsonl import read_records


def render(record: dict, passages: int) -> str:
    lines = [f"[{record['id']}] {record.get('question', '')}"]
    for hit in record.get("passages", [])[:passages]:
        text = textwrap.shorten(hit.get("text", ""), 90)
        lines.append(f"    {hit.get('rank', '-'):>3}. {hit.get('score', 0):7.3f}  {hit.get('title', '')}: {text}")
    if "ambiguity" in record:
        amb = record["ambiguity"]
        lines.append(f"    ambiguous: {amb.get('label')} (score {amb.get('score')}, {amb.get('method')})")
    if record.get("cq"):
        lines.append(f"    clarify: {record['cq'].get('text')}")
    for answer in record.get("answers", []):
        option = f"{answer['option']}: " if answer.get("option") else ""
        lines.append(f"    answer: {option}{answer.get('text')}")
    if record.get("long_answer"):
        lines.append("    long answer: " + textwrap.shorten(record["long_answer"], 200))
    return "\n".join(lines)


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
        for _, record in batch:
            click.echo(render(record, passages) + "\n")
        sys.stdout.flush()
