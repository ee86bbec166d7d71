"""`cq cache info|clear`: what cq keeps in CQ_CACHE (converted GGUF weights, API responses), and removing it.

Trained models ($CQ_MODELS, `make models`) and data sets (`cq data get`) are never touched, even when they
live under the same ~/.cache/cqtools folder."""
from __future__ import annotations

import os
import re
import shutil
import sys

import click

from .listing import emit, listing_options

from ..jsonl import dumps

AREAS = {"gguf": "GGUF checkpoints converted once to safetensors (shared by every clone and venv)",
         "compact": "float32 copies of compact (int8-row) models such as the shipped ones, written on first load",
         "api": "OpenAI-compatible responses (greedy requests; a repeated request is read from here)"}


# Only what cq itself writes there is counted and removed (CQ_CACHE may point at a folder shared with
# other files): a GGUF conversion is gguf/<name>-<12 hex digits>/, an API response api/<2 hex>/<hex>.json.
OWNED = {"gguf": re.compile(r"[^/]+-[0-9a-f]{12}"), "compact": re.compile(r"[^/]+-[0-9a-f]{12}"), "api": re.compile(r"[0-9a-f]{2}/[0-9a-f]+\.json")}


def _owned(area_path: str, area: str) -> list[str]:
    """The entries of ``area`` cq wrote (folders for gguf, files for api), by their name's shape."""
    pattern, found = OWNED[area], []
    if area in ("gguf", "compact"):
        with os.scandir(area_path) as it:
            found = [e.path for e in it if e.is_dir(follow_symlinks=False) and pattern.fullmatch(e.name)]
        return sorted(found)
    for folder, _, names in os.walk(area_path):
        for name in names:
            path = os.path.join(folder, name)
            if pattern.fullmatch(os.path.relpath(path, area_path)):
                found.append(path)
    return sorted(found)


def _size(path: str) -> tuple[int, int]:
    """(bytes, files) of a file, or under a folder; links are not followed."""
    if not os.path.isdir(path):
        return os.lstat(path).st_size, 1
    total = files = 0
    for folder, _, names in os.walk(path):
        for name in names:
            try:
                total += os.lstat(os.path.join(folder, name)).st_size
                files += 1
            except OSError:
                continue
    return total, files


def _entries(root: str):
    """(entry dict, the paths cq owns) of each area."""
    for area, what in AREAS.items():
        path = os.path.join(root, area)
        owned = _owned(path, area) if os.path.isdir(path) else []
        sizes = [_size(p) for p in owned]
        yield {"area": area, "path": path, "bytes": sum(s for s, _ in sizes), "files": sum(f for _, f in sizes),
               "what": what}, owned


@click.group(name="cache")
def cli():
    """What cq keeps in its cache ($CQ_CACHE, default ~/.cache/cqtools): converted GGUF weights, float32
    copies of compact models (the shipped ones) and API responses. Trained models ($CQ_MODELS) and data sets (`cq data get`) are not cache and are
    never removed.

    \b
    Example:
      cq cache info
      cq cache clear --area api
    """


@cli.command(name="info")
@listing_options
def info(as_json, as_table):
    """Each cache area: a table on a terminal, else one JSON object per line: {area, path, bytes, files, what}."""
    from .options import run_config

    emit([entry for entry, _ in _entries(run_config().cache_root())], ["area", "bytes", "files", "path", "what"],
         as_json, as_table)


@cli.command(name="clear")
@click.option("--area", type=click.Choice(list(AREAS)), multiple=True,
              help="Only this area (repeatable); default: every area.")
def clear(area):
    """Remove what cq wrote in the cache areas (their next use converts or asks again); prints what
    was removed. Files of other shapes in those folders are left."""
    from .options import run_config

    root = run_config().cache_root()
    for entry, owned in _entries(root):
        if area and entry["area"] not in area:
            continue
        for path in owned:  # only what cq wrote; other files in the folder stay
            shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)
        sys.stdout.buffer.write(dumps({"area": entry["area"], "path": entry["path"], "removed_bytes": entry["bytes"],
                                       "removed_files": entry["files"]}))
