"""cq's own presets, one module per paper (cqtools/presets/<paper>.py, its ``PRESETS`` or ``PRESET``), registered
through the plugin hook like any plugin's (cqtools/plugins.py DEFAULT_PLUGINS). A new paper's preset is one new
module here: it is found, registered, documented (docs/methods.md, README) and tested without another edit; README
says its expected time is not measured yet until `make bench-smoke` measures it."""
from __future__ import annotations

from ..plugins import hookimpl

NOT_PRESETS = ("__init__", "base", "builtin")
FIRST = ("toc", "clam", "ambigqa", "refuel", "askcq")  # the order README and `cq presets` list them in; others follow


def modules() -> list[str]:
    """The preset modules of this package: :data:`FIRST`, then any other, by name."""
    import pkgutil
    from pathlib import Path

    found = {m.name for m in pkgutil.iter_modules([str(Path(__file__).parent)])} - set(NOT_PRESETS)
    return [m for m in FIRST if m in found] + sorted(found - set(FIRST))


@hookimpl
def register_presets(register):
    import importlib

    for name in modules():
        module = importlib.import_module(f"{__package__}.{name}")
        for preset in getattr(module, "PRESETS", None) or (module.PRESET,):
            register(preset)
