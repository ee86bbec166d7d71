"""The flags a command gets from its methods' option schemas (``method_options``), the values the user set
for the chosen method (``method_values``), and ``--preset`` (``preset_option``): every flag here is generated
from a declaration (cqtools/registry.py), none is written by hand."""
from __future__ import annotations

import click

from .declared import click_type, shown_default
from .options import opt_pairs, compose


def _method_help(pairs) -> str:
    """``method: help [default]`` per method; one help text with each method's default when they share it."""
    default = shown_default
    helps = [o.help for _, o in pairs if o.help]
    if len(set(helps)) <= 1:  # one meaning (a method that declares no help shares it)
        defaults = ", ".join(f"{m} {default(o)}" for m, o in pairs if default(o))
        return f"{', '.join(m for m, _ in pairs)}: {helps[0] if helps else ''}" + \
            (f" [default: {defaults}]" if defaults else "")
    return "; ".join(f"{m}: {o.help}" + (f" [default: {default(o)}]" if default(o) else "") for m, o in pairs)


def method_options(*registries, skip: tuple[str, ...] = ("model",), opt_flag: bool = True):
    """The flags of every option the registries' methods declare (generated from their schemas: a
    plugin's new option is a flag too), each unset unless given, plus (``opt_flag``) ``-O KEY=VALUE`` for
    any option; :func:`method_values` turns them into the chosen method's options."""
    decls: dict[str, list] = {}
    for registry in registries:
        for method in registry.methods():
            for opt in method.options:
                if opt.name not in skip:
                    decls.setdefault(opt.name, []).append((method.name, opt))
    decorators = []
    for name, pairs in decls.items():
        opts = [o for _, o in pairs]
        help_text = _method_help(pairs)
        env = next((o.env for o in opts if o.env), None)
        if env:
            help_text += f" Env: {env}."
        if all(o.type is bool for o in opts):
            decorators.append(click.option(opts[0].cli_flag, name, is_flag=True, default=None, help=help_text))
        else:
            decorators.append(click.option(opts[0].cli_flag, name, type=click_type(opts), default=None,
                                           envvar=env, help=help_text, metavar=opts[0].metavar))
    if not opt_flag:
        return compose(*decorators), list(decls)
    decorators.append(click.option("-O", "--opt", "method_opts", multiple=True, callback=opt_pairs,
                                   metavar="KEY=VALUE",
                                   help=f"An option of the chosen {' or '.join(r.kind for r in registries)} by its "
                                        f"schema name (repeatable); `cq plugins --all --options` lists every "
                                        f"method's options."))
    return compose(*decorators), list(decls)


def method_values(registry, method: str, kwargs: dict, names: list[str], model=None, also=()) -> dict:
    """Pop the generated flags (``names``) and ``-O`` pairs out of ``kwargs``; return the options the
    user set for ``method``. A flag given on the command line that ``method`` does not take is a
    one-line error naming the method's options (nothing is silently dropped). ``also``: registries whose
    methods may take a flag too (cq answer's readers: the chosen reader checks its own when it is built).
    ``model`` (the command's --model) goes to the method when given on the command line, or from an
    environment variable that is the method's own (its model option's ``env``; another method's is ignored)."""
    from ..registry import unknown_option

    chosen = registry.get(method)
    ctx = click.get_current_context()
    others = [m for r in also for m in r.methods()]

    def declared(name):
        return chosen.option(name) or next((m.option(name) for m in others if m.option(name)), None)

    given = {}
    for name in names:
        value = kwargs.pop(name, None)
        if value is None:
            continue
        if declared(name) is None and ctx.get_parameter_source(name).name != "COMMANDLINE":
            continue  # from an environment variable another method reads
        if declared(name) is None:
            flag = next(o.cli_flag for m in registry.methods() for o in m.options if o.name == name)
            raise click.UsageError(f"{flag} does not apply to {registry.option} {method} "
                                   f"(its options: {', '.join(o.cli_flag for o in chosen.options) or 'none'})")
        given[name] = value
    for key, text in (kwargs.pop("method_opts", None) or {}).items():
        if declared(key) is None:
            raise click.UsageError(unknown_option(key, f"{registry.kind} {method}", [o.name for o in chosen.options]))
        given[key] = text
    if model is not None:
        given.update(_model_value(registry, method, chosen, ctx, model))
    return given


def _model_value(registry, method: str, chosen, ctx, model) -> dict:
    source = ctx.get_parameter_source("model")
    opt = chosen.option("model")
    if opt is None:
        if source is not None and source.name == "COMMANDLINE":
            raise click.UsageError(f"--model does not apply to {registry.option} {method} (it loads no model)")
        return {}
    if source is None or source.name == "DEFAULT":
        return {}
    if source.name == "ENVIRONMENT":
        param = next((p for p in ctx.command.params if p.name == "model"), None)
        if opt.env and param is not None and param.envvar != opt.env:
            return {}  # another role's variable (CQ_MODEL_DETECT names the LLM, not the classifier)
    return {"model": model}


# API models (an OpenAI-compatible server): the backends' options. Not shaping a record: the server's address
# and the pace. The key is read from CQ_API_KEY or OPENAI_API_KEY only, never from an option.
def _backend_opts(ctx, param, values):
    from .options import record_config, remember_param

    pairs = tuple(sorted(opt_pairs(ctx, param, values).items()))
    record_config(ctx, "backend_options", pairs)
    if pairs:
        remember_param(ctx, param, [list(p) for p in pairs])
    return pairs


def api_options(func):
    """--backend-opt and the model backends' own flags (:func:`backend_flags`)."""
    return compose(
        click.option(
            "--backend-opt",
            multiple=True,
            metavar="KEY=VALUE",
            expose_value=False,
            callback=_backend_opts,
            help="An option of the model backend that --model BACKEND:NAME names (repeatable; `cq plugins --all "
                 "--options` lists each backend's options).",
        ),
        *backend_flags(),
    )(func)


def _backend_setting(name: str):
    """A callback that records a backend option's flag for the run configuration's backend settings."""

    def callback(ctx, param, value):
        from .options import record_backend_setting

        if value is not None:
            record_backend_setting(ctx, name, value)
        return value

    return callback


def backend_flags() -> list:
    """A flag for every model backend option declared with ``flag=`` (the openai backend's --api-base,
    --concurrency, --api-timeout; a plugin backend's too): its value reaches the backends that declare the
    option (``RunConfig.backend_settings``); its environment variable is read with the run configuration."""
    from ..registry import BACKENDS

    flags = []
    for method in BACKENDS.methods():
        for opt in method.options:
            if opt.flag:
                shown = shown_default(opt)
                default = f" [default: {shown}]" if shown else ""
                flags.append(click.option(opt.flag, f"backend_{opt.name}", type=click_type([opt]), default=None,
                                          metavar=opt.metavar, expose_value=False, callback=_backend_setting(opt.name),
                                          help=f"{opt.help}{default}" + (f" Env: {opt.env}." if opt.env else "")))
    return flags


def preset_option(command: str):
    """``--preset NAME`` for ``command``: the preset's values (cqtools/presets/) fill every option the
    user did not set (a flag on the command line or its environment variable wins); the preset's name
    goes into the run record's parameters and each record's ``meta.presets``."""
    import functools

    def decorate(func):
        @functools.wraps(func)
        def run(*args, preset=None, **kwargs):
            if preset:
                apply_preset(command, preset, kwargs)
            return func(*args, **kwargs)

        return click.option("--preset", metavar="NAME", default=None, envvar="CQ_PRESET",
                            help="Run this stage as a paper's authors ran it: a named bundle of option values "
                                 "(`cq presets` lists them; docs/methods.md says where each value comes from). "
                                 "Options given explicitly win. Env: CQ_PRESET.")(run)

    return decorate


def apply_preset(command: str, name: str, kwargs: dict) -> None:
    import logging

    from .. import presets

    ctx = click.get_current_context()
    values = presets.values(name, command)
    if not values:
        logging.getLogger("cqtools").info(f"preset {name} sets nothing on cq {command} "
                                          f"(it covers: {', '.join(presets.get(name).commands())})")
    values, why = presets.for_model(name, command, _for_chosen_method(ctx, command, name, values, kwargs), kwargs,
                                    _config(ctx))
    applied = {}
    for key, value in values.items():
        if key not in kwargs:
            raise click.UsageError(f"preset {name} sets {key!r}, which cq {command} does not take (a bug in "
                                   f"its rows in cqtools/presets/)")
        source = ctx.get_parameter_source(key)
        if source is None or source.name in ("DEFAULT", "DEFAULT_MAP"):
            kwargs[key] = applied[key] = value
            ctx.set_parameter_source(key, click.core.ParameterSource.DEFAULT_MAP)
    for key in presets.values(name, command):
        source = ctx.get_parameter_source(key) if key in kwargs else None
        if source is not None and source.name not in ("DEFAULT", "DEFAULT_MAP"):
            why[key] = "set explicitly"
    ctx.meta["cq.preset"] = presets.get(name).name  # as registered, whatever the case given
    ctx.meta["cq.preset_rows"] = presets.rows_note(name, command, applied, why)


def _config(ctx):
    """The run configuration as the flags set it (which models an API serves), not kept: the command builds its own."""
    from .options import run_config

    kept = "cq.run_config" in ctx.meta
    config = run_config(ctx)
    if not kept:
        ctx.meta.pop("cq.run_config", None)
    return config


def _for_chosen_method(ctx, command: str, name: str, values: dict, kwargs: dict) -> dict:
    """The preset's rows unless the user chose (a flag or its variable) another method than the preset's."""
    from .. import presets

    chosen = {k: kwargs[k] for k in ("method", "mode", "reader_name") if k in kwargs
              and ctx.get_parameter_source(k) is not None
              and ctx.get_parameter_source(k).name not in ("DEFAULT", "DEFAULT_MAP")}
    return presets.for_method(name, command, values, chosen)


