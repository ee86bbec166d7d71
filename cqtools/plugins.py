"""Plugins: other packages add methods to cq's registries without touching cqtools.

A plugin is a distribution with an entry point in the group ``cqtools.plugins`` naming a module
that implements any of the hooks below (pluggy, as simonw/llm does)::

    # pyproject.toml of the plugin
    [project.entry-points."cqtools.plugins"]
    my_detector = "my_detector"

    # my_detector.py
    from cqtools.plugins import hookimpl

    @hookimpl
    def register_detectors(register):
        register("length", length_detector, help="long questions are ambiguous", defaults={"threshold": 12})

``register(name, factory, help=..., defaults=...)`` is the registry's own ``register``; the
factories' shapes are the Protocols in cqtools/protocols.py. ``cq plugins`` lists what is installed.
"""
from __future__ import annotations

import logging

import pluggy

GROUP = "cqtools.plugins"
hookspec = pluggy.HookspecMarker("cqtools")
hookimpl = pluggy.HookimplMarker("cqtools")
log = logging.getLogger("cqtools")


class Hooks:
    """One hook per registry (cqtools/registry.py); each gets that registry's ``register``."""

    @hookspec
    def register_detectors(self, register):
        """Add ambiguity detectors (``cq detect --method``): factories returning a Detector."""

    @hookspec
    def register_cq_methods(self, register):
        """Add clarifying-question methods (``cq gen-cq --method``): factories returning a CQMethod."""

    @hookspec
    def register_readers(self, register):
        """Add readers (``cq answer --reader``): factories returning a Reader."""

    @hookspec
    def register_searchers(self, register):
        """Add retrieval methods (``cq retrieve --method``): factories returning a Searcher."""

    @hookspec
    def register_oracles(self, register):
        """Add simulated users (``cq oracle --method``)."""

    @hookspec
    def register_backends(self, register):
        """Add model backends: factories returning a Generator, CrossEncoder or Encoder."""

    @hookspec
    def register_score_tasks(self, register):
        """Add ``cq score --task`` tasks."""


_manager: pluggy.PluginManager | None = None


def manager() -> pluggy.PluginManager:
    """The process's plugin manager, with every installed ``cqtools.plugins`` entry point loaded."""
    global _manager
    if _manager is None:
        pm = pluggy.PluginManager("cqtools")
        pm.add_hookspecs(Hooks)
        pm.load_setuptools_entrypoints(GROUP)
        _manager = pm
    return _manager


def fill(registry) -> None:
    """Let every plugin add to ``registry`` (each registration is tagged with its distribution)."""
    pm = manager()
    hook = getattr(pm.hook, registry.hook)
    for impl in hook.get_hookimpls():
        name = plugin_name(pm, impl.plugin)

        def register(method, factory=None, *, _name=name, **kwargs):
            kwargs.setdefault("plugin", _name)
            return registry.register(method, factory, **kwargs)

        impl.function(register=register)


def plugin_name(pm: pluggy.PluginManager, plugin) -> str:
    for module, dist in pm.list_plugin_distinfo():
        if module is plugin:
            return f"{dist.metadata['name']} {dist.version}"
    return pm.get_name(plugin) or str(plugin)


def installed() -> list[str]:
    """The distributions that provide cq plugins."""
    return [f"{dist.metadata['name']} {dist.version}" for _, dist in manager().list_plugin_distinfo()]
