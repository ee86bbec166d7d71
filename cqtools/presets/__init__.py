"""Presets: a paper's pipeline as its authors ran it, as one named bundle of option values per stage.

``cq <stage> --preset NAME`` fills in the stage's options from the preset; a flag given on the
command line (or its environment variable) wins over the preset's value. A preset is only values
of the methods' own option schemas (cqtools/registry.py) and of the commands' flags: it adds no
behaviour of its own. ``cq presets`` lists them (JSONL); docs/methods.md is generated from the rows
of cqtools/presets/<paper>.py (``python -m cqtools.docgen --methods``), so every value carries where it comes from
(paper section, or released file:line at a commit) and what still differs in cq, and why.

From Python::

    from cqtools import presets
    from cqtools.stages import detect
    detect_stage = detect.build(**presets.values("clam", "detect"))  # method + its options
"""
from __future__ import annotations

import difflib

from ..errors import InputError
from .base import Preset, Setting


PRESETS: dict[str, Preset] = {}


def register(preset: Preset) -> Preset:
    if preset.name in PRESETS:
        raise ValueError(f"preset {preset.name!r} is defined twice")
    PRESETS[preset.name] = preset
    return preset


def get(name: str) -> Preset:
    _load()
    try:
        return PRESETS[name]
    except KeyError:
        near = difflib.get_close_matches(name, list(PRESETS), n=1)
        hint = f"did you mean {near[0]!r}? " if near else ""
        raise InputError(f"unknown preset {name!r}; {hint}--preset takes one of: {', '.join(PRESETS)} "
                         "(`cq presets` lists them)") from None


def names() -> list[str]:
    _load()
    return list(PRESETS)


def values(name: str, command: str) -> dict:
    """``{option: value}`` preset ``name`` sets on ``command`` (empty when it sets nothing there:
    a pipeline may pass one --preset to every stage)."""
    return get(name).values(command)


def _load() -> None:
    """cq's own presets, one module per paper (cqtools/presets/<paper>.py, each defining PRESET)."""
    if not PRESETS:
        from . import ambigqa, askcq, clam, refuel, toc

        for module in (toc, clam, ambigqa, refuel, askcq):
            for preset in getattr(module, "PRESETS", None) or (module.PRESET,):
                register(preset)


__all__ = ["Setting", "Preset", "PRESETS", "register", "get", "names", "values"]
