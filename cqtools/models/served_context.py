"""How long an input an OpenAI-compatible server's model takes: what the server advertises (vLLM lists
``max_model_len`` per model in ``GET /v1/models``; llama.cpp's server ``n_ctx`` under ``/props``), else None."""
from __future__ import annotations

import json
import logging
import urllib.request

log = logging.getLogger("cqtools")

# The budget of "as many passages as fit" (cq answer --max-passage-tokens 0, as --preset refuel sets it) when a
# served model's server does not say its context: a common context of served instruct models, and what the
# REFUEL preset behaved like the release with (issue 35); --max-passage-tokens N sets another.
DEFAULT_CONTEXT = 4096
_KNOWN: dict[tuple[str, str], int | None] = {}  # (server, model) -> what the server advertises
_NOTED: set[tuple[str, str]] = set()  # the models the default was said for


def _get(url: str, timeout: float) -> dict | None:
    from ..config import env

    key = env("CQ_API_KEY") or env("OPENAI_API_KEY") or "EMPTY"
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {key}"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - the user's server
            return json.loads(response.read(1_000_000))
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


def context_of(model) -> int | None:
    """A served model's context: its ``context`` when it has one, else what its server advertises, else
    :data:`DEFAULT_CONTEXT` with a one-line note (once per model); None for a model that is not served."""
    context = getattr(model, "context", None)
    if isinstance(context, int):
        return context
    base, name = getattr(model, "base", None), getattr(model, "model", None)
    if not (isinstance(base, str) and isinstance(name, str)):
        return None
    found = advertised(base, name)
    if found is not None:
        return found
    if (base, name) not in _NOTED:
        _NOTED.add((base, name))
        log.warning(f"the server at {base} does not say how long an input {name} takes: reading passages up to "
                    f"{DEFAULT_CONTEXT} tokens (cq's default); give --max-passage-tokens N to set the budget")
    return DEFAULT_CONTEXT
