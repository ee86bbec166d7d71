"""A model backend's options as a run sets them. Each option is declared once, on the backend (its options
dataclass, e.g. the openai backend's ``OpenAIOptions``); its value comes from, last one winning: the declared
default, its environment variable, its flag (an option declared with ``flag=`` is a flag of every model
command: ``RunConfig.backend_settings``), ``--backend-opt KEY=VALUE`` (``RunConfig.backend_options``)."""
from __future__ import annotations

from ..config import RunConfig, env


def environment_settings(registry=None) -> dict:
    """{option name: value} of every backend option whose environment variable is set (a value that does not
    parse is a one-line error naming the variable)."""
    from ..registry import BACKENDS

    out = {}
    for method in (registry or BACKENDS).methods():
        for opt in method.options:
            raw = env(opt.env) if opt.env else None
            if raw is not None and (raw.strip() or opt.type is not str):
                out[opt.name] = opt.convert(raw, f"{opt.env}={raw!r}")
    return out


def backend_values(method, config=None, strict: bool = True) -> dict:
    """The options of backend ``method`` the run sets (see the module's doc); a --backend-opt name it does not
    declare is an error unless not ``strict``."""
    config = config or RunConfig.from_env()
    declared = {opt.name for opt in method.options}
    given = {k: v for k, v in environment_settings().items() if k in declared}
    given.update((k, v) for k, v in config.backend_settings if k in declared)
    given.update((k, v) for k, v in config.backend_options if strict or k in declared)
    return given


def resolved(backend: str, config=None):
    """Backend ``backend``'s options as the run sets them (its options dataclass), without building it: what
    --api-base routing and the stream's pace read."""
    from ..registry import BACKENDS

    method = BACKENDS.get(backend)
    return method.options_class(**method.values(backend_values(method, config, strict=False)))
