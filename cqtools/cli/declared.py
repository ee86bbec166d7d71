"""Flags generated from declarations: a field of a frozen dataclass declared with
:func:`cqtools.registry.option` (its default, type, limits, help and environment variable written there
once) becomes a click option, as a method's options do (cli/method_flags.py). A command's own settings
(``cq retrieve --hits``), a trainer's (``cq train detect --epochs``) and ``cq chat``'s are declared this
way beside the code that reads them, so the command line and Python share one default::

    @dataclass(frozen=True)
    class RetrieveSettings:
        hits: int = option(100, "Passages to keep per question.", min=1)

    @declared_flags(RetrieveSettings, "hits")
    def cli(hits): ...
"""
from __future__ import annotations

import click

from ..registry import schema_of


def click_type(decls):
    """One click type for an option several methods declare: its type with the widest bounds (or every choice)
    any of them allows, each method then checking the value against its own schema; text only where they
    declare different types."""
    types = {o.type for o in decls}
    if len(types) != 1:
        return click.STRING
    kind = types.pop()
    if any(o.choices for o in decls):
        if not all(o.choices for o in decls):
            return click.STRING
        return click.Choice(list(dict.fromkeys(str(c) for o in decls for c in o.choices)))
    lows, highs = [o.min for o in decls], [o.max for o in decls]
    low = None if None in lows else min(lows)
    high = None if None in highs else max(highs)
    if kind is int:
        return click.IntRange(min=low, max=high) if low is not None or high is not None else click.INT
    if kind is float:
        return click.FloatRange(min=low, max=high) if low is not None or high is not None else click.FLOAT
    return click.STRING


def shown_default(o) -> str:
    """An option's default as --help shows it ("" for none or False)."""
    return "" if o.default is None or o.default is False else f"{o.default:g}" if isinstance(o.default, float) \
        else str(o.default)


def declared_flag(opt, param: str | None = None, kind=None):
    """The click option of one declared :class:`cqtools.registry.Option` (``param``: the command's parameter
    name when it is not the option's own; ``kind``: a click type instead of the declared one, e.g. a Choice of a
    registry's names, known only once its plugins are loaded)."""
    name = param or opt.name
    if opt.type is tuple:  # a repeatable flag (cq train reader --more-train FILE ...)
        return click.option(opt.cli_flag, name, multiple=True, default=opt.default, metavar=opt.metavar,
                            help=opt.help or None)
    if opt.type is bool and "/" not in opt.cli_flag:
        return click.option(opt.cli_flag, name, is_flag=True, default=bool(opt.default), help=opt.help or None)
    show = opt.shown or (opt.default is not None and (opt.default is not False or "/" in opt.cli_flag))
    kind = {} if opt.type is bool else {"type": kind or click_type([opt])}
    return click.option(opt.cli_flag, name, default=opt.default, show_default=show, envvar=opt.env,
                        metavar=opt.metavar, help=opt.help or None, **kind)


def declared_flags(settings: type, *names: str, params: dict | None = None, types: dict | None = None,
                   exclude: tuple = ()):
    """Decorators for the fields ``names`` of the dataclass ``settings`` (when none is named: every field declared
    with ``option`` but those in ``exclude``, in field order, so a field declared later is a flag without another
    edit), in that order; ``params`` maps a field to the command's parameter name where they differ, ``types`` to a
    click type of the command's (see :func:`declared_flag`)."""
    from ..registry import OPTION_META

    params, types = params or {}, types or {}
    schema = {o.name: o for o in schema_of(settings)}
    unknown = [n for n in (*names, *params, *types) if n not in schema]
    if unknown:
        raise ValueError(f"{settings.__name__} declares no {', '.join(unknown)}")
    fields = settings.__dataclass_fields__
    chosen = [schema[n] for n in names] if names else [o for o in schema.values()
                                                       if OPTION_META in fields[o.name].metadata
                                                       and o.name not in exclude]

    def apply(func):
        for opt in reversed(chosen):
            func = declared_flag(opt, params.get(opt.name), types.get(opt.name))(func)
        return func

    return apply


__all__ = ["click_type", "shown_default", "declared_flag", "declared_flags"]
