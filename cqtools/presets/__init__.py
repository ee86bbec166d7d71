"""Presets: a paper's pipeline as its authors ran it, as one named bundle of option values per stage.

``cq <stage> --preset NAME`` fills in the stage's options from the preset; a flag given on the
command line (or its environment variable) wins over the preset's value. A preset is only values
of the methods' own option schemas (cqtools/registry.py) and of the commands' flags: it adds no
behaviour of its own. ``cq presets`` lists them (JSONL); docs/methods.md is generated from the rows
of cqtools/presets/<paper>.py (``python -m cqtools.docgen --methods``), so every value carries where it comes from
(paper section, or released file:line at a commit) and what still differs in cq, and why.

Presets are registered through the plugin hook ``register_presets(register)`` (cqtools/plugins.py), cq's
own five like any plugin's; each is checked against the methods' schemas when registered (a row naming an
unknown method, or an option its method does not take, or a value its schema refuses, is refused), and
registering one never hides another. Names are case-insensitive.

From Python::

    from cqtools import presets
    detect_stage = presets.stage("clam", "detect")  # detect.build with the preset's rows, noted in meta.presets
"""
from __future__ import annotations

import difflib

from ..errors import InputError
from .base import APPLIES, COMMAND, LAYOUT, METHOD, Preset, Setting  # noqa: F401 (METHOD: the rows' default)


PRESETS: dict[str, Preset] = {}
_loaded = False


def register(preset: Preset) -> Preset:
    """Add ``preset`` (checked against the methods' schemas; its name must be new, whatever its case). cq's
    own presets are registered first, so one added from Python before any use hides none of them."""
    _load()
    if preset.name.lower() in {name.lower() for name in PRESETS}:
        raise ValueError(f"preset {preset.name!r} is defined twice")
    check(preset)
    PRESETS[preset.name] = preset
    return preset


def get(name: str) -> Preset:
    _load()
    found = {key.lower(): preset for key, preset in PRESETS.items()}.get(str(name).lower())
    if found is not None:
        return found
    near = difflib.get_close_matches(str(name).lower(), [n.lower() for n in PRESETS], n=1)
    hint = f"did you mean {next(n for n in PRESETS if n.lower() == near[0])!r}? " if near else ""
    raise InputError(f"unknown preset {name!r}; {hint}--preset takes one of: {', '.join(PRESETS)} "
                     "(`cq presets` lists them)")


def names() -> list[str]:
    _load()
    return list(PRESETS)


def values(name: str, command: str) -> dict:
    """``{option: value}`` preset ``name`` sets on ``command`` (empty when it sets nothing there:
    a pipeline may pass one --preset to every stage)."""
    return get(name).values(command)


STAGE_MODULES = {"detect": "detect", "gen-cq": "gen_cq", "oracle": "oracle", "answer": "answer",
                 "disambiguate": "disambiguate", "retrieve": "retrieve"}


def stage(name: str, command: str, config=None, **options):
    """The stage ``command`` as preset ``name`` runs it, from Python: the preset's rows for it with ``options``
    on top (yours win), built by the stage's own ``build``; its records note ``meta.presets.<command>`` (and in
    ``meta.preset_rows.<command>`` which rows applied) and its run record names the preset, as the CLI's do::

        detect_stage = presets.stage("clam", "detect", model="Qwen/Qwen2.5-7B-Instruct")
    """
    import importlib

    if command not in STAGE_MODULES:
        raise InputError(f"presets.stage builds one of {', '.join(STAGE_MODULES)}, not {command!r}")
    rows, why = for_model(name, command, for_method(name, command, values(name, command), options), options, config)
    why.update({k: "set explicitly" for k in options if k in values(name, command)})
    applied = {k: v for k, v in rows.items() if k not in options}
    if "reader_name" in rows:  # cq answer's --reader is its build()'s reader
        rows["reader"] = rows.pop("reader_name")
    module = importlib.import_module(f"cqtools.stages.{STAGE_MODULES[command]}")
    fn = module.build(config=config, **{**rows, **options})
    fn.cq_preset = get(name).name
    fn.cq_preset_rows = rows_note(name, command, applied, why)
    return fn


def for_method(name: str, command: str, rows: dict, chosen: dict) -> dict:
    """``rows`` of preset ``name`` for ``command``, unless ``chosen`` (what the user set) picks another method (or
    answer mode) than the preset's: then the preset's method settings are options of a method that is not running
    and are not applied, with one warning (``cq detect --preset clam --method never`` must not label with CLAM's
    threshold), while its command rows and the input-layout rows the chosen method declares still are
    (``cq gen-cq --preset askcq --method llm`` reads AskCQ's passages, budget and answers)."""
    import logging

    key = next((k for k in ("method", "mode") if k in rows), None)
    if key is None:
        return rows
    running = chosen.get(key) if chosen.get(key) is not None else rows[key]
    layout = {r.option for r in get(name).rows(command) if r.applies == LAYOUT}
    # cq answer with a reader the user chose: layout rows that reader does not declare are not applied to it
    reader = (chosen.get("reader_name") or chosen.get("reader")) if command == "answer" else None
    if running == rows[key]:  # the preset's own method: every row but layout rows it does not declare
        return {k: v for k, v in rows.items() if k not in layout or _takes(command, running, k, v, reader)}
    kept, skipped = {}, []
    for row in get(name).rows(command):
        if row.option == key or row.option not in rows:
            continue
        if row.applies == COMMAND or (row.applies == LAYOUT and _takes(command, running, row.option, rows[row.option],
                                                                        reader)):
            kept[row.option] = rows[row.option]
        else:
            skipped.append(row.option)
    message = (f"preset {get(name).name} runs cq {command} --{key} {rows[key]}; --{key} {chosen[key]} was chosen, so the "
               f"preset's {'options' if skipped else 'rows'} for {rows[key]} ({', '.join(sorted(skipped)) or 'none'}) "
               f"are not applied")
    if kept:
        message += f"; its rows for any method still apply ({', '.join(sorted(kept))})"
    logging.getLogger("cqtools").warning(message)
    return kept


# Decoding rows: a beam width the paper's model decoded with, and the options naming the model that decodes with it
# (the first one set). An API model searches no beams, so such a row is not applied to one (a flag given by the
# user is, and an API model refuses it in one line).
DECODING = {"num_beams": ("model",), "qd_num_beams": ("qd_model", "model")}


def for_model(name: str, command: str, rows: dict, options: dict, config=None) -> tuple[dict, dict]:
    """(``rows`` less the decoding rows (:data:`DECODING`) whose model is an API model, ``{option: why}`` of those
    left out, with one warning); ``options``: what the stage is given (its model names)."""
    import logging

    from ..models.load import route

    dropped = {}
    for option, keys in DECODING.items():
        if rows.get(option, 1) == 1:
            continue
        model = next((str(options[k]) for k in keys if options.get(k)), "")
        if route(model) is not None:
            dropped[option] = f"{model or 'the model'} is served by an API, which searches no beams (greedy)"
    if dropped:
        logging.getLogger("cqtools").warning(
            f"preset {get(name).name}: " + "; ".join(f"{k}={rows[k]} not applied: {why}" for k, why in dropped.items()))
    return {k: v for k, v in rows.items() if k not in dropped}, dropped


def rows_note(name: str, command: str, applied: dict, why: dict) -> dict:
    """``meta.preset_rows.<command>``: the options of preset ``name``'s rows for ``command`` that applied, and of
    the others why not (``why``; else: the method that runs does not take it)."""
    rows = [r.option for r in get(name).rows(command)]
    return {"applied": [o for o in rows if o in applied],
            "not_applied": {o: why.get(o, "not an option of the method that runs") for o in rows if o not in applied}}


def _takes(command: str, method: str, option: str, value, reader: str | None = None) -> bool:
    """Whether ``method`` of ``command`` declares ``option`` and takes ``value`` for it (cq answer: its mode, or a
    reader: ``reader`` when one was chosen, else any): a layout row the chosen method does not declare, or declares
    with other limits (CLAM's closed book, 0 passages, for a reader that reads 1 or more), is not applied to it."""
    from .. import registry
    from ..errors import InputError

    methods = _methods(command, method)
    if reader and reader != "auto" and reader in registry.READERS.names():
        methods = [m for m in methods if m not in registry.READERS.methods()] + [registry.READERS.get(reader)]
    for declared in (m.option(option) for m in methods):
        if declared is None:
            continue
        try:
            declared.convert(value, "preset")
            return True
        except InputError:
            continue
    return False


def _methods(command: str, method: str | None = None) -> list:
    """The registered methods a row of ``command`` may configure: ``method`` (every method of the command when
    None; none when it is not registered: its build says so), and for cq answer every reader too."""
    from .. import registry

    if command not in CHOOSERS:
        return []
    reg = getattr(registry, CHOOSERS[command][1])
    methods = reg.methods() if method is None else [reg.get(method)] if method in reg.names() else []
    return [*methods, *registry.READERS.methods()] if command == "answer" else methods


# The commands whose rows choose a registered method, the parameter that chooses it, and its registry.
CHOOSERS = {"detect": ("method", "DETECTORS"), "gen-cq": ("method", "CQ_METHODS"), "oracle": ("method", "ORACLES"),
            "answer": ("mode", "ANSWER_MODES"), "disambiguate": ("method", "DISAMBIGUATORS"),
            "score": ("task", "SCORE_TASKS"), "retrieve": ("method", "SEARCHERS")}


def command_settings(command: str) -> dict:
    """``{name: Option}`` of the settings of ``command`` itself: what a preset may set as COMMAND rows, and whose
    ``shaping`` marks a run record reads (cqtools/runrecord.py): the fields its flags are generated from (cq
    answer's --reader is its build()'s ``reader``: a registered reader)."""
    from ..registry import READERS, Option, schema_of

    if command == "retrieve":
        from ..stages.retrieve import RetrieveSettings

        return {o.name: o for o in schema_of(RetrieveSettings)}
    if command == "rerank":
        from ..stages.rerank import RerankSettings

        return {o.name: o for o in schema_of(RerankSettings)}
    if command == "answer":
        from ..stages.options import CommandSettings

        return {"reader_name": Option("reader_name", str, CommandSettings.reader, choices=("auto", *READERS.names()))}
    if command.startswith("train "):  # a trainer's recipe: the fields of the settings it is registered with
        from ..registry import TRAINERS

        name = command.split(" ", 1)[1]
        trainer = TRAINERS.get(name) if name in TRAINERS.names() else None
        return {} if trainer is None or trainer.options_class is None else \
            {o.name: o for o in schema_of(trainer.options_class)}
    return {}


def check(preset: Preset) -> None:
    """Each row of ``preset`` names what its command takes with a value its declaration takes: a command row one of
    the command's own settings, a method row an option of the preset's method (cq answer's: of its readers too), a
    layout row an option some method of the command declares; a row naming a command setting is a command row."""
    for command in preset.commands():
        own = command_settings(command)
        key = CHOOSERS.get(command, (None,))[0]
        chosen = preset.values(command).get(key)
        for row in preset.rows(command):
            where = f"preset {preset.name}: cq {command} {row.option}"
            if row.applies not in APPLIES:
                raise ValueError(f"{where} applies to {row.applies!r}, not one of {', '.join(APPLIES)}")
            if row.option == key:
                _method_named(command, row.value, where)
                continue
            if (row.option in own) != (row.applies == COMMAND):
                raise ValueError(f"{where}: " + ("a setting of the command itself is a command row" if row.option in own
                                                 else "is not a setting of the command itself"))
            declared = own.get(row.option) if row.applies == COMMAND else _declaration(command, row, chosen)
            if declared is None:
                raise ValueError(f"preset {preset.name}: no method of cq {command} has option {row.option!r}"
                                 if row.applies == LAYOUT else
                                 f"preset {preset.name}: cq {command} {key} {chosen} has no option {row.option!r}")
            if declared.convert(row.value, f"preset {preset.name}") != row.value:
                raise ValueError(f"{where}={row.value!r} is not what its schema gives back")


def _method_named(command: str, name, where: str) -> None:
    from .. import registry

    if command in CHOOSERS and name not in getattr(registry, CHOOSERS[command][1]).names():
        raise ValueError(f"{where} {name!r} is not registered")


def _declaration(command: str, row: Setting, chosen):
    """The declaration a method or layout row of ``command`` sets: the preset's method's option (a layout row: any
    method's of the command), for cq answer a reader's too."""
    methods = _methods(command, None if row.applies == LAYOUT else chosen)
    return next((m.option(row.option) for m in methods if m.option(row.option)), None)


def _load() -> None:
    """Every preset: cq's own (cqtools/presets/builtin.py) and the plugins', through the hook."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    from ..plugins import fill_presets

    fill_presets(register, lambda name: PRESETS.pop(name, None))


__all__ = ["Setting", "Preset", "METHOD", "LAYOUT", "COMMAND", "PRESETS", "register", "get", "names", "values", "check",
           "stage", "for_model", "rows_note"]
