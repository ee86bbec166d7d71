"""Streaming JSONL: a reader that keeps line numbers and a writer that flushes as it goes."""
from __future__ import annotations

import logging
from itertools import islice
from typing import IO, Iterable, Iterator

import orjson

from .errors import CQError, InputError

log = logging.getLogger("cqtools")


class Skipped:
    """Counts lines dropped under ``--on-error skip`` so the CLI can report them at the end."""

    def __init__(self) -> None:
        self.count = 0


def read_records(
    stream: IO[bytes],
    required: Iterable[str] = ("question",),
    on_error: str = "fail",
    skipped: Skipped | None = None,
) -> Iterator[tuple[int, dict]]:
    """Yield ``(line_number, record)`` lazily from a binary JSONL stream.

    Blank lines are ignored. A line that is not a JSON object, or lacks a ``required`` key,
    raises :class:`InputError` naming the line (``on_error="fail"``) or is skipped with a
    warning on stderr (``on_error="skip"``). Records without ``id`` get their line number.
    """
    required = tuple(required)
    for lineno, raw in enumerate(stream, start=1):
        if not raw.strip():
            continue
        try:
            record = _parse(raw, required)
        except InputError as err:
            err.where = f"line {lineno}"
            if on_error != "skip":
                raise
            log.warning("skipping %s", err)
            if skipped is not None:
                skipped.count += 1
            continue
        record.setdefault("id", str(lineno))
        yield lineno, record


def _parse(raw: bytes, required: tuple[str, ...]) -> dict:
    try:
        record = orjson.loads(raw)
    except orjson.JSONDecodeError as err:
        raise InputError(f"not valid JSON ({err}); each line must be one JSON object") from None
    if not isinstance(record, dict):
        raise InputError(f"expected a JSON object, got {type(record).__name__}")
    if "id" in record and not isinstance(record["id"], (str, int)):
        raise InputError("'id' must be a string or a number")
    if "id" in record:
        record["id"] = str(record["id"])
    for key in required:
        if key not in record:
            rid = record.get("id")
            label = f" (record {rid})" if rid is not None else ""
            raise InputError(f"missing required key '{key}'{label}")
    return record


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


def dumps(record: dict) -> bytes:
    return orjson.dumps(record, option=orjson.OPT_SERIALIZE_NUMPY) + b"\n"


class JsonlWriter:
    """Writes records to a binary stream, one line each, flushing after every batch."""

    def __init__(self, stream: IO[bytes]):
        self.stream = stream
        self.written = 0

    def write(self, record: dict) -> None:
        self.stream.write(dumps(record))
        self.written += 1

    def write_all(self, records: Iterable[dict]) -> None:
        for record in records:
            self.write(record)
        self.stream.flush()


def load_json_or_jsonl(path: str) -> Iterator[dict]:
    """Yield the objects of a JSON list file or a JSONL file (used by ``cq convert``)."""
    with open(path, "rb") as fh:
        head = fh.read(1 << 16).lstrip()
        fh.seek(0)
        if head.startswith(b"[") or (head.startswith(b"{") and not _is_jsonl(head)):
            data = orjson.loads(fh.read())
            yield from (data if isinstance(data, list) else [data])
            return
        for lineno, raw in enumerate(fh, start=1):
            if raw.strip():
                try:
                    yield orjson.loads(raw)
                except orjson.JSONDecodeError as err:
                    raise InputError(f"not valid JSON ({err})", where=f"{path} line {lineno}") from None


def _is_jsonl(head: bytes) -> bool:
    first = head.split(b"\n", 1)[0]
    try:
        orjson.loads(first)
        return True
    except orjson.JSONDecodeError:
        return False
