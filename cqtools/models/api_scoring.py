"""Continuation scoring over an OpenAI-compatible server: summed log p(continuation | prefix + prompt), from
``completions`` with ``echo`` + ``logprobs`` (the prompt's own log-probabilities), checked once against the
server's next-token logprobs, else from the next-token ``top_logprobs`` one token at a time; a server with
neither is a one-line error. The scoring half of :class:`~cqtools.models.openai_backend.OpenAIGenerator`."""
from __future__ import annotations

import contextlib
import logging

from . import api_http, usage
from .api import ECHO_TOLERANCE, SEED, ApiError, Bound, NoLogprobs, RequestError, continuation_logprob, \
    next_token_logprobs

log = logging.getLogger("cqtools")


class _RefusedScoring(NoLogprobs):
    """A 4xx answer to a scoring request: the server lacks a feature (echo), or refuses this request
    (a prompt over its context), which is then the record's problem, not the run's."""

    def __init__(self, status: int, message: str):
        super().__init__(f"HTTP {status}: {message}")
        self.status = status
        self.message = message


class LogprobScoring:
    """``score`` for an API model. The class it is mixed into sends the requests (``request``, ``where``,
    ``pool``: a :class:`~cqtools.models.batching.RequestPool`) and names the model (``model``, ``name``,
    ``top_logprobs``); ``_score_mode`` and ``_bounded_warned`` start as None and False."""

    @contextlib.contextmanager
    def _shaped(self):
        """An answer whose log-probabilities have another shape than OpenAI's: a one-line error."""
        try:
            yield
        except (TypeError, KeyError, IndexError, AttributeError) as err:
            raise ApiError(f"{self.where('completions')}: the answer's logprobs have an unexpected shape "
                           f"({type(err).__name__}: {err}); is --api-base an OpenAI-compatible server?") from err

    def score(self, prompts: list[str], continuations: list[str], prefix: str = "",
              batch_size: int | None = None) -> list[float]:
        """Summed log p(continuation | prefix + prompt) for each pair (see the module's doc)."""
        if len(prompts) != len(continuations):
            raise ValueError("prompts and continuations must have the same length")
        pairs = [(prefix + p, c) for p, c in zip(prompts, continuations)]
        if any(c and not ctx for ctx, c in pairs):
            raise ValueError("cannot score a continuation with no context; pass a prompt or prefix")
        usage.add(calls=len(pairs))  # no tokens: the server's counts are not read here (cqtools/models/usage.py)
        with usage.timed():
            return self._score_pairs(pairs)

    def _score_pairs(self, pairs: list[tuple[str, str]]) -> list[float]:
        todo = [pair for pair in dict.fromkeys(pairs) if pair[1]]
        scores: dict[tuple[str, str], float] = {}
        if todo and self._score_mode is None:
            first = todo.pop(0)
            with self._shaped():
                scores[first] = self._probe(*first)
        method = self._score_echo if self._score_mode == "echo" else self._score_top

        def one(pair: tuple[str, str]) -> float:
            try:
                with self._shaped():
                    return method(*pair)
            except _RefusedScoring as err:  # the server scored this way before: it refuses this one request
                raise RequestError(f"{self.where('completions')}: {err}") from None
            except NoLogprobs as err:  # answered without logprobs this time: the server's fault
                raise ApiError(f"{self.where('completions')}: {err}") from None

        for pair, value in zip(todo, self.pool.map(one, todo)):
            scores[pair] = value
        bounded = [pair for pair, value in scores.items() if isinstance(value, Bound)]
        if bounded and not self._bounded_warned:
            self._bounded_warned = True
            log.warning("%s: %d continuation(s) left the server's top %d tokens; each such log p is the bound "
                        "given by the lowest listed token (an upper bound)", self.name, len(bounded), self.top_logprobs)
        return [float(scores[(ctx, c)]) if c else 0.0 for ctx, c in pairs]

    def _probe(self, context: str, continuation: str) -> float:
        """Score the first pair, finding which way this server gives log-probabilities: prompt
        logprobs (echo) when it has them and they agree with its next-token logprobs, else the
        next-token logprobs token by token, else a one-line error."""
        try:
            value, first = self._echo(context, continuation)
        except NoLogprobs as echo_err:
            why = str(echo_err)
        else:
            why = self._echo_disagrees(context, first)
            if why is None:
                self._score_mode = "echo"
                log.info("%s: scoring with prompt logprobs (completions echo)", self.name)
                return value
        try:
            value = self._score_top(context, continuation)
        except _RefusedScoring as top_err:  # refused both ways: this request (e.g. too long), not the server
            raise RequestError(f"{self.where('completions')}: {top_err}") from None
        except NoLogprobs as top_err:
            raise ApiError(f"{self.where('completions')} gives no log-probabilities (echo+logprobs: "
                           f"{why}; next-token top_logprobs: {top_err}); scoring (detect --method llm, "
                           f"oracle --method llm, answer --verify, disambiguate --prune) needs a server that "
                           f"does, e.g. vLLM or llama-cpp-python's server") from None
        self._score_mode = "top"
        log.warning("%s: no usable prompt logprobs (%s); scoring token by token from the top-%d next-token "
                    "logprobs", self.name, why, self.top_logprobs)
        return value

    def _echo_disagrees(self, context: str, first: tuple[str, float] | None) -> str | None:
        """Why the server's prompt logprobs cannot be trusted, or None. The continuation's first token
        is looked up in the server's next-token logprobs after ``context``: the two must agree (they
        do not on llama-cpp-python 0.3, whose echoed logprobs are one position off, its issue #1983).
        Unchecked (None) when that token straddles the context or is not listed."""
        if first is None:
            return None
        body = {"model": self.model, "prompt": context, "max_tokens": 1, "temperature": 0, "seed": SEED,
                "logprobs": self.top_logprobs}
        try:
            top = next_token_logprobs(self._completions(body)["choices"][0])
        except NoLogprobs:
            return None
        token, echoed = first
        if token in top and abs(top[token] - echoed) > ECHO_TOLERANCE:
            return (f"its prompt logprob of {token!r} is {echoed:.3f} but its next-token logprob "
                    f"{top[token]:.3f}")
        return None

    def _completions(self, body: dict) -> dict:
        try:
            return self.request("completions", body, refusals=True)
        except api_http.Refused as err:
            if err.status in (401, 403):
                raise ApiError(f"{self.where('completions')}: HTTP {err.status} ({err.message}); set the key in "
                               f"CQ_API_KEY or OPENAI_API_KEY") from None
            raise _RefusedScoring(err.status, err.message) from None

    def _echo(self, context: str, continuation: str) -> tuple[float, tuple[str, float] | None]:
        """(log p from the prompt's own logprobs, (the continuation's first token, its logprob) when
        that token starts where the continuation does)."""
        full = context + continuation
        body = {"model": self.model, "prompt": full, "max_tokens": 1, "temperature": 0, "seed": SEED,
                "echo": True, "logprobs": 1}
        choice = self._completions(body)["choices"][0]
        lp = choice.get("logprobs") or {}
        tokens, values, offsets = lp.get("tokens"), lp.get("token_logprobs"), lp.get("text_offset")
        if not (tokens and values and offsets) or not (len(tokens) == len(values) == len(offsets)):
            raise NoLogprobs("no tokens, token_logprobs and text_offset in the answer")
        if not (choice.get("text") or "").startswith(full) or offsets[0] != 0:
            raise NoLogprobs("the prompt is not echoed")
        total = continuation_logprob(tokens, values, offsets, len(context), len(full))
        first = next(((t, v) for t, v, o in zip(tokens, values, offsets) if o == len(context) and t and v is not None),
                     None)
        return total, first

    def _score_echo(self, context: str, continuation: str) -> float:
        """log p from the prompt's own logprobs: the tokens overlapping the continuation's characters."""
        return self._echo(context, continuation)[0]

    def _score_top(self, context: str, continuation: str) -> float:
        """log p token by token: each step asks for the next token's top logprobs and takes the
        longest listed token that the rest of the continuation starts with. A continuation whose
        next piece is not listed gets the lowest listed logprob (an upper bound) for all the rest."""
        total, pos = 0.0, 0
        while pos < len(continuation):
            body = {"model": self.model, "prompt": context + continuation[:pos], "max_tokens": 1, "temperature": 0,
                    "seed": SEED, "logprobs": self.top_logprobs}
            top = next_token_logprobs(self._completions(body)["choices"][0])
            if not top:
                raise NoLogprobs("no top_logprobs in the answer")
            rest = continuation[pos:]
            match = max((t for t in top if t and rest.startswith(t)), key=len, default=None)
            if match is None:
                return Bound(total + min(top.values()))
            total += top[match]
            pos += len(match)
        return total
