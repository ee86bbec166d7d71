"""The one set of fake models the tests use: each has the shape of its Protocol in
cqtools/protocols.py (tests/test_protocols.py checks that) and records what it was asked.

Behaviour that differs between tests is a constructor argument, not another copy of the class:
a FakeGenerator's replies and log-probs, a FakeCrossEncoder's scoring function.
"""
from __future__ import annotations

import re
import zlib
from typing import Callable, Mapping, Sequence


def after_question(prompt: str) -> str:
    """What follows the prompt's last "Question: " (the question being asked, and anything after it)."""
    return prompt.rsplit("Question: ", 1)[1]


class FakeGenerator:
    """A :class:`cqtools.protocols.Generator` with scripted outputs.

    ``replies``: one string for every prompt; a dict ``{needle: reply}`` (the first needle found in
    ``on(prompt)`` wins, else ``default``); or a function ``prompt -> reply``.
    ``scores``: a dict ``{continuation.strip(): log p}`` (else ``default_score``) or a function
    ``(prompt, continuation) -> log p``.
    Records every call: ``prompts`` (generate's prompts, in order), ``scored`` ((prompt, continuation)
    pairs), ``score_calls`` ((prompts, continuations, prefix) per call), ``chats`` (the ``chat``
    argument per generate call), ``stops``, ``calls`` ((method, n, batch_size) per call) and ``log``
    (one dict per generated prompt: prompt, max_new_tokens, stop, temperature, top_p, seed;
    num_beams when it is not 1).
    """

    def __init__(self, replies: str | Mapping[str, str] | Callable[[str], str] = "", scores: Mapping[str, float] | Callable[[str, str], float] | None = None,
                 *, on: Callable[[str], str] = after_question, default: str = "unknown",
                 default_score: float = -50.0, name: str = "fake", kind: str = "causal",
                 info: dict | None = None, batch_size: int = 16):
        self.replies, self.scores, self.on = replies, scores or {}, on
        self.default, self.default_score = default, default_score
        self.name, self.kind = name, kind
        self.info = dict(info) if info is not None else {
            "model": name, "source": "test", "device": "cpu", "dtype": "float32", "kind": kind}
        self.batch_size = batch_size  # what a real Generator keeps; callers must leave it as it is
        self.prompts: list[str] = []
        self.scored: list[tuple[str, str]] = []
        self.score_calls: list[tuple[list[str], list[str], str]] = []
        self.chats: list[bool | None] = []
        self.stops: list[Sequence[str] | None] = []
        self.calls: list[tuple[str, int, int | None]] = []
        self.log: list[dict] = []

    def chat_prompt(self, text: str) -> str:
        return f"<user>{text}</user>\n<assistant>"

    def reply_to(self, prompt: str) -> str:
        if isinstance(self.replies, str):
            return self.replies
        if callable(self.replies):
            return self.replies(prompt)
        where = self.on(prompt)
        return next((v for k, v in self.replies.items() if k in where), self.default)

    def generate(self, prompts: list[str], max_new_tokens: int = 32, chat: bool | None = None,
                 stop: Sequence[str] | None = None, batch_size: int | None = None, temperature: float = 0.0,
                 top_p: float = 1.0, seed: int | Sequence[int] | None = None, num_beams: int = 1) -> list[str]:
        self.calls.append(("generate", len(prompts), batch_size))
        self.chats.append(chat)
        self.stops.append(stop)
        seeds = list(seed) if isinstance(seed, (list, tuple)) else [seed] * len(prompts)
        out = []
        for p, s in zip(prompts, seeds):
            self.prompts.append(p)
            self.log.append({"prompt": p, "max_new_tokens": max_new_tokens, "stop": stop,
                             "temperature": temperature, "top_p": top_p, "seed": s,
                             **({"num_beams": num_beams} if num_beams != 1 else {})})
            out.append(self.reply_to(p))
        return out

    def score(self, prompts: list[str], continuations: list[str], prefix: str = "",
              batch_size: int | None = None) -> list[float]:
        self.calls.append(("score", len(prompts), batch_size))
        self.score_calls.append((list(prompts), list(continuations), prefix))
        out = []
        for p, c in zip(prompts, continuations):
            self.scored.append((p, c))
            if callable(self.scores):
                out.append(float(self.scores(p, c)))
            else:
                out.append(float(self.scores.get(c.strip(), self.default_score)))
        return out

    def sizes(self, method: str = "generate") -> list[int | None]:
        """The batch_size passed to each call of ``method``."""
        return [size for m, _, size in self.calls if m == method]


# --- cross-encoders -----------------------------------------------------------------------------

def words_found(query: str, passage: str) -> float:
    """How many of the query's words (lower-cased, "?" stripped) occur in the passage as substrings."""
    return float(sum(w in passage.lower() for w in query.lower().strip("?").split()))


def shared_words(query: str, passage: str) -> float:
    """How many distinct lower-cased words the query and the passage share."""
    return float(len(set(query.lower().split()) & set(passage.lower().split())))


def shared_tokens(query: str, passage: str) -> float:
    """How many distinct whitespace tokens (case kept) the query and the passage share."""
    return float(len(set(query.split()) & set(passage.split())))


class FakeCrossEncoder:
    """A :class:`cqtools.protocols.CrossEncoder`: ``scorer(query, passage)`` per pair (default
    :func:`words_found`). ``calls`` holds the number of pairs of each predict call."""

    def __init__(self, scorer: Callable[[str, str], float] = words_found, name: str = "fake-ce",
                 info: dict | None = None):
        self.scorer, self.name = scorer, name
        self.info = dict(info) if info is not None else {
            "model": name, "source": "test", "device": "cpu", "dtype": "float32"}
        self.calls: list[int] = []

    @property
    def pairs(self) -> int:
        """Pairs scored so far, over every call."""
        return sum(self.calls)

    def predict(self, pairs: list[tuple[str, str]], batch_size: int = 32) -> list[float]:
        self.calls.append(len(pairs))
        return [float(self.scorer(q, p)) for q, p in pairs]


# --- encoders and searchers ------------------------------------------------------------------------

class FakeEncoder:
    """A :class:`cqtools.protocols.Encoder`: hashed bag-of-words vectors (``dim`` buckets), so texts
    that share words are similar; L2-normalised with ``normalize_embeddings=True``."""

    def __init__(self, dim: int = 1024):
        self.dim = dim
        self.calls: list[int] = []

    def encode(self, texts, batch_size: int = 32, normalize_embeddings: bool = False, **kwargs):
        import numpy as np

        self.calls.append(len(texts))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                out[i, zlib.crc32(word.encode()) % self.dim] += 1
        if normalize_embeddings:
            out /= np.clip(np.linalg.norm(out, axis=1, keepdims=True), 1e-9, None)
        return out

    def get_sentence_embedding_dimension(self) -> int:
        return self.dim


class FakeSearcher:
    """A :class:`cqtools.protocols.Searcher` over a list of passages ``{id, title, text}``: the score
    is :func:`words_found` of the query in "title text"; hits ordered by (-score, id), ranks from 1."""

    def __init__(self, passages: list[dict]):
        self.passages = passages
        self.queries: list[str] = []

    def search(self, query: str, k: int) -> list[dict]:
        self.queries.append(query)
        hits = [{**p, "score": words_found(query, f"{p.get('title', '')} {p['text']}")} for p in self.passages]
        hits = sorted(hits, key=lambda h: (-h["score"], h["id"]))[:k]
        return [{**h, "rank": i} for i, h in enumerate(hits, 1)]

    def batch_search(self, queries: list[str], ids: list[str], k: int, threads: int = 1) -> dict[str, list[dict]]:
        return {qid: self.search(q, k) for q, qid in zip(queries, ids)}
