"""The shapes every backend and method has (typing.Protocol): what a stage may call, nothing more.

Batch sizes are passed per call; no caller sets attributes on a model (models are cached and
shared in a process). ``info`` is what goes into a record's ``meta`` and the run record.
"""
from __future__ import annotations

from typing import Protocol, Sequence, runtime_checkable


@runtime_checkable
class Generator(Protocol):
    """A language model: generation and continuation scoring (log p), causal or seq2seq.

    ``generate`` is greedy at ``temperature`` 0 (the default); above 0 it samples (nucleus
    ``top_p``), each prompt with its own seed derived from ``seed`` (one int for every prompt, or one
    per prompt) and the prompt's text (:func:`cqtools.models.runtime.prompt_seed`), so the same
    prompt under the same seed gets the same text whatever its batch."""

    name: str
    kind: str   # "causal" | "seq2seq" | "api"
    info: dict

    def chat_prompt(self, text: str) -> str: ...

    def generate(self, prompts: list[str], max_new_tokens: int = 32, chat: bool | None = None,
                 stop: Sequence[str] | None = None, batch_size: int | None = None, temperature: float = 0.0,
                 top_p: float = 1.0, seed: int | Sequence[int] | None = None) -> list[str]: ...

    def score(self, prompts: list[str], continuations: list[str], prefix: str = "",
              batch_size: int | None = None) -> list[float]: ...


@runtime_checkable
class CrossEncoder(Protocol):
    """Scores (query, passage) pairs: raw logits, higher = more relevant."""

    name: str
    info: dict

    def predict(self, pairs: list[tuple[str, str]], batch_size: int = 32) -> list[float]: ...


@runtime_checkable
class Encoder(Protocol):
    """A bi-encoder (sentence-transformers' shape)."""

    def encode(self, texts, batch_size: int = 32, normalize_embeddings: bool = False, **kwargs): ...


@runtime_checkable
class Searcher(Protocol):
    """Pyserini's shape. A hit is ``{id, title, text, score, rank}``, ordered by (-score, id)."""

    def search(self, query: str, k: int) -> list[dict]: ...

    def batch_search(self, queries: list[str], ids: list[str], k: int, threads: int) -> dict[str, list[dict]]: ...


@runtime_checkable
class Detector(Protocol):
    """One ambiguity score per record; the label is ``score > threshold``."""

    name: str
    threshold: float
    info: dict

    def score(self, records: list[dict]) -> list[float]: ...


@runtime_checkable
class CQMethod(Protocol):
    """One clarifying question per record (a ``cq`` dict, or None when it asks nothing): ``run``, as
    gen-cq's stage calls it (cq's own: cqtools.stages.gen_cq.CQWriter)."""

    name: str
    info: dict

    def run(self, records: list[dict]) -> list[dict | None]: ...


@runtime_checkable
class Oracle(Protocol):
    """A simulated user (``cq oracle --method``): ``reply(turns)`` gives, per turn (the question, the
    CQ, its options and the DQ the user meant), the option it selects (or None) and its reply text
    (cq's own: cqtools.stages.oracle.SimulatedUser)."""

    name: str
    info: dict

    def reply(self, turns: list) -> list[tuple[str | None, str]]: ...


@runtime_checkable
class Reader(Protocol):
    """Answers each question from its passages (``cq answer --reader``): per question, answer dicts
    ``{text, ...}`` best first; one (the first is used) unless ``multi``, then every distinct answer
    found. Extra keys (``grounding``, ``generated``, a span's ``passage_id``...) are kept in the
    record. ``info`` (the model) and ``params`` (the reader's options) go into ``meta.answer``."""

    name: str
    info: dict
    params: dict

    def read(self, questions: list[str], passages: list[list[dict]], multi: bool = False) -> list[list[dict]]: ...


@runtime_checkable
class AnswerVerifier(Protocol):
    """A reader that can also score answers (``cq answer --verify``, REFUEL): one number per answer,
    higher = better supported (the generative reader: summed log p(answer | passages, question))."""

    def verify(self, question: str, passages: list[dict], answers: list[str]) -> list[float]: ...
