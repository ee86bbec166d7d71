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
from dataclasses import dataclass, field

from ..errors import InputError


@dataclass(frozen=True)
class Setting:
    """One value of a preset: ``cq <command> --<option> <value>``, where it comes from, and what
    still differs from the paper or released code (empty: nothing known)."""

    command: str
    option: str        # the command's parameter name (``method``, ``mode``) or a method option's schema name
    value: object
    source: str        # "§3 / Algorithm 1" or "run_toc.py:221 @75a3ddd"
    differs: str = ""
    setting: str = ""  # what this value sets, in words (for the docs' first column)


@dataclass(frozen=True)
class Preset:
    name: str
    help: str
    paper: str                       # ../shared/papers/<file> and the citation
    code: str                        # the released code and commit, or "none released"
    settings: tuple[Setting, ...] = ()
    departures: tuple[str, ...] = field(default=())  # differences that are not one option's value

    def commands(self) -> list[str]:
        return list(dict.fromkeys(s.command for s in self.settings))

    def values(self, command: str) -> dict:
        """``{option: value}`` this preset sets on ``command`` (empty when it sets none)."""
        return {s.option: s.value for s in self.settings if s.command == command}

    def describe(self) -> dict:
        return {"name": self.name, "help": self.help, "paper": self.paper, "code": self.code,
                "commands": {c: self.values(c) for c in self.commands()}}


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
    """What preset ``name`` sets on ``command``; a preset that sets nothing there is an error (a
    preset is meant for the stages it names)."""
    preset = get(name)
    found = preset.values(command)
    if not found:
        raise InputError(f"preset {name} sets nothing on cq {command}; it covers: {', '.join(preset.commands())}")
    return found


def _load() -> None:
    """cq's own presets, one module per paper (cqtools/presets/<paper>.py, each defining PRESET)."""
    if not PRESETS:
        from . import clam, toc

        for module in (toc, clam):
            register(module.PRESET)


__all__ = ["Setting", "Preset", "PRESETS", "register", "get", "names", "values"]
