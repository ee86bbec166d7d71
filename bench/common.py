"""Helpers shared by the benchmark scripts: timed subprocesses with their own peak memory."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CQ = [sys.executable, "-m", "cqtools"]


def timed(cmd: list[str], stdin: str | None = None, stdout: str | None = None) -> dict:
    """Run ``cmd``; return wall seconds and the peak RSS (MiB) of that process alone (wait4)."""
    fin = open(stdin, "rb") if stdin else subprocess.DEVNULL
    fout = open(stdout, "wb") if stdout else subprocess.DEVNULL
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdin=fin, stdout=fout, stderr=subprocess.PIPE, cwd=ROOT)
    stderr = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    for fh in (fin, fout):
        if hasattr(fh, "close"):
            fh.close()
    if proc.returncode != 0:
        raise SystemExit(f"benchmark step failed ({proc.returncode}): {' '.join(cmd)}\n{stderr.decode()[-2000:]}")
    return {"seconds": round(seconds, 2), "peak_mib": round(usage.ru_maxrss / 1024, 1)}


def read_jsonl(path) -> list[dict]:
    with open(path) as fh:
        return [json.loads(line) for line in fh if line.strip()]


def write_jsonl(path, records) -> None:
    with open(path, "w") as fh:
        for record in records:
            fh.write(json.dumps(record) + "\n")


def machine() -> str:
    return f"{os.cpu_count()} CPU cores, Python {sys.version.split()[0]}"
