"""Each preset row that still differs from its paper or released code says which kind of difference it is
(issue 55's acceptance for docs/methods.md): forced by this machine, or switched by a flag of the row's command
that the row names. The few that are neither are listed here, each with why it stays."""
from __future__ import annotations

import functools
import os
import re

import pytest
from click.testing import CliRunner

from cqtools import presets
from cqtools.presets.base import DIVERGES, FLAG, MACHINE, STAYS

# (preset, command, option): why the difference is neither forced here nor a flag away (docs/methods.md says
# each as "a real divergence"; docs/audit/issue55.md has the training ones). None is left: a new one goes here.
DIVERGENCES: dict[tuple[str, str, str], str] = {}
FLAG_NAME = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


@functools.lru_cache(maxsize=None)
def _help(command: str) -> str:
    from cqtools.cli import cli

    result = CliRunner().invoke(cli, command.split() + ["--help"])
    assert result.exit_code == 0, (command, result.output)
    return result.output


def _rows():
    return [(name, row) for name in presets.names() for row in presets.get(name).settings if row.differs]


def test_every_difference_is_forced_here_or_a_flag_away_or_listed_as_a_real_divergence():
    real = set()
    for name, row in _rows():
        key = (name, row.command, row.option)
        if row.stays == "":
            real.add(key)
        else:
            assert row.stays in STAYS, key
    assert real == set(DIVERGENCES)


@pytest.mark.parametrize("name,row", [(n, r) for n, r in _rows() if r.stays == FLAG],
                         ids=lambda x: x if isinstance(x, str) else f"{x.command}.{x.option}")
def test_a_flag_row_names_a_flag_its_command_takes(name, row):
    named = FLAG_NAME.findall(row.differs)
    help_text = _help(row.command)
    listed = [flag for flag in named if re.search(re.escape(flag) + r"(?![\w-])", help_text)]
    assert listed, (name, row.command, row.option, named)


def test_methods_md_says_each_kind():
    from cqtools.docgen import BEGIN, END

    text = open(os.path.join(os.path.dirname(__file__), "..", "docs", "methods.md")).read()
    text = text[text.index(BEGIN):text.index(END, text.index(BEGIN))]  # the generated tables (docs/methods.md has others by hand)
    for kind in (MACHINE, FLAG, DIVERGES) if DIVERGENCES else (MACHINE, FLAG):
        assert f"**{kind}:**" in text
    rows = [line for line in text.splitlines() if line.startswith("| `cq ")]
    differing = [line for line in rows if not line.rstrip().endswith("| nothing known |")]
    assert differing and all(any(f"| **{k}:**" in line for k in (MACHINE, FLAG, DIVERGES)) for line in differing)
    assert sum(f"| **{DIVERGES}:**" in line for line in rows) == len(DIVERGENCES)
