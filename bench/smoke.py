"""`make bench-smoke`: how long `make compare N=5` takes from a fresh clone's state: an empty WORK (no index,
no cells) and an empty CQ_MODELS (the shipped classifier and reader, nothing trained). Writes
docs/benchmarks/smoke.md: the total wall seconds, the index build and the slowest cells (their F.wall)."""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import ROOT, machine  # noqa: E402
from bench.grid.eta import grid_cpu  # noqa: E402
from bench.preset_times import write as write_times  # noqa: E402


NOTES = "## What these numbers say"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", type=Path, required=True, help="emptied first")
    ap.add_argument("--n", type=int, default=5)
    ap.add_argument("--deep", type=int, default=3,
                    help="questions of the cells that read the deep pool and of ToC's loop (N_DEEP, N_TOC): the "
                         "presets' expected times in README are theirs, so at least 3 (issue 57 item 18)")
    ap.add_argument("--results", type=Path, default=None,
                    help="where the grid's report goes (default: WORK/results.md; docs/results.md to publish it)")
    ap.add_argument("--budget", type=float, default=900, help="the seconds the issue allows")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks" / "smoke.md")
    ap.add_argument("--render", action="store_true",
                    help="only rewrite the page (and preset-times.json) from the run already in --work (its run.json)")
    args = ap.parse_args()
    if not args.render:
        run(args)
    render(args)


def run(args) -> None:
    """`make compare N` from an empty WORK, timed; what it took and the machine's load go to WORK/run.json."""
    shutil.rmtree(args.work, ignore_errors=True)
    models = args.work / "models"
    models.mkdir(parents=True)
    # cold: no generation cache (GEN_CACHE=), so each cell's seconds are its own generations' (issue 57 item 18)
    cmd = ["make", "--no-print-directory", "compare", f"N={args.n}", f"N_DEEP={args.deep}", f"N_TOC={args.deep}",
           "GEN_CACHE=", f"WORK={args.work}", f"CQ_MODELS={models}",
           f"RESULTS={(args.results or args.work / 'results.md').resolve()}"]
    load_start = os.getloadavg()[0]
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, env={**os.environ, "CQ_GEN_CACHE": ""}, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    (args.work / "make.log").write_text(proc.stdout + proc.stderr)
    if proc.returncode != 0:
        raise SystemExit(f"make compare failed ({proc.returncode}); see {args.work / 'make.log'}")
    (args.work / "run.json").write_text(json.dumps({
        "command": " ".join(cmd[2:7]), "seconds": seconds, "load_start_1min": load_start,
        "load_end_15min": os.getloadavg()[2], "date": time.strftime("%Y-%m-%d")}) + "\n")


def render(args) -> None:
    """docs/benchmarks/smoke.md, and the presets' times (bench/preset_times.py), from the run in WORK."""
    done = json.loads((args.work / "run.json").read_text())
    seconds = done["seconds"]
    exp = next(args.work.glob("exp-all_*"))
    walls = []
    for path in exp.rglob("*.wall"):
        try:
            walls.append((json.loads(path.read_text()).get("stage_s") or 0.0, path.name[:-len(".wall")]))
        except ValueError:
            continue
    index = json.loads(next(args.work.glob("exp-index*.wall")).read_text()).get("stage_s", 0.0)
    walls.sort(reverse=True)
    cpu = grid_cpu(str(exp / "cells.log"))  # `time make` misses the fork server's runs: the cells log them
    verdict = "within" if seconds <= args.budget else "over"
    lines = ["# `make compare N=5` from a fresh clone's state", "",
             f"`make bench-smoke` (bench/smoke.py) on {machine()}, {done['date']}: `{done['command']}` "
             "with an empty WORK and an empty CQ_MODELS (the shipped classifier and reader; nothing trained), "
             "install not counted; as every smoke run, two cells at a time on one thread each (SMOKE_JOBS=2, "
             "experiments.mk), so a cell's seconds below were spent beside another cell, and their cq commands "
             "served from one process that imported torch and transformers once (SERVE=1: "
             "docs/benchmarks/speed.md).", "",
             f"**{seconds:.0f} s** in all ({verdict} the {args.budget:.0f} s target); the BM25-only corpus index "
             f"{index:.0f} s; {len(walls)} stages and scores. "
             + (f"CPU: {cpu['cpu_s']:.0f} s in all, {cpu['cells_cpu_s']:.0f} s in the cells' own processes and "
                f"{cpu['server_cpu_s']:.0f} s in the fork server and the runs it served (bench/grid/eta.py)."
                if cpu else "CPU: not logged."), "",
             f"Load: the 1-minute load average was {done['load_start_1min']:.1f} when the run started and the "
             f"15-minute one {done['load_end_15min']:.1f} when it ended, on {os.cpu_count()} cores: "
             + ("the machine was shared with other work, so every number here is slower than on a quiet machine "
                "(the 900 s target was set on one)." if done["load_end_15min"] > os.cpu_count()
                else "no other work (the run's own two cells load it to about the core count)."), "",
             "| slowest stages | seconds |", "|---|---|"]
    lines += [f"| {name} | {s:.0f} |" for s, name in walls[:12]]
    notes = args.out.read_text().split(NOTES, 1) if args.out.exists() else []
    tail = "\n" + NOTES + notes[1] if len(notes) == 2 else ""  # hand-written notes survive a regeneration
    args.out.write_text("\n".join(lines) + "\n" + tail)
    print("\n".join(lines))
    write_times(exp, f"make {done['command']}", load=done["load_end_15min"], date=done["date"])


if __name__ == "__main__":
    main()
