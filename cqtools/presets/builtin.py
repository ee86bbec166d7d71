"""cq's own presets, one module per paper (cqtools/presets/<paper>.py), registered through the plugin hook
like any plugin's (cqtools/plugins.py DEFAULT_PLUGINS)."""
from __future__ import annotations

from ..plugins import hookimpl


@hookimpl
def register_presets(register):
    from . import ambigqa, askcq, clam, refuel, toc

    for module in (toc, clam, ambigqa, refuel, askcq):
        for preset in getattr(module, "PRESETS", None) or (module.PRESET,):
            register(preset)
