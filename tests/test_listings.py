"""Issue 37, item 6: every listing (cq models, cq presets, cq cache info, cq data list) is a table with a
header on a terminal and JSONL when piped or with --json."""
import os
import pty
import subprocess
import sys

import pytest

from cqtools.cli import cli

from .conftest import parse_jsonl

LISTINGS = [(["models"], "ROLE"), (["presets"], "NAME"), (["cache", "info"], "AREA"), (["data", "list"], "NAME")]


@pytest.mark.parametrize("args,first", LISTINGS)
def test_a_listing_is_jsonl_when_piped_and_a_table_with_a_header_when_asked(runner, args, first):
    piped = runner.invoke(cli, args)
    assert piped.exit_code == 0, piped.stderr
    assert parse_jsonl(piped.stdout) and parse_jsonl(piped.stdout) == parse_jsonl(runner.invoke(cli, [*args, "--json"]).stdout)
    table = runner.invoke(cli, [*args, "--table"])
    assert table.exit_code == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].split()[0] == first and not lines[1].startswith("{") and len(lines) == len(parse_jsonl(piped.stdout)) + 1
    assert runner.invoke(cli, [*args, "--json", "--table"]).exit_code == 2


def test_on_a_terminal_a_listing_is_a_table():
    main, child = pty.openpty()
    proc = subprocess.run([sys.executable, "-m", "cqtools", "presets"], stdout=child, stderr=subprocess.PIPE,
                          timeout=120)
    os.close(child)
    shown = os.read(main, 1 << 16).decode()
    os.close(main)
    assert proc.returncode == 0, proc.stderr
    assert shown.splitlines()[0].split()[:3] == ["NAME", "PAPER", "HELP"] and "{" not in shown.splitlines()[1]


def test_every_model_role_has_a_variable_of_its_own(runner):
    """Two roles shared CQ_MODEL_DETECT (the classifier and the LLM detector, issue 37 item 6): setting it for one
    changed the other. `cq models` lists one variable per role."""
    import orjson

    from cqtools.models.roles import ROLES

    envs = [role.env for role in ROLES]
    assert len(set(envs)) == len(envs), sorted(e for e in envs if envs.count(e) > 1)
    listed = runner.invoke(cli, ["models", "--json"])
    overrides = [orjson.loads(line)["override"] for line in listed.stdout.splitlines() if line.strip()]
    assert len(overrides) == len(ROLES) and len(set(overrides)) == len(overrides)
