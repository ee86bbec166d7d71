"""What every local backend shares: the device and dtype, the process-wide model cache, the
batching mode and the input limits (cqtools/models/backends.py has the why), and seeding."""
from __future__ import annotations

import logging
import os

from ..errors import ResourceError

log = logging.getLogger("cqtools")

_LOADED: dict[tuple, object] = {}
_MAX_INPUT_TOKENS: int | None = None
DEFAULT_CONTEXT = 4096  # for a model whose config and tokenizer name no context length


# ---------------------------------------------------------------------------------------------
# batch invariance and input limits


def padded_batches() -> bool:
    """True when ``CQ_PADDED_BATCHES`` asks for padded (faster, batch-dependent) model batches."""
    return os.environ.get("CQ_PADDED_BATCHES", "") not in ("", "0")


def set_max_input_tokens(limit: int | None) -> None:
    """Process-wide cap on a model input's tokens (``--max-input-tokens``); None: the model's context."""
    global _MAX_INPUT_TOKENS
    _MAX_INPUT_TOKENS = limit


def max_input_tokens() -> int | None:
    return _MAX_INPUT_TOKENS


def _groups(order: list[int], size: int):
    for start in range(0, len(order), size):
        yield order[start:start + size]


def cut_middle(ids: list, budget: int) -> list:
    """``ids`` cut to ``budget`` items by dropping the middle: the start and the end are kept."""
    if len(ids) <= budget:
        return ids
    head = budget // 2
    tail = budget - head
    return ids[:head] + (ids[len(ids) - tail:] if tail else [])


def _warn_cut(name: str, cuts: list[tuple[int, int]], limit: int, once: dict | None = None) -> None:
    """One stderr line per call naming how much was cut (``cuts``: tokens before and after each
    cut); with ``once`` (a backend's flag dict), only the first call warns, later ones log at info."""
    if not cuts:
        return
    level = logging.WARNING
    if once is not None:
        level = logging.INFO if once.get("warned") else logging.WARNING
        once["warned"] = True
    removed = sum(before - after for before, after in cuts)
    longest = max(before for before, _ in cuts)
    log.log(level, "%s: %d input(s) over the %d-token limit cut in the middle (longest %d tokens; %d tokens "
            "removed in all); --max-input-tokens sets the limit", name, len(cuts), limit, longest, removed)


def _context_length(config, tokenizer=None) -> int:
    """The longest input a model takes: the smallest of its position table and its tokenizer's limit."""
    sizes = [getattr(config, k, None) for k in ("max_position_embeddings", "n_positions", "max_sequence_length")]
    tok = getattr(tokenizer, "model_max_length", None)
    sizes.append(tok if isinstance(tok, int) and tok < 1_000_000 else None)
    known = [s for s in sizes if isinstance(s, int) and s > 0]
    return min(known) if known else DEFAULT_CONTEXT


def _limit(context: int, reserve: int = 0) -> int:
    """Tokens an input may have: the context less ``reserve`` (tokens still to generate), or
    ``--max-input-tokens`` when that is smaller."""
    limit = max(1, context - reserve)
    return limit if _MAX_INPUT_TOKENS is None else max(1, min(limit, _MAX_INPUT_TOKENS))


# ---------------------------------------------------------------------------------------------
# placement


def pick_device(device: str = "auto") -> str:
    """``auto`` -> this process's accelerate device (its GPU under ``accelerate launch``), else cpu."""
    if device != "auto":
        if device == "cuda":
            import torch

            if not torch.cuda.is_available():
                raise ResourceError("--device cuda asked for, but torch sees no CUDA GPU; pass --device cpu")
        return device
    import torch

    if not (torch.cuda.is_available() or _mps_available()):
        return "cpu"
    from accelerate import PartialState

    return str(PartialState().device)


def pick_dtype(dtype: str, device: str):
    import torch

    if dtype == "auto":
        return torch.bfloat16 if device.startswith("cuda") else torch.float32
    return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]


def _mps_available() -> bool:
    import torch

    return bool(getattr(torch.backends, "mps", None) and torch.backends.mps.is_available())


def cache_dir() -> str:
    """Where converted weights live: ``$CQ_CACHE`` or ~/.cache/cqtools."""
    return os.environ.get("CQ_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "cqtools")


def _cached(key: tuple, build):
    _quiet_transformers()
    if key not in _LOADED:
        _LOADED[key] = build()
    return _LOADED[key]


def _quiet_transformers() -> None:
    """No weight-loading bars on stderr unless CQ_DEBUG is set (one-off conversions still say so)."""
    if os.environ.get("CQ_DEBUG"):
        return
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:  # pragma: no cover
        return
    hf_logging.disable_progress_bar()


def set_seed(seed: int) -> None:
    """Seed Python, NumPy and torch (generation is greedy; this covers anything sampled)."""
    import random

    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
