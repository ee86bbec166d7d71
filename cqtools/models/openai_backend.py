"""A :class:`~cqtools.protocols.Generator` served by any OpenAI-compatible server (vLLM, TGI,
llama.cpp's server, hosted APIs): ``--model openai:NAME``, or ``--api-base URL`` for every model
of a command.

- generation: ``chat/completions`` (``chat`` not False) or ``completions`` (raw few-shot
  prompts, ``chat=False``); greedy (temperature 0) with a fixed seed, cut at ``stop`` as the
  local backend does.
- scoring, log p(continuation | prefix + prompt) summed over its tokens: ``completions`` with
  ``echo`` + ``logprobs`` (the prompt's own log-probabilities; the continuation's tokens are found
  by their character offsets), checked once against the server's next-token logprobs; where the
  server does not echo prompt logprobs (or they disagree), the next-token ``top_logprobs`` one
  token at a time. A server with neither is a one-line error.
- ``--concurrency N`` requests in flight, retries with exponential backoff on 429/5xx, timeouts
  and dropped connections; the key comes from ``CQ_API_KEY`` or ``OPENAI_API_KEY`` only and is
  never logged nor written to records or run records.
- every answered request is cached on disk under ``$CQ_CACHE/api/`` keyed by (api base,
  endpoint, request body: model and parameters), so a resumed or repeated run sends nothing twice.

The ``openai`` client is imported when the first request is sent, so importing this module is cheap.
"""
from __future__ import annotations

import contextlib
import dataclasses
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Sequence

from ..config import current, env
from ..errors import CQError, InputError, ResourceError
from ..registry import option
from . import api_http
from .api import (ECHO_TOLERANCE, MAX_STOP, OPENAI_BASE, RETRY_STATUS, SEED, ApiError, RequestError,  # noqa: F401
                  ResponseCache, _Bound, response_cache_dir, _NoLogprobs, _server_message, api_key, cache_key,
                  continuation_logprob, next_token_logprobs, public_url, require_key, route, unresolved)

log = logging.getLogger("cqtools")

_GENERATORS: dict[tuple, "OpenAIGenerator"] = {}
_LOCK = threading.Lock()


def _positive(value: float, where: str) -> float:
    if value <= 0:
        raise InputError(f"{where}: option api_timeout must be more than 0 seconds, not {value!r}")
    return value


@dataclass(frozen=True)
class OpenAIOptions:
    """an OpenAI-compatible server (--model openai:NAME or --api-base URL; key from CQ_API_KEY or OPENAI_API_KEY);
    language models only"""

    api_base: str | None = option(
        None, "Send this command's language-model calls to the OpenAI-compatible server at URL (vLLM, TGI, "
              "llama.cpp, a hosted API), e.g. http://node1:8000/v1; --model names the server's model. `--model "
              "openai:NAME` does this for one model without --api-base (server: OPENAI_BASE_URL, else "
              "api.openai.com). Key: CQ_API_KEY or OPENAI_API_KEY (environment only).",
        flag="--api-base", env="CQ_API_BASE", metavar="URL")
    concurrency: int = option(4, "API models: requests in flight at once (429/5xx answers are retried with "
                                 "backoff).", min=1, flag="--concurrency", env="CQ_CONCURRENCY")
    api_timeout: float = option(120.0, "API models: seconds to wait for one answer before retrying it.",
                                check=_positive, flag="--api-timeout", env="CQ_API_TIMEOUT")
    api_retries: int = option(6, "API requests retried this many times (429, 5xx, timeouts)", min=0,
                              env="CQ_API_RETRIES")
    api_backoff: float = option(1.0, "first retry's wait in seconds (doubles each retry)", min=0,
                                env="CQ_API_BACKOFF")
    api_top_logprobs: int = option(20, "top log-probabilities asked of a chat server", min=0,
                                   env="CQ_API_TOP_LOGPROBS")
    api_cache: bool = option(True, "keep API responses on disk (0: off)", env="CQ_API_CACHE")


def settings(config=None) -> OpenAIOptions:
    """The openai backend's options as this run sets them (cqtools/models/backend_options.py)."""
    from .backend_options import resolved

    return resolved("openai", config)


def openai_generator(options: OpenAIOptions, config, model: str, kind: str = "auto",
                     role: str = "generator") -> "OpenAIGenerator":
    """The generator for ``model`` on the configured server; one per (server, model, options)."""
    if role != "generator":
        raise CQError(f"openai:{model}: an OpenAI-compatible server serves language models, not a {role}; "
                      f"pass a local {role} (a hub id or directory)")
    if kind == "seq2seq":
        raise CQError(f"openai:{model}: --kind seq2seq is for local models; an API model is prompted as a causal "
                      f"LM (use --kind auto)")
    base = server_base(options)
    require_key(base, model)
    key = (base, model, options, config.cache_root())
    with _LOCK:
        if key not in _GENERATORS:
            _GENERATORS[key] = OpenAIGenerator(model, base, options, config=config)
        return _GENERATORS[key]


def _status(model: str) -> dict:
    """``cq models``'s row for an API model: its server (no request is sent)."""
    base = public_url(server_base())
    return {"source": f"server {base}", "format": "api", "api_base": base, "api_model": model}


openai_generator.status = _status


def server_base(options: OpenAIOptions | None = None) -> str:
    """The server the options name (--api-base), else OPENAI_BASE_URL, else OpenAI's."""
    return (options or settings()).api_base or env("OPENAI_BASE_URL") or OPENAI_BASE


# ---------------------------------------------------------------------------------------------
# the generator


class _RefusedScoring(_NoLogprobs):
    """A 4xx answer to a scoring request: the server lacks a feature (echo), or refuses this request
    (a prompt over its context), which is then the record's problem, not the run's."""

    def __init__(self, status: int, message: str):
        super().__init__(f"HTTP {status}: {message}")
        self.status = status
        self.message = message


class OpenAIGenerator:
    """Greedy generation and continuation scoring over the OpenAI API (see the module's doc)."""

    kind = "api"

    def __init__(self, model: str, base: str, options: OpenAIOptions | None = None, config=None, **changes):
        """``options``: the backend's (default: as ``config`` sets them, :func:`settings`); ``changes``
        replace some of them (``concurrency=2``); ``config``: the run configuration (default: the process's)."""
        config = config if config is not None else current()  # an edge: Python callers may pass none
        options = dataclasses.replace(options or settings(config), **changes)
        self.model = model
        self.base = base.rstrip("/")
        self.name = f"openai:{model}"
        self.concurrency = options.concurrency
        self.timeout = float(options.api_timeout)
        self.retries = options.api_retries
        self.backoff = options.api_backoff  # seconds before the first retry; doubles each time
        self.top_logprobs = options.api_top_logprobs
        self.cache = ResponseCache(response_cache_dir(config.cache_root()), enabled=options.api_cache)
        self.info = {"model": self.name, "backend": "openai", "api_base": public_url(self.base), "kind": "api",
                     "temperature": 0, "seed": SEED}
        self._client = None
        self._pool: ThreadPoolExecutor | None = None
        self._score_mode: str | None = None  # "echo" | "top", found on the first scoring call
        self._bounded_warned = False
        self._reached = False  # a server that never answered and refuses connections: no retries
        self._lock = threading.Lock()
        log.info("model %s via the OpenAI-compatible API at %s (%d requests at once)", self.name,
                 public_url(self.base), self.concurrency)

    # -- HTTP --------------------------------------------------------------------------------

    def _get_client(self):
        with self._lock:
            if self._client is None:
                try:
                    import openai
                except ImportError:
                    raise ResourceError("API models need the openai client: pip install openai") from None
                self._client = openai.OpenAI(base_url=self.base, api_key=api_key() or "EMPTY", max_retries=0,
                                             timeout=self.timeout)
            return self._client

    def _map(self, func, items: list):
        """``func`` over ``items`` with at most ``concurrency`` calls in flight, results in order."""
        if len(items) <= 1 or self.concurrency == 1:
            return [func(x) for x in items]
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="cq-api")
        return list(self._pool.map(func, items))

    def _where(self, endpoint: str) -> str:
        return f"{self.name} at {public_url(self.base)}/{endpoint}"

    def request(self, endpoint: str, body: dict, refusals: bool = False) -> dict:
        """The JSON answer to POST ``endpoint`` with ``body``, from the cache when it holds it; bounded
        in time and size, retried, refusals never cached (:mod:`.api_http`)."""
        return api_http.request(self, endpoint, body, refusals)

    @contextlib.contextmanager
    def _shaped(self):
        """An answer whose log-probabilities have another shape than OpenAI's: a one-line error."""
        try:
            yield
        except (TypeError, KeyError, IndexError, AttributeError) as err:
            raise ApiError(f"{self._where('completions')}: the answer's logprobs have an unexpected shape "
                           f"({type(err).__name__}: {err}); is --api-base an OpenAI-compatible server?") from err

    # -- generation ----------------------------------------------------------------------------

    def chat_prompt(self, text: str) -> str:
        raise CQError(f"{self.name}: the server applies its own chat template; call generate(..., chat=True)")

    def _params(self, max_new_tokens: int, stop: Sequence[str] | None, temperature: float = 0.0,
                top_p: float = 1.0) -> dict:
        params = {"max_tokens": max_new_tokens, "temperature": 0, "seed": SEED}
        if temperature > 0:
            params.update(temperature=temperature, top_p=top_p)
        if stop:
            params["stop"] = list(stop)[:MAX_STOP]
        return params

    def generate(self, prompts: list[str], max_new_tokens: int = 32, chat: bool | None = None,
                 stop: Sequence[str] | None = None, batch_size: int | None = None, temperature: float = 0.0,
                 top_p: float = 1.0, seed: int | Sequence[int] | None = None) -> list[str]:
        """Continuations, one request per prompt (``chat`` not False: chat/completions with
        the prompt as the user turn; False: completions on the raw text), cut at the first of ``stop``.
        Greedy (temperature 0, seed 0) unless ``temperature`` > 0: then the request carries it,
        ``top_p`` and the prompt's seed (:func:`~cqtools.models.runtime.prompt_seed` of ``seed`` and
        the prompt), so a repeated prompt is answered from the response cache with the same text.
        ``batch_size`` is accepted for the Protocol and ignored: ``--concurrency`` sets the pace."""
        from .runtime import _cut, prompt_seeds

        use_chat = chat is not False
        endpoint = "chat/completions" if use_chat else "completions"
        params = self._params(max_new_tokens, stop, temperature, top_p)
        items = list(prompts)
        if temperature > 0:
            items = list(zip(items, prompt_seeds(seed, items)))

        def one(item) -> str:
            prompt, body_seed = item if temperature > 0 else (item, SEED)
            text = self._complete(endpoint, prompt, {**params, "seed": body_seed}, use_chat)
            return _cut(text, stop)

        return self._unique_map(one, items)

    def _complete(self, endpoint: str, prompt: str, params: dict, use_chat: bool) -> str:
        if use_chat:
            body = {"model": self.model, "messages": [{"role": "user", "content": prompt}], **params}
            choice = self.request(endpoint, body)["choices"][0]
            message = choice.get("message")
            text = (message.get("content") if isinstance(message, dict) else message) or ""
        else:
            body = {"model": self.model, "prompt": prompt, **params}
            text = self.request(endpoint, body)["choices"][0].get("text") or ""
        if not isinstance(text, str):
            raise ApiError(f"{self._where(endpoint)}: the answer's text is a {type(text).__name__}, not a string; "
                           f"is --api-base an OpenAI-compatible server?")
        return text

    def _unique_map(self, func, items: list) -> list:
        """``func`` over the distinct items only (the same request is never in flight twice)."""
        distinct = list(dict.fromkeys(items))
        results = dict(zip(distinct, self._map(func, distinct)))
        return [results[x] for x in items]

    # -- scoring -------------------------------------------------------------------------------

    def score(self, prompts: list[str], continuations: list[str], prefix: str = "",
              batch_size: int | None = None) -> list[float]:
        """Summed log p(continuation | prefix + prompt) for each pair (see the module's doc)."""
        if len(prompts) != len(continuations):
            raise ValueError("prompts and continuations must have the same length")
        pairs = [(prefix + p, c) for p, c in zip(prompts, continuations)]
        if any(c and not ctx for ctx, c in pairs):
            raise ValueError("cannot score a continuation with no context; pass a prompt or prefix")
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
                raise RequestError(f"{self._where('completions')}: {err}") from None
            except _NoLogprobs as err:  # answered without logprobs this time: the server's fault
                raise ApiError(f"{self._where('completions')}: {err}") from None

        for pair, value in zip(todo, self._map(one, todo)):
            scores[pair] = value
        bounded = [pair for pair, value in scores.items() if isinstance(value, _Bound)]
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
        except _NoLogprobs as echo_err:
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
            raise RequestError(f"{self._where('completions')}: {top_err}") from None
        except _NoLogprobs as top_err:
            raise ApiError(f"{self._where('completions')} gives no log-probabilities (echo+logprobs: "
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
        except _NoLogprobs:
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
                raise ApiError(f"{self._where('completions')}: HTTP {err.status} ({err.message}); set the key in "
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
            raise _NoLogprobs("no tokens, token_logprobs and text_offset in the answer")
        if not (choice.get("text") or "").startswith(full) or offsets[0] != 0:
            raise _NoLogprobs("the prompt is not echoed")
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
                raise _NoLogprobs("no top_logprobs in the answer")
            rest = continuation[pos:]
            match = max((t for t in top if t and rest.startswith(t)), key=len, default=None)
            if match is None:
                return _Bound(total + min(top.values()))
            total += top[match]
            pos += len(match)
        return total

