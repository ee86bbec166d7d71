"""`cq plugins`: what each installed plugin adds to cq's registries (and which plugins are broken)."""
from __future__ import annotations

import sys

import click

from ..jsonl import dumps


@click.command(name="plugins")
@click.option("--all", "show_all", is_flag=True, help="Also list cq's own (built-in) methods.")
@click.option("--options", "show_options", is_flag=True,
              help="Add each method's option schema: [{name, type, default, help, flag, choices?, min?, max?}].")
def cli(show_all, show_options):
    """List installed plugins (entry point group "cqtools.plugins") and the methods each registers,
    one JSON object per line: {"plugin", "registry", "option", "method", "help"}; a plugin that
    could not be used: {"plugin", "entry_point", "broken": true, "problem"}.

    \b
    Example:
      pip install ./my-cq-detector && cq plugins
      cq plugins --all | jq -r 'select(.registry == "detector") | .method'
      cq plugins --all --options | jq 'select(.method == "classifier") | .options'
    """
    from ..plugins import broken, installed
    from ..registry import ALL

    for registry in ALL:
        for method in registry.methods():
            if show_all or method.plugin != "cqtools":
                row = {"plugin": method.plugin, "registry": registry.kind, "option": registry.option,
                       "method": method.name, "help": method.help}
                if show_options:
                    row["options"] = [o.describe() for o in method.options]
                sys.stdout.buffer.write(dumps(row))
    for bad in broken():
        sys.stdout.buffer.write(dumps({"plugin": bad.plugin, "entry_point": bad.entry_point, "broken": True,
                                       "problem": bad.problem}))
    if not installed() and not broken():
        click.echo("cq: no plugins installed (entry point group cqtools.plugins)", err=True)
