"""`cq convert FORMAT FILE`: public data formats -> cq records (or passages) on stdout."""
from __future__ import annotations

import sys
from itertools import islice

import click
import orjson

from ..chat.export import LAYOUT_FORMATS
from ..data.benchmarks import FORMATS as BENCHMARK_FORMATS
from ..data.formats import QUESTION_FORMATS, convert
from ..errors import InputError
from ..jsonl import AtomicFile, JsonlWriter, open_input
from ..stages.gen_cq.silver import add_silver_cq
from ..registry import FORMATS
from .options import output_option


def _read_ids(path):
    """The ids a file lists: one per line, or JSONL records' ``id``."""
    ids = set()
    with open_input(path) as fh:
        for n, line in enumerate(fh, 1):
            line = line.strip()
            if line.startswith(b"{"):
                try:
                    ids.add(str(orjson.loads(line)["id"]))
                except (orjson.JSONDecodeError, KeyError, TypeError):
                    raise click.UsageError(f"{path}:{n}: not a JSON record with an id; list one id per "
                                           "line or give a JSONL file of records")
            elif line:
                ids.add(line.decode("utf-8", "replace"))
    return ids


def _join_arg(ctx, param, values):
    joins = []
    for value in values:
        fmt, sep, path = value.partition(":")
        if not sep or fmt not in {**QUESTION_FORMATS, **BENCHMARK_FORMATS}:
            raise click.BadParameter(f"use FORMAT:FILE with FORMAT one of "
                                     f"{', '.join({**QUESTION_FORMATS, **BENCHMARK_FORMATS})}")
        joins.append((fmt, path))
    return joins


class _Joins:
    """The --join sources' gold by record id, and by question for a source without the records' ids."""

    def __init__(self, joins):
        self.by_id, self.by_question = {}, {}
        for jfmt, jpath in joins:
            for record in _checked(jfmt, jpath):
                gold = dict(record.get("gold", {}))
                if gold.pop("join_on", None) == "question":
                    self.by_question[_question_key(record.get("question"))] = gold
                else:
                    self.by_id[record["id"]] = gold

    def of(self, record: dict) -> dict | None:
        found = self.by_id.get(record["id"])
        if found is None and self.by_question:
            found = self.by_question.get(_question_key(record.get("question")))
        return found


def _question_key(question) -> str:
    """A question as a --join source without ids matches it: case and spacing aside."""
    return " ".join(str(question or "").lower().split())


def _add_gold(record: dict, joined: dict, silver_cq: bool) -> None:
    """Fill the keys ``record``'s gold lacks from a --join source's gold (an unknown ``ambiguous`` too), then
    a silver CQ when asked."""
    gold = record.setdefault("gold", {})
    for key, value in joined.items():
        if key == "ambiguous" and gold.get("ambiguous") is None:
            gold[key] = value
        gold.setdefault(key, value)
    if silver_cq:
        add_silver_cq(gold, record["question"])


class _checked:
    """``convert(fmt, path)``'s records, refused at the second record of one id (a question format's ids are
    what every later stage, --join and cq score pair records by); a file of no record is an error too."""

    def __init__(self, fmt: str, path: str):
        self.fmt, self.path, self.count = fmt, path, 0

    def __iter__(self):
        seen: dict | None = {} if self.fmt in QUESTION_FORMATS or self.fmt in BENCHMARK_FORMATS else None
        for self.count, record in enumerate(convert(self.fmt, self.path), 1):
            if seen is not None:
                first = seen.setdefault(record["id"], self.count)
                if first != self.count:
                    raise InputError(f"id {record['id']!r} is given twice (records {first} and {self.count} of the "
                                     f"file): keep one of them, or give them ids of their own", where=self.path,
                                     record_id=str(record["id"]))
            yield record
        if self.count == 0:
            raise InputError(f"no {self.fmt} record in it (an empty file?); pass the data set's file",
                             where=self.path)


@click.command(name="convert")
@click.argument("fmt", metavar="FORMAT", type=click.Choice(FORMATS.names()))
@click.argument("path", metavar="FILE", type=click.Path(dir_okay=False))
@click.option("--join", "joins", multiple=True, callback=_join_arg, metavar="FORMAT:FILE",
              help="Add gold fields from another source with the same ids (fills keys the first lacks); a "
                   "source without ids (an AMBIGNQ-CQ CSV with no id column) matches by question text.")
@click.option("--ids", "ids_file", type=click.Path(exists=True, dir_okay=False), metavar="FILE",
              help="Keep only records whose id is listed in FILE (one id per line).")
@click.option("--exclude-ids", "exclude_file", type=click.Path(exists=True, dir_okay=False), metavar="FILE",
              help="Drop records whose id is listed in FILE (one id per line; a JSONL file's ids also "
                   "work), e.g. to draw demos from the questions a run does not score.")
@click.option("--limit", type=click.IntRange(min=1), help="Only the first N records (after --ids).")
@click.option("--silver-cq", is_flag=True,
              help="Give ambiguous records without a gold CQ a silver one built from their gold DQs "
                   "(cq gen-cq --method from-dqs; gold.cq_source says so). For AmbigNQ without CAmbigNQ.")
@output_option
def cli(fmt, path, joins, ids_file, exclude_file, limit, silver_cq, output):
    """Turn a public data format into cq records on stdout.

    \b
    Question formats (gold goes under the "gold" key, which no inference stage reads):
      ambignq   AmbigNQ light or full (dev_light.json, dev.json with used_queries)
      cambignq  CAmbigNQ cq_train.json / cq_dev.json
      asqa      ASQA (a list with ids, or {"dev": {id: ...}})
      nq-open   NQ-open jsonl {"question", "answer": [...]}
      topics    Anserini/Pyserini topic TSV: qid<TAB>query per line (no gold)
    The field's other ambiguity benchmarks, as their authors publish them (docs/schema.md):
      ambigdocs    AmbigDocs test.json: entities and their answers (gold.entities)
      condambigqa  CondAmbigQA mcaqa.json: conditions (gold.conditions), ctxs as passages
      clamber      CLAMBER clamber_benchmark.jsonl: gold.category/subclass, gold.cq
      alce-asqa    ALCE's ASQA with docs as passages (citation [i] = passages[i-1])
      ambignq-cq   AMBIGNQ-CQ CSV: a CQ per AmbigNQ id, for --join ambignq-cq:dev.csv
    A field cq does not use is named on stderr.
    Corpus formats (passages {id, title, text}, for cq index):
      dpr       DPR psgs_w100.tsv (id, text, title)
      passages  JSONL {id, title, text}
    Other layouts:
      chat-log  cq chat --log FILE -> CAmbigNQ's layout (question, CQ, the
                reading picked as its DQ with the answer given, passages)
    Any FILE may be gzipped (.gz, or recognised by its content).

    \b
    Example:
      cq convert ambignq dev_light.json --join cambignq:cq_dev.json > questions.jsonl
      cq retrieve --index idx < questions.jsonl | cq detect | cq score --task detect
      cq convert topics topics.nq.dev.tsv -o questions.jsonl.gz
      cq convert chat-log session.jsonl > cq_chat.jsonl && cq convert cambignq cq_chat.jsonl
    """
    if fmt in LAYOUT_FORMATS and (joins or silver_cq):
        raise InputError(f"{fmt} writes CAmbigNQ's layout, not cq records: drop --join and "
                         "--silver-cq (cq convert cambignq reads its output)")
    joined_gold = _Joins(joins)
    keep = _read_ids(ids_file) if ids_file else None
    drop = _read_ids(exclude_file) if exclude_file else set()
    out = AtomicFile(output) if output else None
    writer = JsonlWriter(out or sys.stdout.buffer)
    try:
        read = _checked(fmt, path)
        records = (r for r in read if (keep is None or r["id"] in keep) and r["id"] not in drop)
        written = 0
        for written, record in enumerate(islice(records, limit), 1):
            joined = joined_gold.of(record)
            if joined is not None or silver_cq:
                _add_gold(record, joined or {}, silver_cq)
            writer.write(record)
        writer.stream.flush()
        if written == 0:
            click.echo(f"cq convert: warning: none of the {read.count} records of {path} is kept (--ids, "
                       "--exclude-ids): the output is empty", err=True)
        if out:
            out.commit()
    finally:
        if out:
            out.abort()
