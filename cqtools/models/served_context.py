"""How long an input an OpenAI-compatible server's model takes: what the server advertises (vLLM lists
``max_model_len`` per model in ``GET /v1/models``; llama.cpp's server ``n_ctx`` under ``/props``), else None."""
from __future__ import annotations

import json
import logging
import threading
import urllib.request

log = logging.getLogger("cqtools")

# The budget of "as many passages as fit" (cq answer --max-passage-tokens 0, as --preset refuel sets it) when a
# served model's server does not say its context: a common context of served instruct models, and what the
# REFUEL preset behaved like the release with (issue 35); --max-passage-tokens N sets another.
DEFAULT_CONTEXT = 4096
_KNOWN: dict[tuple[str, str], int | None] = {}  # (server, model) -> what the server advertises
_NOTED: set[tuple[str, str]] = set()  # the models the default was said for
DEFAULT_CHARS_PER_TOKEN = 4.0  # the estimate for a model whose tokenizer cq cannot see (cqtools/stages/evidence.py)
# a refused prompt's characters a token, less this share, so that the next prompts (other texts) fit at once: the
# offline SmolLM2 behind llama.cpp's server read 3.86-3.94 on three refused REFUEL prompts of one run
RATIO_MARGIN = 0.9
_LEARNING = threading.Lock()
_VERSION = 0
_CHARS: dict[tuple[str, str], float] = {}  # (server, model) -> characters a token, from a refusal's own count


MAX_BYTES = 1 << 20  # a listing of the server's models: far above any real one


def _get(url: str, timeout: float) -> dict | None:
    """The JSON at ``url``, read within ``timeout`` seconds in all (urlopen's own timeout only bounds
    each wait between bytes: a server that drips its body would hold the run forever) and
    :data:`MAX_BYTES`; None when it is not that."""
    import time

    from ..config import env

    key = env("CQ_API_KEY") or env("OPENAI_API_KEY") or "EMPTY"
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {key}"})
    deadline = time.monotonic() + timeout
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - the user's server
            body = b""
            while chunk := response.read1(65536):
                body += chunk
                if len(body) > MAX_BYTES or time.monotonic() > deadline:
                    log.warning(f"{url}: no whole answer within {timeout:g} s and {MAX_BYTES >> 20} MiB; read as "
                                f"saying nothing")
                    return None
            return json.loads(body)
    except (OSError, ValueError):
        return None


def advertised(base: str, model: str, timeout: float = 10.0) -> int | None:
    """The context length the server at ``base`` advertises for ``model`` (None when it says nothing)."""
    key = (base, model)
    if key not in _KNOWN:
        listing = _get(base.rstrip("/") + "/models", timeout) or {}
        rows = [r for r in listing.get("data") or [] if isinstance(r, dict) and r.get("id") == model]
        found = next((r.get(k) for r in rows for k in ("max_model_len", "context_length", "n_ctx")
                      if isinstance(r.get(k), int)), None)
        if found is None:
            props = _get(base.rstrip("/").removesuffix("/v1") + "/props", timeout) or {}
            n_ctx = (props.get("default_generation_settings") or {}).get("n_ctx")
            found = n_ctx if isinstance(n_ctx, int) else None
        _KNOWN[key] = found
    return _KNOWN[key]


def learn(base: str, model: str, context: int, chars_per_token: float | None = None) -> bool:
    """A server refused a prompt over ``model``'s context and said the context (cqtools/models/api.py
    ContextTooLong), and perhaps the prompt's tokens (``chars_per_token``: its characters over them): later budgets
    of that model read both (:func:`known`, :func:`chars_per_token`). True when cq knows more than before: another
    context, or fewer characters a token than it counted with."""
    global _VERSION
    with _LEARNING:  # two refusals of one batch, answered at once
        learned = _learn((base, model), context, chars_per_token)
        _VERSION += learned
        return learned


def version() -> int:
    """How many times this process learned more about a served model's context (:func:`learn`): a stage whose batch
    was refused reads it again when this moved while it ran."""
    return _VERSION


def _learn(key: tuple[str, str], context: int, chars_per_token: float | None) -> bool:
    base, model = key
    learned = _KNOWN.get(key) != context
    if learned:
        _KNOWN[key] = context
        log.warning(f"the server at {base} says {model} takes {context} tokens: prompts are fitted to that from "
                    "now on")
    if chars_per_token is not None:
        chars_per_token *= RATIO_MARGIN
    if chars_per_token is not None and chars_per_token < _CHARS.get(key, DEFAULT_CHARS_PER_TOKEN):
        _CHARS[key] = chars_per_token
        learned = True
        log.warning(f"the server at {base} counts {model}'s prompts at {chars_per_token:.2f} characters a token: "
                    "budgets count with that from now on")
    return learned


def chars_per_token(model) -> float:
    """Characters a token of a served ``model``, as budgets count its prompts: cq's estimate, or fewer where a
    refusal showed its server counts more tokens (:func:`learn`)."""
    base, name = getattr(model, "base", None), getattr(model, "model", None)
    return _CHARS.get((base, name), DEFAULT_CHARS_PER_TOKEN)


def known(model) -> int | None:
    """The context a served ``model``'s server advertised or said in a refusal, as far as this process has
    heard (no request is sent); None when nothing was heard, or for a model that is not served."""
    base, name = getattr(model, "base", None), getattr(model, "model", None)
    return _KNOWN.get((base, name)) if isinstance(base, str) and isinstance(name, str) else None


def context_of(model) -> int | None:
    """A served model's context: its ``context`` when it has one, else what its server advertises, else
    :data:`DEFAULT_CONTEXT` with a one-line note (once per model); None for a model that is not served."""
    context = getattr(model, "context", None)
    if isinstance(context, int):
        return context
    base, name = getattr(model, "base", None), getattr(model, "model", None)
    if not (isinstance(base, str) and isinstance(name, str)):
        return None
    timeout = getattr(model, "timeout", None)  # --api-timeout
    found = advertised(base, name, timeout if isinstance(timeout, (int, float)) and timeout > 0 else 10.0)
    if found is not None:
        return found
    if (base, name) not in _NOTED:
        _NOTED.add((base, name))
        log.warning(f"the server at {base} does not say how long an input {name} takes: reading passages up to "
                    f"{DEFAULT_CONTEXT} tokens (cq's default); give --max-passage-tokens N to set the budget")
    return DEFAULT_CONTEXT
