"""Plugins: other packages add methods to cq's registries without touching cqtools.

A plugin is a distribution with an entry point in the group ``cqtools.plugins`` naming a module
that implements any of the hooks below (pluggy, as simonw/llm does)::

    # pyproject.toml of the plugin
    [project.entry-points."cqtools.plugins"]
    my_detector = "my_detector"

    # my_detector.py
    from cqtools.plugins import hookimpl
    from cqtools.registry import Option

    @hookimpl
    def register_detectors(register):
        register("length", length_detector, help="long questions are ambiguous",
                 options=[Option("threshold", float, 12, "label = words > threshold")])

``register(name, factory, help=..., options=[Option...])`` is the registry's own ``register``; the
factories' shapes are the Protocols in cqtools/protocols.py. cq's own methods are registered the
same way, by its default plugin modules (:data:`DEFAULT_PLUGINS`), never by an import's side effect.

Plugins are loaded one at a time: one whose import fails, whose hook raises or has the wrong
signature, or that registers a name already taken is skipped with one warning naming its
distribution and entry point (``cq plugins`` lists it as broken); the rest of cq works as before.
"""
from __future__ import annotations

import importlib
import logging
from dataclasses import dataclass

import pluggy

GROUP = "cqtools.plugins"
hookspec = pluggy.HookspecMarker("cqtools")
hookimpl = pluggy.HookimplMarker("cqtools")
log = logging.getLogger("cqtools")

# cq's built-in methods, one default plugin module per package area.
DEFAULT_PLUGINS = (
    "cqtools.stages.builtin_methods",
    "cqtools.chat.builtin_methods",
    "cqtools.retrieval.builtin_methods",
    "cqtools.models.builtin_methods",
    "cqtools.score.builtin_methods",
    "cqtools.presets.builtin",
    "cqtools.cli.trainers",
)


class Hooks:
    """One hook per registry (cqtools/registry.py); each gets that registry's ``register``."""

    @hookspec
    def register_detectors(self, register):
        """Add ambiguity detectors (``cq detect --method``): factories returning a Detector."""

    @hookspec
    def register_cq_methods(self, register):
        """Add clarifying-question methods (``cq gen-cq --method``): factories returning a CQMethod."""

    @hookspec
    def register_answer_modes(self, register):
        """Add ``cq answer --mode`` modes: factories ``(config, reader, model, reader_options, seed,
        batch_size, **options)`` returning the stage's batch function."""

    @hookspec
    def register_readers(self, register):
        """Add readers (``cq answer --reader``): factories returning a Reader."""

    @hookspec
    def register_searchers(self, register):
        """Add retrieval methods (``cq retrieve --method``): factories returning a Searcher."""

    @hookspec
    def register_index_parts(self, register):
        """Add index parts (``cq index``, ``cq retrieve --method NAME`` / ``--parts``): classes with ``build`` and
        ``open`` (cqtools/retrieval/parts.py)."""

    @hookspec
    def register_oracles(self, register):
        """Add simulated users (``cq oracle --method``): factories returning an Oracle."""

    @hookspec
    def register_personas(self, register):
        """Add personas (``cq oracle --persona``): factories returning a
        :class:`cqtools.stages.personas.Persona` (how the simulated user says what it means)."""

    @hookspec
    def register_disambiguators(self, register):
        """Add ``cq disambiguate --method`` methods: factories returning a batch function."""

    @hookspec
    def register_backends(self, register):
        """Add model backends (``--model PREFIX:NAME``): factories ``(model, kind, role, config)``
        returning a Generator, CrossEncoder or Encoder."""

    @hookspec
    def register_score_tasks(self, register):
        """Add ``cq score --task`` tasks."""

    @hookspec
    def register_presets(self, register):
        """Add presets (``--preset NAME``): ``register(Preset(...))`` (cqtools/presets/base.py); each is checked
        against the methods' schemas when registered."""

    @hookspec
    def register_trainers(self, register):
        """Add ``cq train NAME``: a click command (its options and help its own; by convention it writes a model
        directory and prints its report as one JSON object, as cq's trainers in cqtools/cli/train.py do)."""

    @hookspec
    def register_weight_formats(self, register):
        """Add local weight formats (cqtools/models/formats.py): factories ``(resolved, role, device, dtype,
        kind, config)`` loading a model as ``role`` under the run configuration ``config``, with ``factory.detect(path)`` and ``factory.needs``."""

    @hookspec
    def register_formats(self, register):
        """Add ``cq convert`` formats: factories ``(path)`` returning an iterator of records."""


@dataclass
class Broken:
    """A plugin that could not be used, and why (``cq plugins`` lists it)."""

    plugin: str       # "distribution version"
    entry_point: str  # "name = module"
    problem: str


_manager: pluggy.PluginManager | None = None
BROKEN: list[Broken] = []
LOADED: list[tuple[object, str]] = []  # (module, "distribution version") of each third-party plugin


def manager() -> pluggy.PluginManager:
    """The process's plugin manager: cq's default plugins, then every ``cqtools.plugins`` entry point
    that loads (each in isolation)."""
    global _manager
    if _manager is None:
        pm = pluggy.PluginManager("cqtools")
        pm.add_hookspecs(Hooks)
        for name in DEFAULT_PLUGINS:
            pm.register(importlib.import_module(name), name=name)
        _load_entry_points(pm)
        _manager = pm
    return _manager


def _load_entry_points(pm: pluggy.PluginManager) -> None:
    from importlib.metadata import distributions

    seen = set()
    for dist in distributions():
        for ep in dist.entry_points:
            if ep.group != GROUP or (ep.name, ep.value) in seen:
                continue
            seen.add((ep.name, ep.value))
            label = f"{dist.metadata['name']} {dist.version}"
            try:
                if pm.has_plugin(ep.name):
                    raise ValueError(f"another plugin already uses the entry point name {ep.name!r}")
                plugin = ep.load()
                pm.register(plugin, name=ep.name)
                LOADED.append((plugin, label))
            except Exception as err:  # noqa: BLE001 - any failure of a third party's code
                _broken(label, f"{ep.name} = {ep.value}", f"{type(err).__name__}: {err}")


def _broken(plugin: str, entry_point: str, problem: str) -> None:
    BROKEN.append(Broken(plugin, entry_point, problem))
    log.warning("plugin %s (entry point %s) skipped: %s", plugin, entry_point, problem.splitlines()[0])


def fill(registry) -> None:
    """Let every plugin add to ``registry``: cq's defaults first, each registration tagged with its
    distribution; a hook that fails (or takes a name already registered) skips that plugin's methods."""
    pm = manager()
    hook = getattr(pm.hook, registry.hook)
    impls = sorted(hook.get_hookimpls(), key=lambda i: pm.get_name(i.plugin) not in DEFAULT_PLUGINS)
    for impl in impls:
        builtin = pm.get_name(impl.plugin) in DEFAULT_PLUGINS
        name = "cqtools" if builtin else plugin_name(pm, impl.plugin)
        added: list[tuple] = []

        def register(method, factory=None, *, _name=name, **kwargs):
            kwargs.setdefault("plugin", _name)
            kwargs.pop("replace", None)  # a plugin never replaces another's method
            result = registry.register(method, factory, **kwargs)
            added.append(method)
            return result

        if builtin:
            impl.function(register=register)
            continue
        try:
            impl.function(register=register)
        except Exception as err:  # noqa: BLE001 - a third party's hook
            for method in added:
                registry._methods.pop(method, None)
            _broken(name, _entry_point(pm, impl.plugin), f"{registry.hook}: {type(err).__name__}: {err}")


def fill_presets(register, unregister) -> None:
    """Let every plugin register presets: cq's first; a plugin whose hook fails, or whose preset is refused
    (a name taken, a row its method's schema refuses), is skipped with one warning, its presets removed
    (``unregister(name)``)."""
    pm = manager()
    impls = sorted(pm.hook.register_presets.get_hookimpls(), key=lambda i: pm.get_name(i.plugin) not in DEFAULT_PLUGINS)
    for impl in impls:
        if pm.get_name(impl.plugin) in DEFAULT_PLUGINS:
            impl.function(register=register)
            continue
        added: list[str] = []

        def add(preset, _added=added):
            result = register(preset)
            _added.append(preset.name)
            return result

        try:
            impl.function(register=add)
        except Exception as err:  # noqa: BLE001 - a third party's hook
            for name in added:
                unregister(name)
            _broken(plugin_name(pm, impl.plugin), _entry_point(pm, impl.plugin),
                    f"register_presets: {type(err).__name__}: {err}")


def plugin_name(pm: pluggy.PluginManager, plugin) -> str:
    for module, label in LOADED:
        if module is plugin:
            return label
    return pm.get_name(plugin) or str(plugin)


def _entry_point(pm: pluggy.PluginManager, plugin) -> str:
    return f"{pm.get_name(plugin)} = {getattr(plugin, '__name__', plugin)}"


def installed() -> list[str]:
    """The distributions that provide cq plugins (loaded ones)."""
    manager()
    return sorted({label for _, label in LOADED})


def broken() -> list[Broken]:
    manager()
    return list(BROKEN)
