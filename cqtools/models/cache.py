"""The process-wide cache of loaded models: a model is built once per process for its key (role, name,
device, ...) and the loading fields of the run configuration it is built under, and the same object is
returned after (cqtools/models/load.py is what asks)."""
from __future__ import annotations

import sys

from ..config import RunConfig

LOADED: dict[tuple, object] = {}


def cached(key: tuple, build, config: RunConfig):
    """``build()`` once per process for ``key`` and ``config``'s loading fields."""
    quiet_transformers(config)
    key = key + config.load_key()
    if key not in LOADED:
        LOADED[key] = build()
    return LOADED[key]


def quiet_transformers(config: RunConfig) -> None:
    """No weight-loading bars on stderr unless CQ_DEBUG is set (one-off conversions still say so)."""
    if config.debug:
        return
    if "transformers" not in sys.modules:  # it reads the hub's setting when it loads: no need to import it here
        try:
            from huggingface_hub.utils import disable_progress_bars
        except ImportError:  # pragma: no cover
            return
        disable_progress_bars()
        return
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
