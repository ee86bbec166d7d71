"""What every stage's ``build()`` shares: a registered method built from its checked options, wrapped
as the stage's batch function (records -> records) that knows its command and parameters, so a
Python-API ``--resume`` records the same run record the CLI does."""
from __future__ import annotations

import functools
from typing import Callable


def stage_fn(batch: Callable, command: str, method: str, registry, config, options: dict, kwarg: str,
             **extra) -> Callable[[list[dict]], list[dict]]:
    """``functools.partial(batch, <kwarg>=the built method, **extra)`` (or, with ``batch`` None, the
    built method itself: a batch function) with ``cq_command`` and ``cq_params`` (the method's name and
    every option value it runs with)."""
    chosen = registry.get(method)
    config, options = split_config(config, options, chosen)
    context = {k: v for k, v in options.items() if k in chosen.context}
    params = {"method": method, **chosen.values({k: v for k, v in options.items() if k not in chosen.context}),
              **context, **{k: v for k, v in extra.items() if _plain(v)}}
    built = chosen.build(config, **options)  # the factory passes config to the loaders it calls
    fn = functools.partial(batch, **{kwarg: built}, **extra) if batch is not None else built
    return described(fn, command, params)


def split_config(config, options: dict, method=None):
    """``(config, options)`` with run-configuration fields given among ``options`` (``device="cpu"``,
    ``dtype=...``: the Python API's shorthand) moved into the configuration, unless the method
    declares an option of that name."""
    from dataclasses import fields

    from ..config import RunConfig

    names = {f.name for f in fields(RunConfig)} - {"extra"}
    moved = {k: options[k] for k in options if k in names and (method is None or method.option(k) is None)}
    config = config if config is not None else RunConfig.from_env()
    if moved:
        config = config.replace(**{k: v for k, v in moved.items() if v is not None})
    return config, {k: v for k, v in options.items() if k not in moved}


def described(fn, command: str, params: dict):
    """Attach the command and parameters a run record needs to a batch function."""
    fn.cq_command = command
    fn.cq_params = {k: v for k, v in params.items() if _plain(v)}
    return fn


def _plain(value) -> bool:
    return value is None or isinstance(value, (bool, int, float, str, list, tuple))
