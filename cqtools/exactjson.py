"""JSON that orjson alone would change or refuse, read and written exactly.

orjson reads an integer past 64 bits as a float (``18446744073709551617`` → ``1.8446744073709552e+19``)
and cannot write one; it refuses objects nested past 1024 levels, reading and writing. A pass-through
key must come out as it went in, so such a line is read again by the standard library's parser:

- a line holding a run of 19 or more digits where a JSON number can start (after ``:``, ``[``, ``,`` or
  at the start, spaces allowed: the only lines that can hold such an integer; a string's digits there
  only cost the slower parse, while digits right after a quote, as in AmbigNQ's ids ``"-4469503464110108318"``,
  cost nothing) keeps each integer outside orjson's range as a :class:`BigInt` that remembers its digits,
  and :func:`dumps` writes it back as those digits;
- a line nested deeper than orjson reads, up to :data:`MAX_DEPTH` levels, is parsed (and written)
  with the interpreter's recursion limit raised for the call.

Numbers with a fraction or an exponent stay 64-bit floats (docs/schema.md).
"""
from __future__ import annotations

import contextlib
import json
import re
import sys

import orjson

_LONG = re.compile(rb"(?:^|[:\[,])[ \t\r\n]*-?\d{19}")  # where a number token of 19+ digits can be
_MIN, _MAX = -(1 << 63), (1 << 64) - 1  # what orjson reads and writes as integers
_CHUNK = 4000  # digits per int() call: Python refuses to parse more than 4300 at once
MAX_DEPTH = 10_000  # nesting read past orjson's 1024 levels (deeper stays an error: the C stack is finite)


class BigInt(int):
    """An integer read from JSON past orjson's range; ``str()`` and JSON give its digits as read."""

    text: str

    def __new__(cls, text: str):
        digits = text.lstrip("-")
        value = 0
        for start in range(0, len(digits), _CHUNK):
            piece = digits[start:start + _CHUNK]
            value = value * 10 ** len(piece) + int(piece)
        self = super().__new__(cls, -value if text.startswith("-") else value)
        self.text = text
        return self

    def __str__(self) -> str:
        return self.text

    __repr__ = __str__


def _integer(text: str) -> int:
    if len(text.lstrip("-")) < 19:
        return int(text)
    value = BigInt(text)
    return int(value) if _MIN <= value <= _MAX else value


def loads(raw: bytes):
    """``orjson.loads(raw)`` (its errors too), integers past 64 bits kept exactly, nesting past orjson's
    limit read up to :data:`MAX_DEPTH` levels."""
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as err:
        deep = "depth" in str(err) and raw.count(b"[") + raw.count(b"{") <= MAX_DEPTH
        if not deep and (_LONG.search(raw) is None or "number" not in str(err)):  # only size and depth are
            raise                                                                   # forgiven here
        value = None  # the standard parser reads it, or this error stands
    else:
        if _LONG.search(raw) is None:
            return value
    try:
        with _deep(raw.count(b"[") + raw.count(b"{")):
            return json.loads(raw, parse_int=_integer, parse_float=_float, parse_constant=_no_constant)
    except (ValueError, RecursionError):
        return orjson.loads(raw)  # invalid JSON after all: orjson's error


@contextlib.contextmanager
def _deep(depth: int):
    """The interpreter's recursion limit raised for a value nested ``depth`` levels (at most MAX_DEPTH)."""
    saved = sys.getrecursionlimit()
    if depth + 1000 > saved:
        sys.setrecursionlimit(min(depth, MAX_DEPTH) + 1000)
    try:
        yield
    finally:
        sys.setrecursionlimit(saved)


def _float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"number {text[:20]} is infinity when parsed as double")
    return value


def _no_constant(name: str):
    raise ValueError(f"{name} is not JSON")


def _default(value):
    if isinstance(value, BigInt):
        return orjson.Fragment(value.text.encode())
    for kind in (bool, int, float, str, dict, list, tuple):  # other subclasses: as their base type
        if isinstance(value, kind):
            return kind(value)
    raise TypeError(f"Type is not JSON serializable: {type(value).__name__}")


def dumps(value, option: int = 0) -> bytes:
    """``orjson.dumps(value, option=option)``, with :class:`BigInt` written as its digits and values
    nested past orjson's limit written by the standard library."""
    try:
        return orjson.dumps(value, option=option)
    except TypeError:
        pass
    try:
        return orjson.dumps(value, option=option | orjson.OPT_PASSTHROUGH_SUBCLASS, default=_default)
    except TypeError as err:
        if "ecursion" not in str(err):
            raise
    with _deep(MAX_DEPTH):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=_plain).encode()


def _plain(value):
    """What the standard library's encoder cannot write itself (numpy values, in cq's records)."""
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"Type is not JSON serializable: {type(value).__name__}")
