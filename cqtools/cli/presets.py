"""`cq presets`: the papers' pipelines as named bundles of option values (cqtools/presets/)."""
from __future__ import annotations

import click

from .listing import emit, listing_options


@click.command(name="presets")
@click.option("--sources", "show_sources", is_flag=True,
              help="One line per setting instead: {preset, command, option, value, source, differs}.")
@listing_options
def cli(show_sources, as_json, as_table):
    """List the presets: a table on a terminal, else one JSON object per line: {"name", "help", "paper",
    "code", "commands": {command: {option: value}}}. `cq <command> --preset NAME` runs a stage with them (explicit
    options win); docs/methods.md says where every value comes from.

    \b
    Example:
      cq presets | jq -r .name
      cq presets --sources | jq -r 'select(.preset == "clam") | [.command, .option, .source] | @tsv'
      cq detect --preset clam --model Qwen/Qwen2.5-7B-Instruct < questions.jsonl
    """
    from .. import presets

    rows = []
    for name in presets.names():
        preset = presets.get(name)
        if not show_sources:
            rows.append(preset.describe())
            continue
        rows += [{"preset": name, "command": s.command, "option": s.option, "value": s.value, "source": s.source,
                  "differs": s.differs} for s in preset.settings]
    columns = ["preset", "command", "option", "value", "source"] if show_sources else ["name", "paper", "help"]
    emit(rows, columns, as_json, as_table)
