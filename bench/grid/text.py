"""How results.md writes a number and names a cell's anchor (bench/grid/report.py and its sections)."""
from __future__ import annotations


def value(summary: dict, key: str):
    for part in key.split("."):
        summary = summary.get(part) if isinstance(summary, dict) else None
    return summary


def fmt(v) -> str:
    return "–" if v is None else (f"{v:.1f}" if isinstance(v, float) else str(v))


def fmt_ci(summary: dict, key: str) -> str:
    """`value [low, high]` (one decimal); the value alone where the summary has no interval for it."""
    v = value(summary, key)
    interval = value(summary.get("ci", {}).get("intervals", {}), key)
    if v is None or not isinstance(interval, list) or None in interval:
        return fmt(v)
    return f"{fmt(v)} [{interval[0]:.1f}, {interval[1]:.1f}]"


def anchor(name: str) -> str:
    return "cmd-" + name.replace(".", "-")
