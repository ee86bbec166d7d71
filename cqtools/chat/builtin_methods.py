"""The chat package's own registrations, through the plugin hooks like any plugin's (cqtools/plugins.py):
``cq convert chat-log`` reads a ``cq chat --log`` file (export.py)."""
from __future__ import annotations

from ..plugins import hookimpl


@hookimpl
def register_formats(register):
    from .export import DESCRIPTIONS, LAYOUT_FORMATS

    for name, reader in LAYOUT_FORMATS.items():
        register(name, reader, help=DESCRIPTIONS[name], options=[])
