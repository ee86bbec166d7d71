"""One request to an OpenAI-compatible server, bounded: the HTTP half of
:class:`~cqtools.models.openai_backend.OpenAIGenerator`.

- the answer comes from the response cache when it holds it (answers only: a refusal is never
  cached, since a rerun may well be answered, and an old cached refusal is ignored);
- retries 408/409/429/5xx, timeouts and dropped connections ``CQ_API_RETRIES`` times, waiting
  ``CQ_API_BACKOFF`` seconds doubled each time (or the server's Retry-After), with jitter;
- each attempt has a total deadline of ``--api-timeout`` seconds (the client's own timeout only
  bounds each wait between bytes: a server that drips its body would hold the run forever), and
  the answer's body a size cap (:data:`MAX_BYTES`), past which the request is a one-line
  :class:`ApiError` and nothing is cached.
"""
from __future__ import annotations

import json
import logging
import random
import time

from .api import CONTEXT_SAID, PROMPT_SAID, RETRY_STATUS, ApiError, ContextTooLong, RequestError, cache_key, prompt_chars, \
    server_message

log = logging.getLogger("cqtools")

MAX_BYTES = 32 << 20  # an answer's body: far above any completion with logprobs, far below a runaway one


class Refused(Exception):
    """A 4xx answer to a scoring request (kept to decide whether the server lacks a feature)."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


class TooSlow(Exception):
    """The answer did not arrive whole within the deadline."""


class CutShort(Exception):
    """The connection broke before the whole answer came (the server closed it, a reset): retried."""


def request(gen, endpoint: str, body: dict, refusals: bool = False) -> dict:
    """The JSON answer to POST ``endpoint`` with ``body`` from ``gen``'s server (see the module's doc).
    Errors raise :class:`ApiError`; a 4xx raises :class:`Refused` with ``refusals``, else
    :class:`RequestError` (the record's problem)."""
    key = cache_key(gen.base, endpoint, body)
    hit = gen.cache.get(key)
    if hit is not None and answer_shaped(hit):
        return hit
    attempt = 0
    while True:
        wait = _attempt(gen, endpoint, body, refusals, attempt)
        if isinstance(wait, dict):
            gen.cache.put(key, wait)
            return wait
        time.sleep(wait)
        attempt += 1


def _attempt(gen, endpoint: str, body: dict, refusals: bool, attempt: int):
    """The answer (a dict), or the seconds to wait before retrying; raises when there is no retry."""
    import openai

    where = gen.where(endpoint)
    try:
        data = fetch(gen.client(), endpoint, body, gen.timeout, where)
        gen.reached = True
    except openai.APIStatusError as err:
        return _status_error(gen, where, err, refusals, attempt, body)
    except (openai.APIConnectionError, TooSlow, CutShort) as err:  # a timeout is a connection error too
        return _connection_error(gen, where, err, attempt)
    except ValueError:
        raise ApiError(f"{where}: the answer is not JSON; is --api-base an OpenAI-compatible server (usually "
                       f"ending in /v1)?") from None
    if not answer_shaped(data):
        raise ApiError(f"{where}: the answer has no list of choices: {str(data)[:200]}; is --api-base an "
                       f"OpenAI-compatible server?")
    return data


def fetch(client, endpoint: str, body: dict, deadline: float, where: str) -> dict:
    """POST and read the answer within ``deadline`` seconds in all and :data:`MAX_BYTES` bytes."""
    resource = client.chat.completions if endpoint == "chat/completions" else client.completions
    start = time.monotonic()
    chunks, size = [], 0
    with resource.with_streaming_response.create(**body) as response:
        for chunk in _chunks(response):
            size += len(chunk)
            if size > MAX_BYTES:
                raise ApiError(f"{where}: the answer is over {MAX_BYTES >> 20} MiB, far more than any completion; is "
                               f"--api-base an OpenAI-compatible server?")
            if time.monotonic() - start > deadline:
                raise TooSlow(f"no whole answer within --api-timeout ({deadline:g} s in all)")
            chunks.append(chunk)
    return json.loads(b"".join(chunks))


def _chunks(response):
    """The body's byte chunks; the client's wait between bytes (its timeout) ending is :class:`TooSlow`."""
    try:
        yield from response.iter_bytes()
    except Exception as err:  # noqa: BLE001 - the HTTP library's own timeout and transport errors
        if "timeout" in type(err).__name__.lower():
            raise TooSlow("no answer within --api-timeout") from None
        # the HTTP library's transport errors (httpx's TransportError: ReadError, RemoteProtocolError ...), read
        # from a stream outside the openai client's own handling; named, as the library's module name varies
        if isinstance(err, OSError) or any(c.__name__ == "TransportError" for c in type(err).__mro__):
            raise CutShort(f"the answer was cut short ({type(err).__name__}: {err})") from None
        raise


def _status_error(gen, where: str, err, refusals: bool, attempt: int, body: dict) -> float:
    status, message = err.status_code, server_message(err)
    if status in RETRY_STATUS and attempt < gen.retries:
        wait = _wait(gen.backoff, attempt, err.response.headers.get("retry-after"))
        log.warning("%s: HTTP %d, retry %d/%d in %.2f s", where, status, attempt + 1, gen.retries, wait)
        return wait
    if status in (401, 403):
        raise ApiError(f"{where}: HTTP {status} ({message}); set the key in CQ_API_KEY or OPENAI_API_KEY") from None
    if status in RETRY_STATUS:
        raise ApiError(f"{where}: HTTP {status} after {gen.retries} retries: {message}; is the server overloaded? "
                       f"try a lower --concurrency") from None
    if refusals and 400 <= status < 500:
        raise Refused(status, message) from None
    said = CONTEXT_SAID.search(message or "") if status == 400 else None
    if said:  # a prompt over the model's context, and the server said the context: later prompts are fitted to it
        from .served_context import learn

        used = PROMPT_SAID.search(message)
        tokens = (int(used.group(2)) if used.group(2) else int(used.group(1)) - int(body.get("max_tokens") or 0)) \
            if used else 0
        ratio = prompt_chars(body) / tokens if tokens > 0 else None
        raise ContextTooLong(f"{where}: HTTP {status}: {message}", int(said.group(1)),
                             learn(gen.base, gen.model, int(said.group(1)), ratio)) from None
    if 400 <= status < 500:  # this request (too long, malformed): the record's problem
        raise RequestError(f"{where}: HTTP {status}: {message}") from None
    raise ApiError(f"{where}: HTTP {status}: {message}") from None


def _connection_error(gen, where: str, err, attempt: int) -> float:
    import openai

    if isinstance(err, (TooSlow, CutShort)):
        what = str(err)
    elif isinstance(err, openai.APITimeoutError):
        what = "no answer within --api-timeout"
    else:
        what = f"cannot connect ({err.__cause__ or err})"
    from .api import unresolved

    if not isinstance(err, (TooSlow, CutShort)) and unresolved(err):  # no such host (or offline): no retry can help
        raise ApiError(f"{where}: cannot resolve the server's host name; check --api-base and the network") from None
    if not gen.reached and refused_connection(err):  # nothing listens there: a wrong --api-base, not a blip
        raise ApiError(f"{where}: {what}; nothing answers at that address: check that the server is up and "
                       f"--api-base is right") from None
    if attempt < gen.retries:
        wait = _wait(gen.backoff, attempt, None)
        log.warning("%s: %s, retry %d/%d in %.2f s", where, what, attempt + 1, gen.retries, wait)
        return wait
    fix = "raise --api-timeout, or check the server" if isinstance(err, TooSlow) else \
        "check that the server is up and --api-base is right"
    raise ApiError(f"{where}: {what} (after {gen.retries} retries); {fix}") from None


def _wait(backoff: float, attempt: int, retry_after: str | None) -> float:
    try:
        if retry_after is not None:
            return min(60.0, max(0.0, float(retry_after)))
    except ValueError:
        pass
    return min(60.0, backoff * 2 ** attempt) * (1 + 0.1 * random.random())


def answer_shaped(data) -> bool:
    """Whether ``data`` looks like an OpenAI answer: a dict with a non-empty list of choice objects."""
    choices = data.get("choices") if isinstance(data, dict) else None
    return isinstance(choices, list) and bool(choices) and all(isinstance(c, dict) for c in choices)


def refused_connection(err: BaseException) -> bool:
    """Whether a connection error is a refused connection (nothing listens at the address)."""
    seen = set()
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        if isinstance(err, ConnectionRefusedError) or "connection refused" in str(err).lower() \
                or "errno 111" in str(err).lower():
            return True
        err = err.__cause__ or err.__context__
    return False
