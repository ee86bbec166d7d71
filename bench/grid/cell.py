"""One cell of `make compare`, in one process: its wall time, its terminal line, its log file.

    cell.py run [--input IN] F -- COMMAND
                                run COMMAND (a bash command line: the cell's pipeline stage, score or pair that
                                writes F) with its standard error going to F.log, after the full command; print
                                "cell k/N  <elapsed> elapsed, ~<left> left  F (cq STAGE)" first, and each line the
                                command writes on stderr shortened, under the cell's name. A failed command
                                prints the end of F.log and where the rest is, and exits with its status. With
                                --input, the cell's attempt is timed around the command (wall.py: F.wall, its
                                total counting IN's), which took two more Python processes a cell before.

k counts the cells this make run has started (every file it makes through `cell.py run`: stages, scores,
paired comparisons, the index), N the cells it had to make when it began: experiments.mk counts them with a
dry run (`make -n`) when the goal is `compare`, `exp-*` or `pairs` and passes CQ_GRID_TOTAL, CQ_GRID_START
(when the run began) and CQ_GRID_LOG (the file each started cell is appended to, with the run's start). The
time left is the elapsed time per cell started so far times the cells still to start (an estimate: cells
differ by minutes). Without CQ_GRID_TOTAL the line says "cell k" alone.

With CQ_GRID_SERVE set (experiments.mk's SERVE, the default of a smoke run), each cell's cq commands go to a
fork server (cqtools/forkserver): the first cell starts one for this environment (its log: cq-server.log beside
CQ_GRID_LOG), the cells' commands get CQ_SERVER naming it, and each runs in a forked child of a process that
imported torch, transformers and cqtools once, with the records a process of its own would write. Until the
server listens (its imports take seconds), and for anything it refuses, cq runs in its own process.
`cell.py stop` (the end of make compare) stops it; otherwise it stops after 2 minutes without a run.
"""
from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.grid.wall import wall_start, wall_stop  # noqa: E402

WIDTH = 110  # a relayed stderr line is cut to this many characters on the terminal (F.log has it whole)
TAIL = 15    # lines of F.log shown when a cell fails


def clock(seconds: float) -> str:
    seconds = int(max(seconds, 0))
    return (f"{seconds // 3600}h{seconds % 3600 // 60:02d}m" if seconds >= 3600 else
            f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s")


def what(command: str) -> str:
    """The cq command a cell runs, in two words ("cq detect"), or the first word of another command."""
    found = re.search(r"(?:^|[\s/])cq ([a-z][a-z-]*)", command)
    if found:
        return f"cq {found.group(1)}"
    words = shlex.split(command) if command.strip() else [""]
    first = next((w for w in words if "=" not in w), words[0])
    return Path(first).name


def cell_line(k: int, total: int | None, started: float | None, now: float, out: str, command: str) -> str:
    """The terminal's line for the k-th cell of a run of ``total`` that began at ``started``."""
    head = f"cell {k}/{total}" if total else f"cell {k}"
    timing = ""
    if started is not None:
        elapsed = now - started
        timing = f"  {clock(elapsed)} elapsed"
        if total and k > 1:
            timing += f", ~{clock(elapsed / (k - 1) * (total - k + 1))} left"
    return f"{head}{timing}  {Path(out).name} ({what(command)})"


def next_cell(log: str | None, run: str, out: str) -> int:
    """Append ``out`` to the run's log of started cells; return how many this run has started (it included).
    One O_APPEND write per line: cells started side by side (make -jN) never lose a line."""
    if not log:
        return 1
    Path(log).parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{run}\t{out}\n".encode())
    finally:
        os.close(fd)
    with open(log) as fh:
        return sum(1 for line in fh if line.split("\t", 1)[0] == run)


def short(name: str, line: str) -> str:
    text = f"  {name}: {line.rstrip()}"
    return text if len(text) <= WIDTH else text[:WIDTH - 3] + "..."


def served(env) -> dict:
    """The cell's environment: with CQ_GRID_SERVE, CQ_SERVER names this environment's fork server (started
    here when none runs)."""
    if not env.get("CQ_GRID_SERVE"):
        return env
    from cqtools.forkserver import start

    try:
        path = start.socket_for(env)
    except start.NotOurs as err:
        print(f"cq server: none ({err}); the cells run in processes of their own", file=sys.stderr)
        return env
    log = Path(env["CQ_GRID_LOG"]).parent if env.get("CQ_GRID_LOG") else Path(".")
    log.mkdir(parents=True, exist_ok=True)
    start.ensure(path, str(log / "cq-server.log"), environ=env)
    return {**env, "CQ_SERVER": path}


def run(out: str, command: str, env=None, now=time.time) -> int:
    """Run one cell (module docstring); returns its exit status."""
    env = served(os.environ if env is None else env)
    total = int(env["CQ_GRID_TOTAL"]) if env.get("CQ_GRID_TOTAL", "").isdigit() else None
    started = float(env["CQ_GRID_START"]) if env.get("CQ_GRID_START") else None
    k = next_cell(env.get("CQ_GRID_LOG"), env.get("CQ_GRID_START", ""), out)
    print(cell_line(k, total, started, now(), out, command), flush=True)
    log_path = Path(out + ".log")
    log_path.parent.mkdir(parents=True, exist_ok=True)
    name = Path(out).name
    with open(log_path, "a") as log:
        log.write(f"$ {command}\n")
        log.flush()
        proc = subprocess.Popen(["bash", "-eo", "pipefail", "-c", command], stderr=subprocess.PIPE, text=True,
                                errors="replace", env=env)
        try:
            for line in proc.stderr:
                log.write(line)
                log.flush()
                print(short(name, line), file=sys.stderr, flush=True)
            code = proc.wait()
        except KeyboardInterrupt:
            code = proc.wait()
            code = code if code else 130
    if code:
        lines = log_path.read_text(errors="replace").splitlines()[-TAIL:]
        print("\n".join([f"{name} failed (exit {code}); the end of {log_path}:", *lines]), file=sys.stderr)
    return code


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="what", required=True)
    one = sub.add_parser("run", help="run one cell: cell.py run [--input IN] F -- COMMAND")
    one.add_argument("out", help="the file the cell makes (F.log gets its command and stderr)")
    one.add_argument("--input", metavar="IN", help="time the cell: F.wall, its total adding IN.wall's (wall.py)")
    one.add_argument("command", nargs=argparse.REMAINDER, help="-- then the bash command line")
    sub.add_parser("stop", help="stop this environment's fork server (CQ_GRID_SERVE), if one runs")
    args = ap.parse_args(argv)
    if args.what == "stop":
        if os.environ.get("CQ_GRID_SERVE"):
            from cqtools.forkserver import start

            try:
                start.stop(start.socket_for(os.environ))
            except start.NotOurs:  # none was started there
                pass
        return
    words = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not words:
        ap.error("run F -- COMMAND: no command")
    if args.input:
        wall_start(args.out)
    code = run(args.out, " ".join(words))
    if args.input and not code:
        wall_stop(args.out, args.input)
    sys.exit(code)


if __name__ == "__main__":
    main()
