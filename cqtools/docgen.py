"""docs/cli.md from the commands' own --help (``make docs``; tests/test_docs.py checks it is current)."""
from __future__ import annotations

import click

from .cli import cli


def _help(command: click.Command, path: list[str]) -> list[str]:
    ctx = click.Context(command, info_name=" ".join(path), max_content_width=100, terminal_width=100)
    out = [f"## `{' '.join(path)}`", "", "```", command.get_help(ctx).rstrip(), "```", ""]
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            out += _help(command.get_command(ctx, name), path + [name])
    return out


def cli_markdown() -> str:
    lines = ["# CLI reference", "", "Generated from `--help` by `make docs` (python -m cqtools.docgen); do not edit.", ""]
    return "\n".join(lines + _help(cli, ["cq"])) + "\n"


if __name__ == "__main__":
    import sys

    sys.stdout.write(cli_markdown())
