"""One batch through a stage: each record checked against the schema, the stage applied, and under
``--on-error skip`` a record the stage rejects set aside (written through unchanged with the reason under
``errors.<stage>``) while the others are processed."""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Iterator

from .. import exactjson
from ..errors import CQError, InputError, ServiceError
from . import refusals
from ..jsonl import bad_id
from .inputs import FileLine

log = logging.getLogger("cqtools")
ERRORS = "errors"


def record_problem(record: dict, required: tuple[str, ...], max_question_chars: int | None = None) -> str | None:
    """Why a stage cannot take ``record`` (None if it can): the schema's types, checked once here."""
    problem = bad_id(record)
    if problem:
        return problem
    for key in required:
        if key not in record:
            return f"missing required key '{key}'"
        if not isinstance(record[key], str):
            return f"'{key}' must be a string, got {_json_type(record[key])}"
    from ..config import RunConfig

    limit = max_question_chars or RunConfig.max_question_chars
    if "question" in required and len(record["question"]) > limit:
        return (f"'question' has {len(record['question'])} characters, over the limit of {limit} (a pasted "
                f"document?); shorten it, or raise CQ_MAX_QUESTION_CHARS")
    passages = record.get("passages")
    if passages is not None and not (isinstance(passages, list) and all(isinstance(p, dict) for p in passages)):
        return f"'passages' must be a list of objects, got {_json_type(passages)}"
    return None


def _json_type(value) -> str:
    names = {type(None): "null", bool: "a boolean", int: "a number", float: "a number", str: "a string",
             list: "a list", dict: "an object"}
    return names.get(type(value), type(value).__name__)


@dataclass
class Item:
    """One input record on its way through a batch: where it came from, and why it was set aside."""

    lineno: int
    record: dict
    problem: str | None = None


def checked_items(records, spec) -> Iterator[Item]:
    for lineno, record in records:
        problem = record_problem(record, spec.required, spec.config.max_question_chars if spec.config else None)
        if problem and spec.on_error != "skip":
            raise InputError(f"{problem} (record {record['id']!s}); fix the input, or pass --on-error skip "
                             f"to write such records through with the reason under '{ERRORS}'",
                             where=f"line {lineno}", record_id=record["id"])
        yield Item(lineno, record, problem)


def apply(process, items: list[Item], spec) -> list[dict]:
    """``process`` over a batch. Under ``--on-error skip`` a record the stage rejects (by name, or
    alone in a batch) is written through unchanged with the reason; the others are processed."""
    out: dict[int, dict] = {}
    todo = []
    for n, item in enumerate(items):
        if item.problem:
            log.warning("%s: line %s: %s (record %s): written through unchanged", spec.desc, item.lineno,
                        item.problem, item.record["id"])
            out[n] = _set_aside(item.record, spec, item.problem)
        else:
            todo.append(n)
    pristine = {n: exactjson.dumps(items[n].record) for n in todo} if spec.on_error == "skip" else None
    while todo:
        records = [items[n].record for n in todo]
        try:
            result = process(records)
        except CQError as err:
            if isinstance(err, ServiceError):  # a server down is no record's fault: stop, written records stay
                raise
            if err.where is None:
                err.where = _locate(err, [items[n] for n in todo])
            if pristine is None:
                raise
            culprit = _culprit(err, items, todo)
            if culprit is None:  # the stage did not say which record: find it by going one at a time
                for n in todo:
                    items[n].record = exactjson.loads(pristine[n])
                    out[n] = apply(process, [items[n]], spec)[0]
                break
            log.warning("%s: %s (record %s): written through unchanged", spec.desc, err, items[culprit].record["id"])
            spec.refused += refusals.counts(err)
            out[culprit] = _set_aside(exactjson.loads(pristine[culprit]), spec, err.message)
            todo = [n for n in todo if n != culprit]
            for n in todo:  # the stage may have changed records before it failed
                items[n].record = exactjson.loads(pristine[n])
            continue
        if len(result) != len(records):
            raise CQError(f"internal: stage returned {len(result)} records for {len(records)}")
        out.update(zip(todo, result))
        break
    return [out[n] for n in range(len(items))]


def _culprit(err: CQError, items: list[Item], todo: list[int]) -> int | None:
    if len(todo) == 1:
        return todo[0]
    for n in todo:
        if err.record_id is not None and items[n].record["id"] == err.record_id:
            return n
    return None


def _set_aside(record: dict, spec, reason: str) -> dict | list[dict]:
    errors = record.get(ERRORS)
    record[ERRORS] = {**(errors if isinstance(errors, dict) else {}), spec.desc: reason}
    return [record] if spec.fanout else record


def _locate(err: CQError, items: list[Item]) -> str:
    """``line N`` of the record an error names, else the batch's line range."""
    for item in items:
        if err.record_id is not None and item.record["id"] == err.record_id:
            return f"line {item.lineno}"
    if len(items) == 1:
        return f"line {items[0].lineno} (record {items[0].record['id']})"
    first, last = items[0].lineno, items[-1].lineno
    if isinstance(first, FileLine):
        return f"lines {int(first)}-{int(last)} of {first.path}"
    return f"lines {first}-{last}"


