"""`cq show`: print records for people (question, passages, ambiguity, CQ, answers)."""
from __future__ import annotations

import sys
import textwrap

import click

from .options import stream_options
from .stream import batched, click_stdin, record_problem
from ..errors import InputError
from ..jsonl import read_records


def render(record: dict, passages: int) -> str:
    lines = [f"[{record['id']}] {record.get('question', '')}"]
    hits = record.get("passages")
    for hit in hits[:passages] if isinstance(hits, list) and all(isinstance(h, dict) for h in hits) else []:
        text = textwrap.shorten(str(hit.get("text", "")), 90)
        score = hit.get("score")
        score = f"{score:7.3f}" if isinstance(score, (int, float)) else f"{'-':>7}"
        lines.append(f"    {hit.get('rank', '-'):>3}. {score}  {hit.get('title', '')}: {text}")
    amb = record.get("ambiguity")
    if isinstance(amb, dict):
        lines.append(f"    ambiguous: {amb.get('label')} (score {amb.get('score')}, {amb.get('method')})")
    cq = record.get("cq")
    if cq:
        lines.append(f"    clarify: {cq.get('text') if isinstance(cq, dict) else cq}")
    answers = record.get("answers")
    for answer in answers if isinstance(answers, list) else []:
        answer = answer if isinstance(answer, dict) else {"text": answer}
        option = f"{answer['option']}: " if answer.get("option") else ""
        lines.append(f"    answer: {option}{answer.get('text')}")
    if record.get("long_answer"):
        lines.append("    long answer: " + textwrap.shorten(str(record["long_answer"]), 200))
    for stage, reason in (record.get("errors") or {}).items():
        lines.append(f"    error in {stage}: {reason}")
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
        for lineno, record in batch:
            problem = record_problem(record, ())
            if problem and on_error != "skip":
                raise InputError(f"{problem} (record {record['id']}); pass --on-error skip to show the rest",
                                 where=f"line {lineno}")
            click.echo(render(record, passages) + (f"\n    not shown: {problem}" if problem else "") + "\n")
        sys.stdout.flush()
