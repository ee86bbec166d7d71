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
time left is each cell kind's measured cost (the mean seconds of its finished cells, else of all finished cells)
over the cells of the plan (CQ_GRID_PLAN: the dry run's lines) not finished yet (bench/grid/eta.py); before any
cell has ended, the elapsed time per cell started so far times the cells still to start. Without CQ_GRID_TOTAL the
line says "cell k" alone. Each cell logs its wall and CPU seconds (CQ_GRID_LOG), and the fork server's CPU (its
runs escape the cell's rusage); `cell.py stop` prints the grid's CPU seconds from them.

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
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.grid.eta import grid_cpu, kind, left, server_cpu, summary_line, what  # noqa: E402,F401 (what: tests)
from bench.grid.wall import wall_start, wall_stop  # noqa: E402

WIDTH = 110  # a relayed stderr line is cut to this many characters on the terminal (F.log has it whole)
TAIL = 15    # lines of F.log shown when a cell fails


def clock(seconds: float) -> str:
    seconds = int(max(seconds, 0))
    return (f"{seconds // 3600}h{seconds % 3600 // 60:02d}m" if seconds >= 3600 else
            f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s")


def cell_line(k: int, total: int | None, started: float | None, now: float, out: str, command: str,
              remaining: float | None = None) -> str:
    """The terminal's line for the k-th cell of a run of ``total`` that began at ``started``: the time left is
    ``remaining`` (eta.left: each cell kind's measured cost) when known, else the mean time per cell so far."""
    head = f"cell {k}/{total}" if total else f"cell {k}"
    timing = ""
    if started is not None:
        elapsed = now - started
        timing = f"  {clock(elapsed)} elapsed"
        if remaining is not None:
            timing += f", ~{clock(remaining)} left"
        elif total and k > 1:
            timing += f", ~{clock(elapsed / (k - 1) * (total - k + 1))} left"
    return f"{head}{timing}  {Path(out).name} ({what(command)})"


def append(log: str | None, *fields) -> None:
    """One line of the run's log (eta.py's format). One O_APPEND write per line: cells started side by side
    (make -jN) never lose a line."""
    if not log:
        return
    Path(log).parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, ("\t".join(map(str, fields)) + "\n").encode())
    finally:
        os.close(fd)


def next_cell(log: str | None, run: str, out: str, what_kind: str = "", server=(0, 0.0)) -> int:
    """Append ``out``'s start to the run's log of cells; return how many this run has started (it included)."""
    if not log:
        return 1
    append(log, run, out, "start", what_kind, f"{time.time():.3f}", server[0], f"{server[1]:.2f}")
    with open(log) as fh:
        return sum(1 for line in fh if line.split("\t", 1)[0] == run and line.split("\t")[2:3] == ["start"])


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
    log_file, run_id, what_kind = env.get("CQ_GRID_LOG"), env.get("CQ_GRID_START", ""), kind(command)
    k = next_cell(log_file, run_id, out, what_kind, server_cpu(env.get("CQ_SERVER")))
    at = now()
    remaining = left(log_file, run_id, env.get("CQ_GRID_PLAN"), at - started, time.time()) if started else None
    print(cell_line(k, total, started, at, out, command, remaining), flush=True)
    code, seconds, cpu = timed(out, command, env)
    pid, server = server_cpu(env.get("CQ_SERVER"))
    append(log_file, run_id, out, "done", what_kind, f"{seconds:.2f}", f"{cpu:.2f}", pid, f"{server:.2f}")
    return code


def timed(out: str, command: str, env) -> tuple[int, float, float]:
    """Run the cell's command (its stderr to F.log and shortened to the terminal): (status, wall seconds, CPU
    seconds of its own processes)."""
    clock0, usage0 = time.monotonic(), resource.getrusage(resource.RUSAGE_CHILDREN)
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
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = usage.ru_utime + usage.ru_stime - usage0.ru_utime - usage0.ru_stime
    return code, time.monotonic() - clock0, cpu


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
        print(summary_line(grid_cpu(os.environ.get("CQ_GRID_LOG"), os.environ.get("CQ_GRID_START"))), flush=True)
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
