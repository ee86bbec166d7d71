"""Integers of any size through orjson, digit for digit.

orjson reads an integer past 64 bits as a float (``18446744073709551617`` → ``1.8446744073709552e+19``)
and cannot write one. A pass-through key must come out as it went in, so a line holding a run of 19
or more digits (the only lines that can hold such an integer; a string's digits only cost the slower
parse) is read again by the standard library's parser, each integer outside orjson's range kept as a
:class:`BigInt` that remembers its digits; :func:`dumps` writes it back as those digits.
Numbers with a fraction or an exponent stay 64-bit floats (docs/schema.md).
"""
from __future__ import annotations

import json
import re

import orjson

_LONG = re.compile(rb"\d{19}")
_MIN, _MAX = -(1 << 63), (1 << 64) - 1  # what orjson reads and writes as integers
_CHUNK = 4000  # digits per int() call: Python refuses to parse more than 4300 at once


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
    """``orjson.loads(raw)`` (its errors too), integers past 64 bits kept exactly."""
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as err:
        if _LONG.search(raw) is None or "number" not in str(err):  # only a number's size is forgiven here
            raise
        value = None  # an integer too large even for a float: the standard parser reads it, or this error stands
    if _LONG.search(raw) is None:
        return value
    try:
        return json.loads(raw, parse_int=_integer, parse_float=_float, parse_constant=_no_constant)
    except ValueError:
        return orjson.loads(raw)  # invalid JSON after all: orjson's error


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
    """``orjson.dumps(value, option=option)``, with :class:`BigInt` written as its digits."""
    try:
        return orjson.dumps(value, option=option)
    except TypeError:
        return orjson.dumps(value, option=option | orjson.OPT_PASSTHROUGH_SUBCLASS, default=_default)
