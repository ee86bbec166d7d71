"""The grid's time left and its CPU seconds, from its log of cells (CQ_GRID_LOG, written by cell.py) and its plan
(CQ_GRID_PLAN: the `make -n` lines of the cells the run had to make when it began, experiments.mk).

Each cell appends a start line when it begins and a done line when it ends (tab-separated):

    RUN  OUT  start  KIND  T0       SERVER_PID  SERVER_CPU      (T0: the cell's start, epoch seconds)
    RUN  OUT  done   KIND  SECONDS  CPU  SERVER_PID  SERVER_CPU

KIND is the cell's command in a few words ("cq detect llm": the cq command and its --task, --method and --preset
values), so a cell's expected cost is the mean seconds of the finished cells of its kind, or of all finished cells
for a kind none has finished yet; the time left is the cost of the planned cells not started yet, and of the running ones
less their age, over the cells' measured concurrency (their summed seconds over the wall time so far; make -jN).

CPU is what the cell's own processes used (their rusage: the bash line and everything it waited for). A cq command
served by the fork server (SERVE=1) runs in a child of the server, which escapes that: the server's CPU, its own
and its reaped children's (/proc/PID/stat utime+stime+cutime+cstime), is read when each cell starts and ends, and
the grid counts each server's growth over the run.
"""
from __future__ import annotations

import os
import re
import shlex
from collections import Counter
from pathlib import Path

FLAGS = re.compile(r"--(?:task|method|preset)[ =]([A-Za-z0-9_.-]+)")


def what(command: str) -> str:
    """The cq command a cell runs, in two words ("cq detect", also for `python -m cqtools detect`), or the first
    word of another command."""
    found = re.search(r"(?:(?:^|[\s/])cq|-m cqtools) ([a-z][a-z-]*)", command)
    if found:
        return f"cq {found.group(1)}"
    words = shlex.split(command) if command.strip() else [""]
    first = next((w for w in words if "=" not in w), words[0])
    return Path(first).name


def kind(command: str) -> str:
    """What a cell is, for its cost: its command in two words and its --method / --preset values."""
    return " ".join([what(command), *dict.fromkeys(FLAGS.findall(command))])


def planned(line: str) -> str | None:
    """The KIND of one `make -n` line of the plan (`... cell.py run [--input IN] F -- 'COMMAND'`)."""
    try:
        words = shlex.split(line)
    except ValueError:
        return None
    if "--" not in words:
        return None
    return kind(" ".join(words[words.index("--") + 1:]))


def server_cpu(socket: str | None) -> tuple[int, float]:
    """(pid, CPU seconds of the fork server at ``socket`` and its reaped runs); (0, 0.0) when none runs."""
    try:
        pid = int(Path(f"{socket}.pid").read_text().strip()) if socket else 0
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, ValueError):
        return 0, 0.0
    ticks = os.sysconf("SC_CLK_TCK")
    return pid, sum(int(v) for v in fields[11:15]) / ticks  # utime stime cutime cstime (fields 14-17)


def entries(log: str | None, run: str) -> tuple[list, list]:
    """(start lines, done lines) of ``run`` in the log, each as {out, kind, ...} (module docstring)."""
    starts, done = [], []
    if not log or not Path(log).exists():
        return starts, done
    for line in Path(log).read_text().splitlines():
        f = line.split("\t")
        if f[0] != run or len(f) < 3:
            continue
        if f[2] == "start" and len(f) >= 7:
            starts.append({"out": f[1], "kind": f[3], "t0": float(f[4]), "pid": f[5], "server": float(f[6])})
        elif f[2] == "done" and len(f) >= 8:
            done.append({"out": f[1], "kind": f[3], "seconds": float(f[4]), "cpu": float(f[5]), "pid": f[6],
                         "server": float(f[7])})
    return starts, done


def left(log: str | None, run: str, plan: str | None, elapsed: float, now: float) -> float | None:
    """Seconds left by the measured cost of each cell kind (module docstring); None before any cell has ended
    or without a plan."""
    starts, done = entries(log, run)
    if not done or not plan or not Path(plan).exists():
        return None
    seconds: dict = {}
    for d in done:
        seconds.setdefault(d["kind"], []).append(d["seconds"])
    busy = sum(d["seconds"] for d in done)
    cost = {k: sum(v) / len(v) for k, v in seconds.items()}
    overall = busy / len(done)
    kinds = Counter(filter(None, map(planned, Path(plan).read_text().splitlines())))
    kinds.subtract(Counter(s["kind"] for s in starts))
    todo = sum(n * cost.get(k, overall) for k, n in kinds.items() if n > 0)
    finished = {d["out"] for d in done}
    running = sum(max(cost.get(s["kind"], overall) - (now - s["t0"]), 0.0) for s in starts
                  if s["out"] not in finished)
    concurrency = max(1.0, busy / elapsed) if elapsed > 0 else 1.0
    return (todo + running) / concurrency


def grid_cpu(log: str | None, run: str | None = None) -> dict | None:
    """{"cells", "seconds", "cpu_s", "cells_cpu_s", "server_cpu_s"} of ``run`` (default: the log's last run):
    the CPU the cells' own processes used plus each fork server's growth over the run."""
    if not log or not Path(log).exists():
        return None
    if run is None:
        runs = [line.split("\t", 1)[0] for line in Path(log).read_text().splitlines() if line]
        run = runs[-1] if runs else ""
    starts, done = entries(log, run)
    if not done:
        return None
    readings: dict = {}
    for entry in starts + done:
        if entry["pid"] != "0":
            readings.setdefault(entry["pid"], []).append(entry["server"])
    own = sum(d["cpu"] for d in done)
    server = sum(max(v) - min(v) for v in readings.values())
    return {"cells": len(done), "seconds": round(sum(d["seconds"] for d in done), 1), "cpu_s": round(own + server, 1),
            "cells_cpu_s": round(own, 1), "server_cpu_s": round(server, 1)}


def summary_line(cpu: dict | None) -> str:
    if not cpu:
        return "grid: no finished cell logged"
    return (f"grid: {cpu['cells']} cells, {cpu['cpu_s']:.0f} CPU s (the cells' own processes {cpu['cells_cpu_s']:.0f}, "
            f"the fork server and the runs it served {cpu['server_cpu_s']:.0f}); {cpu['seconds']:.0f} cell seconds")
