"""One registry per kind of method: name -> factory, with its help and its typed option schema.

Every method, cq's own included, is registered through the plugin hooks (cqtools/plugins.py):
cq's built-ins come from its default plugin modules (``plugins.DEFAULT_PLUGINS``), third-party
methods from the ``cqtools.plugins`` entry points, by the same ``register`` call::

    from cqtools.plugins import hookimpl
    from cqtools.registry import Option

    @hookimpl
    def register_detectors(register):
        register("length", length_detector, help="long questions are ambiguous",
                 options=[Option("threshold", float, 12, "label = words > threshold")])

A method's options are its schema: the CLI's flags, ``-O key=value``, ``--help``, the run
record's parameters, docs/cli.md and the presets all come from it, and :meth:`Method.build`
rejects an unknown or ill-typed option with a one-line error naming the nearest valid one (in
the CLI and in Python alike). A method registered with ``defaults={...}`` only (older plugins) gets a
schema inferred from its factory's signature. The run configuration (cqtools/config.py) is not a
method option: factories that name a ``config`` parameter receive it.
"""
from __future__ import annotations

import dataclasses
import difflib
import inspect
import types
import typing
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from .errors import InputError

_MISSING = object()


@dataclass(frozen=True)
class Option:
    """One option of a method: a name (a Python identifier), its type, default, help and limits.

    ``flag`` is the command-line flag when it is not ``--name`` with dashes (``n_passages`` is
    ``--passages``). ``type`` is bool, int, float or str; ``choices`` and ``min``/``max`` bound it.
    A default of None means "not set" (the method decides, e.g. the model's own default)."""

    name: str
    type: type = str
    default: Any = None
    help: str = ""
    choices: tuple = ()
    min: float | None = None
    max: float | None = None
    flag: str | None = None
    env: str | None = None  # the CLI flag's environment variable (e.g. CQ_MODEL_RERANKER)
    metavar: str | None = None  # what --help shows for the value (URL, FILE) instead of its type
    check: Any = None  # (value, where) -> value: a further check run with the others, before any model loads
    shown: str | None = None  # what --help shows as the default when it is not the value (e.g. "number of CPUs")
    shaping: bool = True  # False: never changes a record (where or how fast the work runs): --resume ignores it

    @property
    def cli_flag(self) -> str:
        return self.flag or "--" + self.name.replace("_", "-")

    def convert(self, value, where: str):
        """``value`` checked (and, from a string, converted) to this option's type and limits."""
        if value is None:
            return None
        if isinstance(value, str) and self.type is not str:
            value = self._parse(value, where)
        if self.type is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if self.type is not Any and not (isinstance(value, self.type) and
                                         not (self.type is int and isinstance(value, bool))):
            raise InputError(f"{where}: option {self.name} takes {self.type.__name__}, not {value!r}")
        if self.choices and value not in self.choices:
            raise InputError(f"{where}: option {self.name} takes one of {', '.join(map(str, self.choices))}, "
                             f"not {value!r}")
        if self.min is not None and value < self.min or self.max is not None and value > self.max:
            bounds = f"{self.min if self.min is not None else '-inf'}..{self.max if self.max is not None else 'inf'}"
            raise InputError(f"{where}: option {self.name} must be in {bounds}, not {value!r}")
        return self.check(value, where) if self.check else value

    def _parse(self, text: str, where: str):
        try:
            if self.type is bool:
                lowered = text.strip().lower()
                if lowered not in ("1", "0", "true", "false", "yes", "no", "on", "off"):
                    raise ValueError
                return lowered in ("1", "true", "yes", "on")
            return self.type(text)
        except ValueError:
            raise InputError(f"{where}: option {self.name} takes {self.type.__name__}, not {text!r}") from None

    def describe(self) -> dict:
        row = {"name": self.name, "type": self.type.__name__, "default": self.default, "help": self.help,
               "flag": self.cli_flag}
        if self.choices:
            row["choices"] = list(self.choices)
        if self.min is not None:
            row["min"] = self.min
        if self.max is not None:
            row["max"] = self.max
        return row


OPTION_META = "cqtools.option"


def option(default: Any = None, help: str = "", *, choices: Iterable = (), min: float | None = None,
           max: float | None = None, flag: str | None = None, env: str | None = None, check: Any = None,
           metavar: str | None = None, shown: str | None = None, shaping: bool = True):
    """One field of a method's options dataclass: its default (written here and nowhere else), help and
    limits; the field's annotation gives its type (``int | None``: an int, None meaning "not set")::

        @dataclass(frozen=True)
        class LengthOptions:
            threshold: float = option(12.0, "label = words > threshold")

        register("length", length_detector, options=LengthOptions)  # length_detector(options, config)
    """
    meta = {"help": help, "choices": tuple(choices), "min": min, "max": max, "flag": flag, "env": env, "check": check,
            "metavar": metavar, "shown": shown, "shaping": shaping}
    return dataclasses.field(default=default, metadata={OPTION_META: meta})


def declared_as(options_class: type, name: str):
    """The declaration of field ``name`` of ``options_class`` (default, help, limits), for another dataclass
    that takes the same setting: one declaration, not a copy of its default."""
    found = options_class.__dataclass_fields__[name]
    return dataclasses.field(default=found.default, metadata=found.metadata)


def _plain_type(hint) -> type:
    """``int | None`` -> int; ``Optional[str]`` -> str; anything else as it is (Any for unions of several)."""
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        return args[0] if len(args) == 1 else Any
    return hint


def schema_of(options_class: type) -> tuple[Option, ...]:
    """The :class:`Option` rows of an options dataclass, in field order (the CLI's flags, --help, docs)."""
    hints = typing.get_type_hints(options_class)
    rows = []
    for f in dataclasses.fields(options_class):
        meta = f.metadata.get(OPTION_META, {})
        default = None if f.default is dataclasses.MISSING else f.default
        rows.append(Option(f.name, _plain_type(hints[f.name]), default, **meta))
    return tuple(rows)


def non_default(options, *names: str) -> dict:
    """``{name: value}`` of the named fields of an options dataclass that are not at their declared default
    (meta entries that leave records made with the defaults as they were)."""
    declared = {f.name: f.default for f in dataclasses.fields(options)}
    return {n: getattr(options, n) for n in names if getattr(options, n) != declared[n]}


def infer_options(factory: Callable, defaults: dict, context: Iterable[str] = ()) -> tuple[Option, ...]:
    """A schema for a factory registered without one: its named parameters (not ``config`` nor the
    registry's context), typed by their default."""
    skip = {"config", *context}
    out = []
    for p in inspect.signature(factory).parameters.values():
        if p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL) or p.name in skip:
            continue
        default = defaults.get(p.name, None if p.default is p.empty else p.default)
        kind = type(default) if isinstance(default, (bool, int, float, str)) else Any
        out.append(Option(p.name, float if kind is int and not isinstance(default, bool) else kind, default))
    names = {o.name for o in out}
    out += [Option(k, type(v) if isinstance(v, (bool, int, float, str)) else Any, v)
            for k, v in defaults.items() if k not in names]
    return tuple(out)


@dataclass(frozen=True)
class Method:
    name: str
    factory: Callable[..., Any]
    help: str = ""
    options: tuple[Option, ...] = ()
    plugin: str = "cqtools"     # the distribution that registered it
    kind: str = "method"        # the registry's kind, for messages
    context: tuple[str, ...] = ()  # what the command passes to every method of the registry (not options)
    options_class: type | None = None  # the options dataclass: the factory takes (options, config, **context)

    @property
    def defaults(self) -> dict:
        return {o.name: o.default for o in self.options}

    def option(self, name: str) -> Option | None:
        return next((o for o in self.options if o.name == name), None)

    def values(self, given: dict, where: str | None = None) -> dict:
        """The method's options: its defaults with ``given`` on top (None: keep the default), each
        checked; an unknown name is a one-line error naming the nearest valid one."""
        where = where or f"{self.kind} {self.name}"
        schema = {o.name: o for o in self.options}
        out = {o.name: o.default for o in self.options}
        for key, value in given.items():
            if key not in schema:
                raise InputError(unknown_option(key, where, list(schema)))
            if value is not None:
                out[key] = schema[key].convert(value, where)
        return out

    def build(self, config=None, /, **given):
        """The method, from its checked options (and, where its factory takes them, the run
        configuration and the registry's context values)."""
        context = {k: given.pop(k) for k in list(given) if k in self.context}
        values = self.values(given)
        params = inspect.signature(self.factory).parameters
        takes_all = any(p.kind is p.VAR_KEYWORD for p in params.values())
        context = {k: v for k, v in context.items() if takes_all or k in params}
        if config is None and (self.options_class is not None or "config" in params):
            from .config import RunConfig

            config = RunConfig.from_env()
        if self.options_class is not None:
            return self.factory(self.options_class(**values), config, **context)
        kwargs = {**values, **context}
        if "config" in params:
            kwargs["config"] = config
        return self.factory(**kwargs)


def unknown_option(key: str, where: str, valid: list[str]) -> str:
    near = difflib.get_close_matches(key, valid, n=1, cutoff=0.6)
    hint = f"; did you mean {near[0]!r}?" if near else ""
    listed = ", ".join(valid) if valid else "none"
    return f"{where} has no option {key!r}{hint} (its options: {listed})"


class Registry:
    """Methods of one kind (detectors, CQ methods, ...). ``hook`` is the plugin hook that fills it;
    ``context`` names what a command passes to every method (e.g. a searcher's ``index_dir``)."""

    def __init__(self, kind: str, hook: str, option: str = "--method", context: tuple[str, ...] = ()):
        self.kind = kind
        self.hook = hook
        self.option = option
        self.context = tuple(context)
        self._methods: dict[str, Method] = {}
        self._plugins_loaded = False

    def register(self, name: str, factory: Callable | None = None, *, help: str = "",
                 options: Iterable[Option] | type | None = None, defaults: dict | None = None,
                 plugin: str = "cqtools", replace: bool = False):
        """Register ``factory`` under ``name`` (also as a decorator). ``options``: its schema, an options
        dataclass (fields declared with :func:`option`; the factory then takes ``(options, config)``; its
        docstring is the method's help unless ``help`` is given) or a list of :class:`Option`; without it,
        one inferred from the factory's signature and ``defaults``."""

        def add(func: Callable) -> Callable:
            if name in self._methods and not replace:
                raise ValueError(f"{self.kind} {name!r} is registered twice "
                                 f"({self._methods[name].plugin} and {plugin})")
            cls = options if isinstance(options, type) and dataclasses.is_dataclass(options) else None
            if cls is not None:
                schema = schema_of(cls)
            elif options is not None:
                schema = tuple(options)
            else:
                schema = infer_options(func, dict(defaults or {}), self.context)
            if options is not None and defaults:
                schema = tuple(_with_default(o, defaults) for o in schema)
                cls = None if cls is None else _defaults_class(cls, defaults)
            text = help or (_doc_line(cls) if cls is not None else "")
            self._check_flags(name, schema)
            self._methods[name] = Method(name, func, text, schema, plugin, self.kind, self.context, cls)
            return func

        return add(factory) if factory is not None else add

    def _check_flags(self, name: str, schema) -> None:
        """One flag, one option: a command's flags come from every method's options, so an option that takes a
        flag another method's option of another name already has would give the command two of it (click only
        warns, and the value would reach neither as meant)."""
        taken = {o.cli_flag: (m.name, o.name) for m in self._methods.values() if m.name != name for o in m.options}
        for opt in schema:
            owner = taken.get(opt.cli_flag)
            if owner is not None and owner[1] != opt.name:
                raise ValueError(f"{self.kind} {name}: option {opt.name} takes the flag {opt.cli_flag}, which "
                                 f"{self.kind} {owner[0]} gives its option {owner[1]}; give it another flag= or "
                                 f"the same name")

    def _load(self) -> None:
        if not self._plugins_loaded:
            self._plugins_loaded = True
            from .plugins import fill

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
            near = difflib.get_close_matches(name, list(self._methods), n=1)
            hint = f"did you mean {near[0]!r}? " if near else ""
            raise InputError(f"unknown {self.kind} {name!r}; {hint}{self.option} takes one of: "
                             f"{', '.join(self._methods)} (`cq plugins` lists what is installed)") from None

    def build(self, name: str, config=None, /, **options):
        return self.get(name).build(config, **options)

    def default(self, name: str, option: str, fallback=None):
        found = self.get(name).option(option)
        return fallback if found is None or found.default is None else found.default

    def option_names(self) -> list[str]:
        """Every option any method of this registry declares (first declaration's order)."""
        seen: dict[str, None] = {}
        for method in self.methods():
            for opt in method.options:
                seen.setdefault(opt.name)
        return list(seen)

    def help(self) -> str:
        """``name: help`` for every method, for the CLI's --method help."""
        return "; ".join(f"{m.name}: {m.help}" if m.help else m.name for m in self.methods())


def _doc_line(cls: type) -> str:
    """An options dataclass's docstring, as one line (the method's help); not the generated signature."""
    doc = cls.__dict__.get("__doc__") or ""
    return "" if doc.startswith(cls.__name__ + "(") else " ".join(doc.split())


def _defaults_class(cls: type, defaults: dict) -> type:
    """``cls`` with other defaults (``register(..., defaults={...})``: one method's values of a shared class)."""
    return dataclasses.make_dataclass(cls.__name__, [(f.name, f.type, dataclasses.field(
        default=defaults.get(f.name, f.default), metadata=f.metadata)) for f in dataclasses.fields(cls)],
        frozen=True, bases=(cls,))


def _with_default(option: Option, defaults: dict) -> Option:
    from dataclasses import replace

    return replace(option, default=defaults[option.name]) if option.name in defaults else option


DETECTORS = Registry("detector", "register_detectors")
CQ_METHODS = Registry("CQ method", "register_cq_methods")
READERS = Registry("reader", "register_readers", option="--reader", context=("batch_size",))
SEARCHERS = Registry("searcher", "register_searchers", context=("index_dir", "hits", "threads", "query_field"))
ORACLES = Registry("oracle method", "register_oracles")
PERSONAS = Registry("persona", "register_personas", option="--persona")
ANSWER_MODES = Registry("answer mode", "register_answer_modes", option="--mode",
                        context=("reader", "model", "reader_options", "seed", "batch_size"))
DISAMBIGUATORS = Registry("disambiguation method", "register_disambiguators", context=("batch_size", "seed"))
BACKENDS = Registry("model backend", "register_backends", option="--model PREFIX:NAME",
                    context=("model", "kind", "role"))
SCORE_TASKS = Registry("score task", "register_score_tasks", option="--task", context=("opts",))
FORMATS = Registry("data format", "register_formats", option="FORMAT", context=("path",))
TRAINERS = Registry("trainer", "register_trainers", option="cq train NAME")
INDEX_PARTS = Registry("index part", "register_index_parts", option="--parts")
WEIGHT_FORMATS = Registry("weight format", "register_weight_formats", option="a model's files",
                          context=("resolved", "role", "device", "dtype", "kind"))

ALL = (DETECTORS, CQ_METHODS, ANSWER_MODES, READERS, SEARCHERS, INDEX_PARTS, ORACLES, PERSONAS, DISAMBIGUATORS, BACKENDS,
       SCORE_TASKS, FORMATS, WEIGHT_FORMATS, TRAINERS)

__all__ = ["Option", "option", "declared_as", "schema_of", "Method", "Registry", "ALL", "DETECTORS", "CQ_METHODS",
           "READERS", "SEARCHERS", "INDEX_PARTS", "ORACLES", "PERSONAS", "ANSWER_MODES",
           "DISAMBIGUATORS", "BACKENDS", "SCORE_TASKS", "FORMATS", "WEIGHT_FORMATS", "TRAINERS"]
