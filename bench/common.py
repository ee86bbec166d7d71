"""Helpers shared by the benchmark scripts: timed subprocesses with their own peak memory."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CQ = [sys.executable, "-m", "cqtools"]


def timed(cmd: list[str], stdin: str | None = None, stdout: str | None = None) -> dict:
    """Run ``cmd``; return wall seconds, the peak RSS (MiB) and the CPU seconds of that process alone (wait4)."""
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
    return {"seconds": round(seconds, 2), "peak_mib": round(usage.ru_maxrss / 1024, 1),
            "cpu_s": round(usage.ru_utime + usage.ru_stime, 2)}  # user + system CPU, all its threads


def read_jsonl(path) -> list[dict]:
    with open(path) as fh:
        return [json.loads(line) for line in fh if line.strip()]


def write_jsonl(path, records) -> None:
    with open(path, "w") as fh:
        for record in records:
            fh.write(json.dumps(record) + "\n")


def replace_section(out: Path, mark: str, lines: list[str], title: str) -> None:
    """Write ``lines`` (starting with the heading ``mark``) into the page ``out`` in place of its section under
    ``mark`` (up to the next ``## `` heading), keeping every other section; a new page starts with ``title``."""
    text = out.read_text() if out.exists() else f"{title}\n"
    head, _, rest = text.partition(mark)
    tail = rest.split("\n## ", 1)
    keep = ("\n## " + tail[1]) if len(tail) > 1 else ""
    out.write_text(head.rstrip() + "\n\n" + "\n".join(lines) + keep.rstrip() + "\n")
    print("\n".join(lines))


def machine() -> str:
    return f"{os.cpu_count()} CPU cores, Python {sys.version.split()[0]}"


def env_for(code_dir: Path | None = None, **extra: str) -> dict:
    """The environment a benchmarked cq runs in: offline, the thread policy cq picks itself (unless
    ``extra`` sets one), the code of ``code_dir`` (a worktree) when given, ``extra`` on top."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "CQ_ORT_SPIN")}
    env.update(CQ_OFFLINE="1", HF_HUB_OFFLINE="1", CQ_GEN_CACHE="")  # a timing never reads a generation cache
    for key in ("CQ_MODELS", "CQ_CACHE"):  # versions start in different directories
        if env.get(key):
            env[key] = str(Path(env[key]).resolve())
    if code_dir is not None:
        env["PYTHONPATH"] = str(code_dir)
    env.update(extra)
    return env


def code_cwd(code_dir: Path | None) -> Path:
    """Where a version's `python -m cqtools` must start: ``-m`` puts the working directory first on
    sys.path, ahead of PYTHONPATH, so started in this checkout it imports this checkout's cqtools.
    Checks that the version's own code is what gets imported."""
    cwd = ROOT if code_dir is None else code_dir
    found = subprocess.run([sys.executable, "-c", "import cqtools; print(cqtools.__file__)"], env=env_for(code_dir),
                           cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()
    if not Path(found).resolve().is_relative_to(Path(cwd).resolve()):
        raise SystemExit(f"bench: {cwd} imports cqtools from {found}")
    return cwd


def without_meta(record: dict) -> dict:
    return {k: v for k, v in record.items() if k != "meta"}


def same_records(a: Path, b: Path) -> bool:
    """The two files hold the same records, ``meta`` aside."""
    return [without_meta(r) for r in read_jsonl(a)] == [without_meta(r) for r in read_jsonl(b)]


def ambiguous_retrieved(data: Path, work: Path, n: int) -> tuple[list[dict], Path]:
    """The first ``n`` ambiguous AmbigNQ dev questions with passages in the shared corpus, and a file
    of them with their BM25 top 20 (the corpus indexed once under ``work``)."""
    index = work / "index"
    if not (index / "cq_index.json").exists():
        timed(CQ + ["convert", "passages", str(data / "corpus/passages.jsonl")], stdout=str(work / "corpus.jsonl"))
        timed(CQ + ["index", "--corpus", str(work / "corpus.jsonl"), "--out", str(index), "--overwrite", "-q"])
    covered = {r["source_qid"] for r in read_jsonl(data / "corpus/passages.jsonl")}
    questions = work / "dev.jsonl"
    timed(CQ + ["convert", "ambignq", str(data / "ambignq/dev_light.json")], stdout=str(questions))
    chosen = [r for r in read_jsonl(questions) if r["id"] in covered and r["gold"]["ambiguous"]][:n]
    write_jsonl(work / "chosen.jsonl", chosen)
    src = work / "retrieved.jsonl"
    timed(CQ + ["retrieve", "--index", str(index), "--hits", "20", "-q"], stdin=str(work / "chosen.jsonl"),
          stdout=str(src))
    return chosen, src


def portable(text: str) -> str:
    """``text`` without the paths of this machine: the checkout's folder goes (a path under it reads as from the
    repository's root, as the Makefile runs) and the home folder reads ``~``, so the page names no developer's
    checkout or home (a model under $CQ_MODELS, ~/.cache/cqtools/models by default, is ``~/.cache/...``)."""
    for folder, short in ((str(ROOT), "."), (os.path.expanduser("~"), "~")):
        if len(folder) > 1:  # a path, not "/" (a home of "/" names nothing)
            text = re.sub(re.escape(folder) + r"(/|(?![\w.-]))", lambda m: "" if short == "." and m.group(1)
                          else short + m.group(1), text)
    return text
