"""A grid cell's wall time over its attempts: F.part.attempts holds their [start, end], F.wall the result.

    wall_start(F)      before a stage writes F (through F.part)
    wall_stop(F, IN)   after it: F.wall = {"stage_s", "total_s", "attempts", "resumed", "jobs", "threads",
                       "shared", "gen_cache_hits", "gen_cache"} (make's -jN of the last attempt,
                       OMP_NUM_THREADS, whether this or any upstream stage ran under -jN > 1, the generations
                       this stage read from the grid's cache (F.gencache, written by cq under
                       CQ_GEN_CACHE_REPORT), and whether this or any upstream stage read any)

A stage's wall time is the sum over its attempts. An attempt that was killed counts up to the last record it
wrote (the mtime of F.part, which `cq --resume` appends to as it goes); a stage with no resumable F.part (no run
record F.part.cq.json) starts its count over. total_s adds the input's total_s (IN.wall), so a cell's total runs
from the question file through every stage it reads from; "resumed" is true when any of those stages took more
than one attempt. cell.py calls both around the cell's command, in the cell's one process.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path


def _attempts_path(out: str) -> Path:
    return Path(out + ".part.attempts")


def _read_attempts(out: str) -> list[list]:
    path = _attempts_path(out)
    return json.loads(path.read_text()) if path.exists() else []


def wall_start(out: str) -> None:
    """Open an attempt at F; close a killed one before it at the last record it wrote."""
    resumable = Path(out + ".part.cq.json").exists()
    attempts = _read_attempts(out) if resumable else []
    if not resumable:  # a fresh start: the generation-cache counts of an earlier run do not carry over
        Path(out + ".gencache").unlink(missing_ok=True)
    if attempts and attempts[-1][1] is None:
        start = attempts[-1][0]
        part = Path(out + ".part")
        attempts[-1][1] = max(start, part.stat().st_mtime) if part.exists() else start
    attempts.append([time.time(), None])
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    _attempts_path(out).write_text(json.dumps(attempts))


def wall_stop(out: str, upstream: str) -> dict:
    """Close the open attempt and write F.wall (total_s: this stage plus IN's total)."""
    attempts = _read_attempts(out)
    if not attempts or attempts[-1][1] is not None:
        raise SystemExit(f"wall stop {out}: no attempt was started (start it before the stage)")
    attempts[-1][1] = time.time()
    stage_s = sum(end - start for start, end in attempts)
    before = read_wall(upstream + ".wall") or {}
    jobs = make_jobs(os.environ.get("MAKEFLAGS", ""))
    wall = {"input": upstream, "stage_s": round(stage_s, 3), "total_s": round(stage_s + before.get("total_s", 0.0), 3),
            "attempts": len(attempts), "resumed": len(attempts) > 1 or bool(before.get("resumed")),
            "jobs": jobs, "threads": os.environ.get("OMP_NUM_THREADS"),
            "shared": jobs > 1 or bool(before.get("shared"))}
    counts = Path(out + ".gencache")
    wall["gen_cache_hits"] = json.loads(counts.read_text()).get("hits", 0) if counts.exists() else 0
    wall["gen_cache"] = wall["gen_cache_hits"] > 0 or bool(before.get("gen_cache"))
    Path(out + ".wall").write_text(json.dumps(wall) + "\n")
    return wall


def make_jobs(makeflags: str) -> int:
    """The -jN make ran with (1 without -j; an unbounded -j counts as 2: beside others all the same)."""
    for word in makeflags.split():
        if word.startswith("-j") and not word.startswith("--"):
            return int(word[2:]) if word[2:].isdigit() else 2
    return 1


def read_wall(path) -> dict | None:
    path = Path(path)
    return json.loads(path.read_text()) if path.exists() else None
