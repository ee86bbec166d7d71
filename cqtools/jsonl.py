"""Streaming JSONL: a reader that keeps line numbers and a writer that flushes as it goes; gzip in
and out (recognised by its magic bytes when reading, by a ``.gz`` name when writing), atomic output
files and the repair of a torn ``--resume`` file (cqtools/outputs.py, re-exported here)."""
from __future__ import annotations

import contextlib
import gzip
import io
import logging
import re
import zlib
from itertools import islice
from typing import IO, Iterable, Iterator

import orjson

from . import exactjson
from .errors import CQError, InputError, ResourceError
from .outputs import GZIP_MAGIC, is_gzip  # noqa: F401  (and the output side, re-exported:)
from .outputs import (AtomicFile, GzipMembers, open_append, output_is_gzip, pid_alive, remove_stale,  # noqa: F401
                      repair_output, scan_output, wants_gzip)

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
    for lineno, raw in _lines(maybe_gunzip(stream)):
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


def _lines(stream: IO[bytes]) -> Iterator[tuple[int, bytes]]:
    """Numbered lines; a damaged or cut gzip stream becomes an InputError after the last good line."""
    lineno = 0
    lines = iter(stream)
    damage = (EOFError, OSError, zlib.error, GzipDamaged) if isinstance(stream, gzip.GzipFile) else ()
    while True:
        try:
            raw = next(lines)
        except StopIteration:
            return
        except damage as err:
            raise InputError(f"the gzip input is cut short or damaged here ({getattr(err, 'reason', err)}); the records before "
                             f"it were processed; fix or re-download the file",
                             where=f"line {lineno + 1}") from None
        lineno += 1
        if lineno == 1 and raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]  # a UTF-8 byte-order mark (Windows editors) is no part of the record
        yield lineno, raw


JSON_DOCUMENT = ("this looks like a JSON file, not JSONL (one record per line): `cq convert FORMAT FILE` makes records "
                 "of a data set's JSON (ambignq, asqa, nq-open, ...: `cq convert --help`)")


def _parse(raw: bytes, required: tuple[str, ...]) -> dict:
    document = raw.strip() in (b"[", b"{") or raw.lstrip().startswith(b"[{")
    try:
        record = exactjson.loads(raw)  # orjson's, with integers past 64 bits kept digit for digit
    except orjson.JSONDecodeError as err:
        if "depth" in str(err) and raw.count(b"[") + raw.count(b"{") > exactjson.MAX_DEPTH:
            raise InputError(f"nested deeper than {exactjson.MAX_DEPTH:,} levels, more than cq reads (docs/schema.md); "
                             f"flatten the record") from None  # valid JSON, maybe: never call it invalid
        raise InputError(JSON_DOCUMENT if document else f"not valid JSON ({err}); each line must be one JSON object") \
            from None
    if not isinstance(record, dict):
        raise InputError(JSON_DOCUMENT if document else f"expected a JSON object, got {type(record).__name__}")
    if "id" in record and isinstance(record["id"], (str, int)) and not isinstance(record["id"], bool):
        record["id"] = str(record["id"])
    # any other id (1.5, an object, true) stays as it is: the stream loop sets such a record aside under
    # --on-error skip (written through with the reason) or stops the run, naming its line (bad_id)
    for key in required:
        if key not in record:
            rid = record.get("id")
            label = f" (record {rid})" if rid is not None else ""
            raise InputError(f"missing required key '{key}'{label}")
    return record


def bad_id(record: dict) -> str | None:
    """Why a record's id is unusable (None if it is fine): ids are strings or integers."""
    rid = record.get("id")
    if isinstance(rid, str):
        return None
    kind = {float: "a number with a fraction", bool: "a boolean", dict: "an object", list: "a list",
            type(None): "null"}.get(type(rid), type(rid).__name__)
    return f"'id' must be a string or an integer, got {kind} ({orjson.dumps(rid).decode()[:40]})"


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
    return exactjson.dumps(record, option=orjson.OPT_SERIALIZE_NUMPY) + b"\n"


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


def load_json_or_jsonl(path: str, what: str | None = None) -> Iterator[dict]:
    """Yield the objects of a JSON list file or a JSONL file, either gzipped (used by ``cq convert``). With
    ``what`` (e.g. "passage"), a JSONL file has one ``what`` a line: an empty line is an error too."""
    with open_peeked(path) as (head, fh):
        head = head.lstrip()
        if head.startswith(b"[") or (head.startswith(b"{") and not _is_jsonl(head)):
            try:
                data = orjson.loads(fh.read())
            except orjson.JSONDecodeError as err:
                raise InputError(f"not valid JSON ({err}); pass a JSON or JSONL file", where=path) from None
            yield from (data if isinstance(data, list) else [data])
            return
        try:
            for lineno, raw in _lines(fh):
                if raw.strip():
                    try:
                        yield orjson.loads(raw)
                    except orjson.JSONDecodeError as err:
                        raise InputError(_not_json(raw, err, what), where=f"{path} line {lineno}") from None
                elif what:
                    raise InputError(f"an empty line: the file holds one {what} a line; remove empty lines (e.g. "
                                     f"`sed -i '/^[[:space:]]*$/d' {path}`)", where=f"{path} line {lineno}")
        except InputError as err:
            if not (err.where or "").startswith(path):
                err.where = f"{path} {err.where}" if err.where else path
            raise


def _not_json(raw: bytes, err, what: str | None) -> str:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return (f"not UTF-8 text (a binary or damaged line); the file must be UTF-8 JSONL{f', one {what} a line' if what else ''}: "
                f"fix or remove the line")
    return f"not valid JSON ({err})"


def _is_jsonl(head: bytes) -> bool:
    first = head.split(b"\n", 1)[0]
    try:
        orjson.loads(first)
        return True
    except orjson.JSONDecodeError:
        return False


# ---------------------------------------------------------------------------------------------
# gzip in





@contextlib.contextmanager
def open_peeked(path: str, size: int = 1 << 16):
    """``(head, stream)``: the first ``size`` bytes of ``path`` (decompressed) and a stream of all of it, head
    included, read once: a pipe or FIFO (``cq convert ambignq <(cat dev.json)``) cannot be opened twice."""
    with open_input(path) as fh:
        head = fh.read(size)
        yield head, io.BufferedReader(_Prefixed(head, fh))


class _Prefixed(io.RawIOBase):
    """``head`` (bytes already read) then the rest of ``rest``, as one raw stream."""

    def __init__(self, head: bytes, rest: IO[bytes]):
        self.head, self.rest = memoryview(head), rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self.head:
            n = min(len(buffer), len(self.head))
            buffer[:n], self.head = self.head[:n], self.head[n:]
            return n
        data = self.rest.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)


def open_input(path: str) -> IO[bytes]:
    """``path`` opened for binary reading, decompressed if it is gzip (by magic bytes); gzip
    members appended one after another read as one stream. A pipe (``--ids <(cut -f1 x)``, a FIFO)
    is peeked, not rewound."""
    try:
        fh = open(path, "rb")
    except OSError as err:
        raise ResourceError(f"cannot read {path}: {err.strerror}") from None
    if not fh.seekable():
        return maybe_gunzip(fh)
    if fh.read(2) == GZIP_MAGIC:
        fh.close()
        return CheckedGzip(path, mode="rb")
    fh.seek(0)
    return fh


def maybe_gunzip(stream: IO[bytes]) -> IO[bytes]:
    """A binary stream that may be gzip (stdin: ``zcat``-less ``cq detect < q.jsonl.gz``): its first two
    bytes are peeked, without losing them, and a gzip stream is decompressed as it is read."""
    if isinstance(stream, gzip.GzipFile):
        return stream
    peek = getattr(stream, "peek", None)
    head = peek(2)[:2] if peek is not None else None
    if head is None or len(head) == 1:  # no peek, or a pipe that has delivered one byte so far
        head = stream.read(2)
        if not head:
            return stream
        stream = io.BufferedReader(_Prefixed(head, stream))
    if head == GZIP_MAGIC:
        return CheckedGzip(filename="", fileobj=stream, mode="rb")
    return stream


class GzipDamaged(InputError):
    """Cut or damaged gzip data (readers that count lines say at which line); ``reason``: gzip's words."""

    def __init__(self, message: str, reason: str = ""):
        super().__init__(message)
        self.reason = reason


class CheckedGzip(gzip.GzipFile):
    """A gzip stream whose cut or damaged data is a one-line error naming the file, not an
    ``EOFError`` (which click reports as a bare "Aborted!")."""

    def _checked(self, method, *args):
        try:
            return method(self, *args)
        except (EOFError, zlib.error, gzip.BadGzipFile) as err:
            where = self.name if isinstance(self.name, str) and self.name else "standard input"
            raise GzipDamaged(f"{where}: the gzip data is cut short or damaged ({err}); write or download the "
                              "file again", reason=str(err)) from None

    def read(self, size=-1):
        return self._checked(gzip.GzipFile.read, size)

    def read1(self, size=-1):
        return self._checked(gzip.GzipFile.read1, size)

    def readline(self, size=-1):
        return self._checked(gzip.GzipFile.readline, size)

    def peek(self, n):
        return self._checked(gzip.GzipFile.peek, n)


class _Prefixed(io.RawIOBase):
    """Bytes already read from a stream, then the rest of the stream (``read1``: no waiting for a full
    buffer, so records flow through a pipeline as they are written)."""

    def __init__(self, head: bytes, stream: IO[bytes]):
        self.head = head
        self.stream = stream

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self.head:
            data, self.head = self.head[:len(buffer)], self.head[len(buffer):]
        else:
            read = getattr(self.stream, "read1", self.stream.read)
            data = read(len(buffer))
        buffer[:len(data)] = data
        return len(data)

