"""When a figure of the grid's report shows nothing: every value it would plot is the same (a flat line, e.g. all
at zero, or no value at all). figures.py leaves such a figure out and report.py says on the page which and why."""
from __future__ import annotations


def nothing_shown(values) -> str | None:
    """Why a figure of these plotted values shows nothing, in words; None when it shows something."""
    found = [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if not found:
        return "it has no value to plot"
    if len(set(found)) == 1:
        return f"every value it would plot is {found[0]:g} (a flat line)"
    return None
