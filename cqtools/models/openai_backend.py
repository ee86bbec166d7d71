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

import dataclasses
import logging
import threading
from dataclasses import dataclass
from typing import Sequence

from ..config import RunConfig, env
from ..errors import CQError, InputError, ResourceError
from ..registry import option
from . import api_http
from .api import (ECHO_TOLERANCE, MAX_STOP, OPENAI_BASE, RETRY_STATUS, SEED, ApiError, RequestError,  # noqa: F401
                  ResponseCache, api_key, cache_key, continuation_logprob, next_token_logprobs, public_url,
                  require_key, response_cache_dir, unresolved)
from .api_scoring import LogprobScoring
from .batching import RequestPool
from .cutting import cut_at_stop
from . import usage
from .load import route  # noqa: F401  (where a name goes: the stages ask it here)
from .runtime import prompt_seeds

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
        None, "The openai backend's server: `--model openai:NAME` sends NAME's calls to the OpenAI-compatible "
              "server at URL (vLLM, TGI, llama.cpp, a hosted API), e.g. http://node1:8000/v1 (without it: "
              "OPENAI_BASE_URL, else api.openai.com); a name without openai: is a local model. Key: CQ_API_KEY or "
              "OPENAI_API_KEY (environment only).",
        flag="--api-base", env="CQ_API_BASE", metavar="URL", shaping=False)
    concurrency: int = option(4, "API models: requests in flight at once (429/5xx answers are retried with "
                                 "backoff).", min=1, flag="--concurrency", env="CQ_CONCURRENCY", shaping=False)
    api_timeout: float = option(120.0, "API models: seconds to wait for one answer before retrying it.",
                                check=_positive, flag="--api-timeout", env="CQ_API_TIMEOUT", shaping=False)
    api_retries: int = option(6, "API requests retried this many times (429, 5xx, timeouts)", min=0,
                              env="CQ_API_RETRIES", shaping=False)
    api_backoff: float = option(1.0, "first retry's wait in seconds (doubles each retry)", min=0,
                                env="CQ_API_BACKOFF", shaping=False)
    api_top_logprobs: int = option(20, "top log-probabilities asked of a chat server", min=0,
                                   env="CQ_API_TOP_LOGPROBS")
    api_cache: bool = option(True, "keep API responses on disk (0: off)", env="CQ_API_CACHE", shaping=False)


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


def _status(model: str, config=None) -> dict:
    """``cq models``'s row for an API model: its server under ``config`` (no request is sent), not usable when it
    is OpenAI's and no key is set (every stage refuses it then: :func:`require_key`)."""
    from ..errors import ResourceError

    raw = server_base(settings(config))
    base = public_url(raw)
    row = {"source": f"server {base}", "format": "api", "api_base": base, "api_model": model}
    try:
        require_key(raw, model)
    except ResourceError as err:
        row.update(usable=False, problem=str(err))
    return row


openai_generator.status = _status


def server_base(options: OpenAIOptions | None = None) -> str:
    """The server the options name (--api-base), else OPENAI_BASE_URL, else OpenAI's."""
    return (options or settings()).api_base or env("OPENAI_BASE_URL") or OPENAI_BASE


# ---------------------------------------------------------------------------------------------
# the generator


class OpenAIGenerator(LogprobScoring):
    """Greedy generation and continuation scoring over the OpenAI API (see the module's doc): the requests here
    (sent by :mod:`.api_http`, ``--concurrency`` at a time by a :class:`~cqtools.models.batching.RequestPool`),
    scoring in :class:`~cqtools.models.api_scoring.LogprobScoring`."""

    kind = "api"

    def __init__(self, model: str, base: str, options: OpenAIOptions | None = None, config=None, **changes):
        """``options``: the backend's (default: as ``config`` sets them, :func:`settings`); ``changes``
        replace some of them (``concurrency=2``); ``config``: the run configuration (default: one from the environment)."""
        config = config if config is not None else RunConfig.from_env()  # an edge: Python callers may pass none
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
        self.pool = RequestPool(self.concurrency)
        self.reached = False  # a server that never answered and refuses connections: no retries
        self._client = None
        self._score_mode: str | None = None  # "echo" | "top", found on the first scoring call
        self._bounded_warned = False
        self._lock = threading.Lock()
        log.info("model %s via the OpenAI-compatible API at %s (%d requests at once)", self.name,
                 public_url(self.base), self.concurrency)

    # -- HTTP --------------------------------------------------------------------------------

    def client(self):
        """The ``openai`` client (made on the first request)."""
        with self._lock:
            if self._client is None:
                try:
                    import openai
                except ImportError:
                    raise ResourceError("API models need the openai client: pip install openai") from None
                self._client = openai.OpenAI(base_url=self.base, api_key=api_key() or "EMPTY", max_retries=0,
                                             timeout=self.timeout)
            return self._client

    def where(self, endpoint: str) -> str:
        """``endpoint`` of this model's server, as error messages name it."""
        return f"{self.name} at {public_url(self.base)}/{endpoint}"

    def request(self, endpoint: str, body: dict, refusals: bool = False) -> dict:
        """The JSON answer to POST ``endpoint`` with ``body``, from the cache when it holds it; bounded
        in time and size, retried, refusals never cached (:mod:`.api_http`)."""
        return api_http.request(self, endpoint, body, refusals)

    # -- generation ----------------------------------------------------------------------------

    def chat_prompt(self, text: str) -> str:
        raise CQError(f"{self.name}: the server applies its own chat template; call generate(..., chat=True)")

    def generate(self, prompts: list[str], max_new_tokens: int = 32, chat: bool | None = None,
                 stop: Sequence[str] | None = None, batch_size: int | None = None, temperature: float = 0.0,
                 top_p: float = 1.0, seed: int | Sequence[int] | None = None) -> list[str]:
        """Continuations, one request per prompt (``chat`` not False: chat/completions with
        the prompt as the user turn; False: completions on the raw text), cut at the first of ``stop``.
        Greedy (temperature 0, seed 0) unless ``temperature`` > 0: then the request carries it,
        ``top_p`` and the prompt's seed (:func:`~cqtools.models.runtime.prompt_seed` of ``seed`` and
        the prompt), so a repeated prompt is answered from the response cache with the same text.
        ``batch_size`` is accepted for the Protocol and ignored: ``--concurrency`` sets the pace."""
        use_chat = chat is not False
        endpoint = "chat/completions" if use_chat else "completions"
        params = request_params(max_new_tokens, stop, temperature, top_p)
        items = list(prompts)
        if temperature > 0:
            items = list(zip(items, prompt_seeds(seed, items)))

        def one(item) -> tuple[str, dict]:
            prompt, body_seed = item if temperature > 0 else (item, SEED)
            text, used = self._complete(endpoint, prompt, {**params, "seed": body_seed}, use_chat)
            return cut_at_stop(text, stop), used

        with usage.timed():
            done = self.pool.distinct_map(one, items)
        if usage.active():  # the server's own counts (cqtools/models/usage.py); 0 where it gives none
            usage.add(calls=len(done), prompt_tokens=sum(_tokens(u, "prompt_tokens") for _, u in done),
                      generated_tokens=sum(_tokens(u, "completion_tokens") for _, u in done))
        return [text for text, _ in done]

    def _complete(self, endpoint: str, prompt: str, params: dict, use_chat: bool) -> tuple[str, dict]:
        """The answer's text and its ``usage`` (the server's token counts; {} when it gives none)."""
        if use_chat:
            body = {"model": self.model, "messages": [{"role": "user", "content": prompt}], **params}
            answer = self.request(endpoint, body)
            message = answer["choices"][0].get("message")
            text = (message.get("content") if isinstance(message, dict) else message) or ""
        else:
            body = {"model": self.model, "prompt": prompt, **params}
            answer = self.request(endpoint, body)
            text = answer["choices"][0].get("text") or ""
        if not isinstance(text, str):
            raise ApiError(f"{self.where(endpoint)}: the answer's text is a {type(text).__name__}, not a string; "
                           f"is --api-base an OpenAI-compatible server?")
        used = answer.get("usage")
        return text, used if isinstance(used, dict) else {}


def _tokens(used: dict, key: str) -> int:
    value = used.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def request_params(max_new_tokens: int, stop: Sequence[str] | None, temperature: float = 0.0,
                   top_p: float = 1.0) -> dict:
    """A generation request's parameters: greedy with a fixed seed unless ``temperature`` > 0; at most
    :data:`~cqtools.models.api.MAX_STOP` stop strings (the API's limit: the rest are cut here, and
    :func:`~cqtools.models.cutting.cut_at_stop` cuts at every one of them)."""
    params = {"max_tokens": max_new_tokens, "temperature": 0, "seed": SEED}
    if temperature > 0:
        params.update(temperature=temperature, top_p=top_p)
    if stop:
        params["stop"] = list(stop)[:MAX_STOP]
    return params
