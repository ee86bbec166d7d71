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
from .base import Preset, Setting


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
    on top (yours win), built by the stage's own ``build``; its records note ``meta.presets.<command>`` and its
    run record names the preset, as the CLI's do::

        detect_stage = presets.stage("clam", "detect", model="Qwen/Qwen2.5-7B-Instruct")
    """
    import importlib

    if command not in STAGE_MODULES:
        raise InputError(f"presets.stage builds one of {', '.join(STAGE_MODULES)}, not {command!r}")
    rows = for_method(name, command, values(name, command), options)
    if "reader_name" in rows:  # cq answer's --reader is its build()'s reader
        rows["reader"] = rows.pop("reader_name")
    module = importlib.import_module(f"cqtools.stages.{STAGE_MODULES[command]}")
    fn = module.build(config=config, **{**rows, **options})
    fn.cq_preset = get(name).name
    return fn


def for_method(name: str, command: str, rows: dict, chosen: dict) -> dict:
    """``rows`` of preset ``name`` for ``command``, unless ``chosen`` (what the user set) picks another method (or
    answer mode) than the preset's: then its rows are options of a method that is not running, and none is
    applied, with one warning (``cq detect --preset clam --method never`` must not label with CLAM's threshold)."""
    import logging

    key = next((k for k in ("method", "mode") if k in rows and chosen.get(k) is not None), None)
    if key is None or chosen[key] == rows[key]:
        return rows
    skipped = sorted(k for k in rows if k != key)
    logging.getLogger("cqtools").warning(
        f"preset {get(name).name} runs cq {command} --{key} {rows[key]}; --{key} {chosen[key]} was chosen, so the "
        f"preset's {'options' if skipped else 'rows'} for {rows[key]} ({', '.join(skipped) or 'none'}) are not applied")
    return {}


# The commands whose rows choose a registered method, the parameter that chooses it, and its registry.
CHOOSERS = {"detect": ("method", "DETECTORS"), "gen-cq": ("method", "CQ_METHODS"), "oracle": ("method", "ORACLES"),
            "answer": ("mode", "ANSWER_MODES"), "disambiguate": ("method", "DISAMBIGUATORS"),
            "score": ("task", "SCORE_TASKS")}


def check(preset: Preset) -> None:
    """Each row of ``preset`` that configures a registered method names that method's option with a value its
    schema takes (cq answer's rows may be its readers' options; ``reader_name`` a registered reader)."""
    from .. import registry

    for command in preset.commands():
        if command not in CHOOSERS:
            continue
        key, name = CHOOSERS[command]
        rows = preset.values(command)
        reg = getattr(registry, name)
        method = reg.get(rows[key]) if key in rows else None
        for option, value in rows.items():
            if option == key or method is None:
                continue
            if command == "answer" and option == "reader_name":
                if value not in registry.READERS.names():
                    raise ValueError(f"preset {preset.name}: cq answer --reader {value!r} is not a registered reader")
                continue
            declared = method.option(option)
            if declared is None and command == "answer":
                declared = next((r.option(option) for r in registry.READERS.methods() if r.option(option)), None)
            if declared is None:
                raise ValueError(f"preset {preset.name}: cq {command} {key} {rows[key]} has no option {option!r}")
            if declared.convert(value, f"preset {preset.name}") != value:
                raise ValueError(f"preset {preset.name}: {option}={value!r} is not what its schema gives back")


def _load() -> None:
    """Every preset: cq's own (cqtools/presets/builtin.py) and the plugins', through the hook."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    from ..plugins import fill_presets

    fill_presets(register, lambda name: PRESETS.pop(name, None))


__all__ = ["Setting", "Preset", "PRESETS", "register", "get", "names", "values", "check", "stage"]
