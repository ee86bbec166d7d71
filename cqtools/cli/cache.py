"""`cq cache info|clear`: what cq keeps in CQ_CACHE (converted GGUF weights, API responses), and removing it.

Trained models ($CQ_MODELS, `make models`) and data sets (`cq data get`) are never touched, even when they
live under the same ~/.cache/cqtools folder."""
from __future__ import annotations

import os
import shutil
import sys

import click

from ..jsonl import dumps

AREAS = {"gguf": "GGUF checkpoints converted once to safetensors (shared by every clone and venv)",
         "api": "OpenAI-compatible responses (greedy requests; a repeated request is read from here)"}


def _size(path: str) -> tuple[int, int]:
    """(bytes, files) under ``path``; links are not followed."""
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
    for area, what in AREAS.items():
        path = os.path.join(root, area)
        size, files = _size(path) if os.path.isdir(path) else (0, 0)
        yield {"area": area, "path": path, "bytes": size, "files": files, "what": what}


@click.group(name="cache")
def cli():
    """What cq keeps in its cache ($CQ_CACHE, default ~/.cache/cqtools): converted GGUF weights and
    API responses. Trained models ($CQ_MODELS) and data sets (`cq data get`) are not cache and are
    never removed.

    \b
    Example:
      cq cache info
      cq cache clear --area api
    """


@cli.command(name="info")
def info():
    """One JSON object per cache area: {area, path, bytes, files, what}."""
    from ..config import current

    for entry in _entries(current().cache_root()):
        sys.stdout.buffer.write(dumps(entry))


@cli.command(name="clear")
@click.option("--area", type=click.Choice(list(AREAS)), multiple=True,
              help="Only this area (repeatable); default: every area.")
def clear(area):
    """Remove the cache areas (their next use converts or asks again); prints what was removed."""
    from ..config import current

    root = current().cache_root()
    for entry in _entries(root):
        if area and entry["area"] not in area:
            continue
        if os.path.isdir(entry["path"]):
            shutil.rmtree(entry["path"])
        sys.stdout.buffer.write(dumps({"area": entry["area"], "path": entry["path"], "removed_bytes": entry["bytes"],
                                       "removed_files": entry["files"]}))
