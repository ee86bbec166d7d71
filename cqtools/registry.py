"""One registry per kind of method: name -> factory, with its help and method-specific defaults.

A stage module registers its built-in methods when it is imported (stage modules import no model
library at import time, so this is cheap); plugins add theirs through the ``cqtools.plugins``
entry points (cqtools/plugins.py). The CLI's ``--method`` choices, help and defaults are generated
from these registries, so adding a method is one decorated function in one file::

    from cqtools.registry import DETECTORS

    @DETECTORS.register("length", help="long questions are ambiguous", defaults={"threshold": 12})
    def length_detector(threshold, **_):
        ...
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, Callable

from .errors import InputError


@dataclass(frozen=True)
class Method:
    name: str
    factory: Callable[..., Any]
    help: str = ""
    defaults: dict = field(default_factory=dict)  # option defaults that depend on the method
    plugin: str = "cqtools"                        # the distribution that registered it

    def build(self, **options):
        """Call the factory with the options it names (all of them if it takes ``**kwargs``); an option
        left unset (None) takes the method's default."""
        merged = {**self.defaults, **{k: v for k, v in options.items() if v is not None or k not in self.defaults}}
        params = inspect.signature(self.factory).parameters
        if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
            merged = {k: v for k, v in merged.items() if k in params}
        return self.factory(**merged)


class Registry:
    """Methods of one kind (detectors, CQ methods, ...). ``hook`` is the plugin hook that fills it."""

    def __init__(self, kind: str, hook: str, builtins: str, option: str = "--method"):
        self.kind = kind
        self.hook = hook
        self.builtins = builtins  # the module whose import registers cqtools' own methods
        self.option = option
        self._methods: dict[str, Method] = {}
        self._plugins_loaded = False

    def register(self, name: str, factory: Callable | None = None, *, help: str = "", defaults: dict | None = None,
                 plugin: str = "cqtools", replace: bool = False):
        """Register ``factory`` under ``name``; usable as a decorator (``@REG.register("x", help=...)``)."""

        def add(func: Callable) -> Callable:
            if name in self._methods and not replace:
                raise ValueError(f"{self.kind} {name!r} is registered twice "
                                 f"({self._methods[name].plugin} and {plugin})")
            self._methods[name] = Method(name, func, help, dict(defaults or {}), plugin)
            return func

        return add(factory) if factory is not None else add

    def _load(self) -> None:
        if not self._plugins_loaded:
            self._plugins_loaded = True
            import importlib

            from .plugins import fill

            importlib.import_module(self.builtins)
            fill(self)

    def names(self) -> list[str]:
        self._load()
        return list(self._methods)

    def methods(self) -> list[Method]:
        self._load()
        return list(self._methods.values())

    def get(self, name: str) -> Method:
        self._load()
        try:
            return self._methods[name]
        except KeyError:
            raise InputError(f"unknown {self.kind} {name!r}; {self.option} takes one of: "
                             f"{', '.join(self._methods)} (`cq plugins` lists what is installed)") from None

    def build(self, name: str, **options):
        return self.get(name).build(**options)

    def default(self, name: str, option: str, fallback=None):
        return self.get(name).defaults.get(option, fallback)

    def help(self) -> str:
        """``name: help`` for every method, for the CLI's --method help."""
        return "; ".join(f"{m.name}: {m.help}" if m.help else m.name for m in self.methods())


DETECTORS = Registry("detector", "register_detectors", "cqtools.stages.detect")
CQ_METHODS = Registry("CQ method", "register_cq_methods", "cqtools.stages.gen_cq")
READERS = Registry("reader", "register_readers", "cqtools.stages.answer", option="--reader")
SEARCHERS = Registry("searcher", "register_searchers", "cqtools.retrieval", option="--method")
ORACLES = Registry("oracle method", "register_oracles", "cqtools.stages.oracle")
BACKENDS = Registry("model backend", "register_backends", "cqtools.models", option="--model PREFIX:NAME")
SCORE_TASKS = Registry("score task", "register_score_tasks", "cqtools.score", option="--task")

ALL = (DETECTORS, CQ_METHODS, READERS, SEARCHERS, ORACLES, BACKENDS, SCORE_TASKS)
