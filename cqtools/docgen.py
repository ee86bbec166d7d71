"""docs/cli.md from the commands' own --help (``make docs``; tests/test_docs.py checks it is current)."""
from __future__ import annotations

import click

from .cli import cli


def _help(command: click.Command, path: list[str], parent: click.Context | None = None) -> list[str]:
    """Help as `cq ... --help` prints it: the root context takes the group's context_settings
    (-h, widths) and every subcommand's context inherits from its parent's."""
    settings = command.context_settings if parent is None else {}
    ctx = click.Context(command, info_name=path[-1], parent=parent, **settings)
    out = [f"## `{' '.join(path)}`", "", "```", command.get_help(ctx).rstrip(), "```", ""]
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            out += _help(command.get_command(ctx, name), path + [name], ctx)
    return out


def cli_markdown() -> str:
    lines = ["# CLI reference", "", "Generated from `--help` by `make docs` (python -m cqtools.docgen); do not edit.", ""]
    return "\n".join(lines + _help(cli, ["cq"])) + "\n"


if __name__ == "__main__":
    import sys

    sys.stdout.write(cli_markdown())
