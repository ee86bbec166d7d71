"""What the language models of a stage cost: LM calls, prompt tokens, generated tokens and seconds.

Every generation and continuation-scoring call of a generator (local: cqtools/models/generator.py and
scoring.py; API: openai_backend.py, api_scoring.py) adds to the ledger :func:`counting` opened around it, and
only then (nothing is counted, or tokenized again, when no ledger is open). The stream engine opens one per
batch when the run configuration's ``usage`` is on (``CQ_USAGE=1``) and notes each record's share in
``meta.usage.<stage>`` (cqtools/stream/usage.py); ``cq score --task clam --curves`` reports them per answered
question.

A call is one input a model was asked about (one prompt generated, one (prompt, continuation) pair scored),
counted whatever answered it (the model, the generation cache, an earlier identical prompt of the same call):
so the counts of a record do not depend on its batch mates or on a cache, while ``seconds`` (the wall time
spent inside the model calls) is what this run took. Generated tokens are the tokens the model produced
before it stopped (a stop string's tail included); a cached generation counts its text's tokens.
"""
from __future__ import annotations

import time
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, fields
from typing import Iterator

COUNTS = ("calls", "prompt_tokens", "generated_tokens")  # the deterministic part


@dataclass
class Usage:
    calls: int = 0
    prompt_tokens: int = 0
    generated_tokens: int = 0
    seconds: float = 0.0

    def as_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}


_LEDGER: ContextVar[Usage | None] = ContextVar("cq_usage", default=None)


def active() -> bool:
    """Whether a ledger is open (callers skip the counting work otherwise)."""
    return _LEDGER.get() is not None


def add(calls: int = 0, prompt_tokens: int = 0, generated_tokens: int = 0, seconds: float = 0.0) -> None:
    """Add to the open ledger (none open: nothing)."""
    ledger = _LEDGER.get()
    if ledger is not None:
        ledger.calls += calls
        ledger.prompt_tokens += prompt_tokens
        ledger.generated_tokens += generated_tokens
        ledger.seconds += seconds


@contextmanager
def counting() -> Iterator[Usage]:
    """A fresh ledger for the calls made inside the block (an enclosing ledger gets nothing of them)."""
    ledger, enclosing = Usage(), _LEDGER.get()
    _LEDGER.set(ledger)
    try:
        yield ledger
    finally:
        _LEDGER.set(enclosing)


@contextmanager
def timed() -> Iterator[None]:
    """The block's wall seconds added to the open ledger."""
    if not active():
        yield
        return
    start = time.perf_counter()
    try:
        yield
    finally:
        add(seconds=time.perf_counter() - start)
