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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", type=Path, required=True, help="emptied first")
    ap.add_argument("--n", type=int, default=5)
    ap.add_argument("--budget", type=float, default=900, help="the seconds the issue allows")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks" / "smoke.md")
    args = ap.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    models = args.work / "models"
    models.mkdir(parents=True)
    cmd = ["make", "--no-print-directory", "compare", f"N={args.n}", f"WORK={args.work}", f"CQ_MODELS={models}",
           f"RESULTS={args.work / 'results.md'}"]
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, env={**os.environ, "CQ_GEN_CACHE": ""}, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    (args.work / "make.log").write_text(proc.stdout + proc.stderr)
    if proc.returncode != 0:
        raise SystemExit(f"make compare failed ({proc.returncode}); see {args.work / 'make.log'}")
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
             f"`make bench-smoke` (bench/smoke.py) on {machine()}, {time.strftime('%Y-%m-%d')}: `{' '.join(cmd[2:4])}` "
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
             "| slowest stages | seconds |", "|---|---|"]
    lines += [f"| {name} | {s:.0f} |" for s, name in walls[:12]]
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
