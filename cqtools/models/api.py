"""What an API model backend needs besides its client: the settings the CLI fills (--api-base,
--concurrency, --api-timeout), the key (from the environment only), the on-disk response cache,
and the log-probability arithmetic over a server's token lists (cqtools/models/openai_backend.py)."""
from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from urllib.parse import urlsplit, urlunsplit

from ..config import env
from ..errors import CQError, ServiceError


OPENAI_BASE = "https://api.openai.com/v1"
KEY_VARIABLES = ("CQ_API_KEY", "OPENAI_API_KEY")
RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}
SEED = 0
MAX_STOP = 4  # the OpenAI API takes at most 4 stop sequences; the rest are cut here
ECHO_TOLERANCE = 0.1  # prompt and next-token logprobs of one token may differ this much (batched kernels)


class ApiError(ServiceError):
    """A request the server refused or never answered (after the retries): the service's failure."""


class RequestError(CQError):
    """The server refused this one request (a 4xx other than a refused key): the record's problem,
    set aside under ``--on-error skip``."""


class ContextTooLong(RequestError):
    """The server refused a prompt over its model's context and said the context (``context``: "This model's
    maximum context length is N tokens", as vLLM, llama.cpp's servers and OpenAI word it); ``learned``: cq knows
    more than before (the context, or a closer count of the model's characters a token, from the prompt's own token
    count in the refusal: cqtools/models/served_context.py holds both)."""

    def __init__(self, message: str, context: int, learned: bool):
        super().__init__(message)
        self.context, self.learned = context, learned


CONTEXT_SAID = re.compile(r"maximum context length is (\d+) tokens")
# ... and how many tokens the refused prompt was: "you requested X tokens (Y in the messages, Z in the completion)"
# (vLLM, llama-cpp-python), "your messages resulted in X tokens" (OpenAI)
PROMPT_SAID = re.compile(r"(?:you requested|resulted in) (\d+) tokens(?: \((\d+) in the messages)?")


def prompt_chars(body: dict) -> int:
    """Characters of a request's prompt, or of its messages' contents."""
    if isinstance(body.get("prompt"), str):
        return len(body["prompt"])
    return sum(len(str(m.get("content") or "")) for m in body.get("messages") or [] if isinstance(m, dict))


def api_key() -> str | None:
    """The key from the environment only (CQ_API_KEY, then OPENAI_API_KEY); None if unset."""
    for var in KEY_VARIABLES:
        value = (env(var) or "").strip()
        if value:
            return value
    return None


def require_key(base: str, model: str) -> None:
    """A hosted API (OpenAI's) without a key fails here, before any request: its server would refuse
    every request anyway (a server of one's own, e.g. vLLM on --api-base, needs none)."""
    if urlsplit(base).hostname == urlsplit(OPENAI_BASE).hostname and api_key() is None:
        from ..errors import ResourceError

        raise ResourceError(f"openai:{model} at {public_url(base)} needs a key: set CQ_API_KEY or OPENAI_API_KEY "
                            "(or name a server of your own with --api-base URL)")


_UNRESOLVED = ("name or service not known", "temporary failure in name resolution", "nodename nor servname",
               "getaddrinfo failed", "no address associated with hostname")


def unresolved(err: BaseException) -> bool:
    """Whether a connection error is a failed host-name lookup (offline, or a misspelled host): retrying
    cannot help, unlike a dropped connection."""
    import socket

    seen = set()
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        if isinstance(err, socket.gaierror) or any(m in str(err).lower() for m in _UNRESOLVED):
            return True
        err = err.__cause__ or err.__context__
    return False


def public_url(url: str) -> str:
    """``url`` without user info, query or fragment (where a key could hide), for logs and meta."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path.rstrip("/"), "", ""))


# ---------------------------------------------------------------------------------------------
# the response cache


def response_cache_dir(cache_root: str) -> str:
    """The API responses' area of the cache folder ``cache_root`` (a run configuration's ``cache_root()``)."""
    return os.path.join(cache_root, "api")


def cache_key(base: str, endpoint: str, body: dict) -> str:
    """Digest of what decides a response: the server, the endpoint and the whole body (model and
    parameters). The key is not part of it (nor sent anywhere but the Authorization header)."""
    blob = json.dumps({"base": public_url(base), "endpoint": endpoint, "body": body}, sort_keys=True,
                      ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


class ResponseCache:
    """One JSON file per response, written to a temporary name and renamed into place, so threads
    and processes sharing the directory never see half a file. ``CQ_API_CACHE=0`` turns it off."""

    def __init__(self, root: str, enabled: bool = True):
        self.root = root
        self.enabled = enabled

    def _path(self, key: str) -> str:
        return os.path.join(self.root, key[:2], key + ".json")

    def get(self, key: str) -> dict | None:
        if not self.enabled:
            return None
        try:
            with open(self._path(key), "rb") as fh:
                return json.loads(fh.read())
        except (OSError, ValueError):
            return None

    def put(self, key: str, value: dict) -> None:
        if not self.enabled:
            return
        path = self._path(key)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-")
        try:
            with os.fdopen(fd, "w") as fh:
                json.dump(value, fh, ensure_ascii=False)
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise


class NoLogprobs(Exception):
    """The server answered without the logprobs a scoring method needs."""


class Bound(float):
    """A log p that is only an upper bound (the continuation left the listed top tokens)."""


def continuation_logprob(tokens: list[str], logprobs: list, offsets: list[int], start: int, end: int) -> float:
    """Sum of the logprobs of the tokens overlapping characters [start, end) of the echoed text.

    A token that straddles ``start`` (the server merged the prompt's last characters with the
    continuation's first) counts: its probability is the continuation's."""
    total = 0.0
    for n, (token, value, offset) in enumerate(zip(tokens, logprobs, offsets)):
        if offset >= end:
            break
        # where the token ends in the text: the next token's offset (a BOS token has no width)
        token_end = min(offset + len(token), offsets[n + 1]) if n + 1 < len(offsets) else offset + len(token)
        if offset >= start or token_end > start:
            if value is None:
                raise ValueError("cannot score a continuation with no context; pass a prompt or prefix")
            total += float(value)
    return total


def next_token_logprobs(choice: dict) -> dict[str, float]:
    """{token: logprob} for the first generated token, from either logprobs layout: the completions
    API's ``top_logprobs: [{token: lp}]`` or the chat API's ``content: [{top_logprobs: [...]}]``."""
    lp = choice.get("logprobs") or {}
    top = lp.get("top_logprobs")
    if isinstance(top, list) and top and isinstance(top[0], dict):
        return {str(k): float(v) for k, v in top[0].items() if v is not None}
    content = lp.get("content")
    if isinstance(content, list) and content and isinstance(content[0], dict):
        listed = content[0].get("top_logprobs") or []
        return {str(x["token"]): float(x["logprob"]) for x in listed if x.get("logprob") is not None}
    return {}


def server_message(err) -> str:
    """The server's error message, on one line."""
    body = getattr(err, "body", None)
    message = None
    if isinstance(body, dict):
        inner = body.get("error", body)
        message = inner.get("message") if isinstance(inner, dict) else inner
    message = str(message or getattr(err, "message", "") or err)
    return redact(" ".join(message.split()))[:300]


def redact(text: str) -> str:
    """``text`` without the API key (a server's 401 message may echo it), nor anything shaped like one."""
    import re

    key = api_key()
    if key and len(key) >= 8:
        text = text.replace(key, "[key redacted]")
    return re.sub(r"\b(sk-[A-Za-z0-9_\-]{6})[A-Za-z0-9_\-]{8,}", r"\1...[redacted]", text)
