"""`cq plugins`: what each installed plugin adds to cq's registries."""
from __future__ import annotations

import sys

import click

from ..jsonl import dumps


@click.command(name="plugins")
@click.option("--all", "show_all", is_flag=True, help="Also list cq's own (built-in) methods.")
def cli(show_all):
    """List installed plugins (entry point group "cqtools.plugins") and the methods each registers,
    one JSON object per line: {"plugin", "registry", "option", "method", "help"}.

    \b
    Example:
      pip install ./my-cq-detector && cq plugins
      cq plugins --all | jq -r 'select(.registry == "detector") | .method'
    """
    from ..plugins import installed
    from ..registry import ALL

    for registry in ALL:
        for method in registry.methods():
            if show_all or method.plugin != "cqtools":
                sys.stdout.buffer.write(dumps({"plugin": method.plugin, "registry": registry.kind,
                                               "option": registry.option, "method": method.name,
                                               "help": method.help}))
    if not installed():
        click.echo("cq: no plugins installed (entry point group cqtools.plugins)", err=True)
