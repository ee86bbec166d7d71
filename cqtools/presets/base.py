"""What a preset is: rows of settings, each with where its value comes from (cqtools/presets/)."""
from __future__ import annotations

from dataclasses import dataclass, field


# What a row of a preset is (Setting.applies), and so which runs take it when the user picks another method than
# the preset's (``cq gen-cq --preset askcq --method llm``):
METHOD = "method"    # the paper's setting of its own method: applied only while that method runs
LAYOUT = "layout"    # the paper's input layout (passages, budget, answers shown, form): any method declaring it takes it
COMMAND = "command"  # the command's own setting (cq retrieve --hits, cq answer --reader): whatever method runs
APPLIES = (METHOD, LAYOUT, COMMAND)
# Why what still differs stays (Setting.stays), as docs/methods.md says it
MACHINE = "forced here"  # no GPU, no BART-large or CAmbigNQ offline, the papers' unreleased files
FLAG = "switch with a flag"  # the row names the flag that gives the release's value
STAYS = (MACHINE, FLAG)
DIVERGES = "a real divergence"  # a difference with neither kind (stays ""): tests/test_preset_rows.py lists each


@dataclass(frozen=True)
class Setting:
    """One value of a preset: ``cq <command> --<option> <value>``, where it comes from, and what
    still differs from the paper or released code (empty: nothing known); ``applies``: :data:`METHOD`,
    :data:`LAYOUT` or :data:`COMMAND` (the row that chooses the method is the command's)."""

    command: str
    option: str        # the command's parameter name (``method``, ``mode``) or a method option's schema name
    value: object
    source: str        # "§3 / Algorithm 1" or "run_toc.py:221 @75a3ddd"
    differs: str = ""
    setting: str = ""  # what this value sets, in words (for the docs' first column)
    applies: str = METHOD
    stays: str = ""    # the kind of a difference: MACHINE (this machine forces it) or FLAG (a flag of the row's
    #                    command, named in ``differs``, switches it); none: DIVERGES. docs/methods.md says which


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

    def rows(self, command: str) -> list[Setting]:
        return [s for s in self.settings if s.command == command]

    def describe(self) -> dict:
        return {"name": self.name, "help": self.help, "paper": self.paper, "code": self.code,
                "commands": {c: self.values(c) for c in self.commands()}}
