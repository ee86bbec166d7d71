"""`make bench-threads`: the model stages before and after cq made idle threads sleep.

`cq` now starts with OMP_WAIT_POLICY=PASSIVE (torch's and faiss's OpenMP threads) and onnxruntime
sessions without spinning, unless the user set otherwise. This runs the model stages of the
pipeline (rerank -> detect llm -> gen-cq llm -> answer cq) on the same questions with the code of
``--before`` (a git revision, checked out into a temporary worktree and run with PYTHONPATH) and
with this checkout, each version

  alone     one stage at a time, each its own process (wall time per stage, summed), and
  pipeline  the four stages as one shell pipeline, all processes running at once (how users run them),

back to back in one run on this machine, and checks the two versions write the same records
(``meta`` aside). The machine may be busy with other work: the load average before each run is
in the table, and both versions see the same conditions in turn. Writes docs/benchmarks/threads.md.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import CQ, ROOT, machine, read_jsonl, timed, write_jsonl  # noqa: E402

STAGES = [("rerank", ["rerank", "--top", "5"]), ("detect llm", ["detect", "--method", "llm"]),
          ("gen-cq llm", ["gen-cq", "--method", "llm"]), ("answer cq", ["answer", "--mode", "cq"])]


def env_for(code_dir: Path | None) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "CQ_ORT_SPIN")}
    env.update(CQ_OFFLINE="1", HF_HUB_OFFLINE="1")
    if code_dir is not None:
        env["PYTHONPATH"] = str(code_dir)
    return env


def run_alone(env: dict, src: Path, work: Path, tag: str) -> tuple[list[float], Path]:
    seconds, current = [], src
    for name, args in STAGES:
        out = work / f"{tag}.{name.replace(' ', '_')}.jsonl"
        start = time.perf_counter()
        with open(current, "rb") as fin, open(out, "wb") as fout:
            subprocess.run(CQ + args + ["-q"], stdin=fin, stdout=fout, env=env, cwd=ROOT, check=True)
        seconds.append(time.perf_counter() - start)
        current = out
    return seconds, current


def run_pipeline(env: dict, src: Path, work: Path, tag: str) -> tuple[float, Path]:
    out = work / f"{tag}.pipeline.jsonl"
    cq = " ".join(map(shlex.quote, CQ))
    stages = [f"{cq} {' '.join(args)} -q" for _, args in STAGES]
    stages[0] += f" < {shlex.quote(str(src))}"
    line = " | ".join(stages) + f" > {shlex.quote(str(out))}"
    start = time.perf_counter()
    subprocess.run(["bash", "-o", "pipefail", "-c", line], env=env, cwd=ROOT, check=True)
    return time.perf_counter() - start, out


def same_records(a: Path, b: Path) -> bool:
    strip = lambda r: {k: v for k, v in r.items() if k != "meta"}  # noqa: E731
    return [strip(r) for r in read_jsonl(a)] == [strip(r) for r in read_jsonl(b)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--work", default="work/bench-threads")
    ap.add_argument("--before", required=True, help="git revision of the code to compare with")
    ap.add_argument("--n", type=int, default=4, help="ambiguous covered AmbigNQ dev questions")
    ap.add_argument("--out", default="docs/benchmarks/threads.md")
    args = ap.parse_args()
    data, work = Path(args.data), Path(args.work).resolve()
    work.mkdir(parents=True, exist_ok=True)
    index = work / "index"
    if not (index / "cq_index.json").exists():
        timed(CQ + ["convert", "passages", str(data / "corpus/passages.jsonl")], stdout=str(work / "corpus.jsonl"))
        timed(CQ + ["index", "--corpus", str(work / "corpus.jsonl"), "--out", str(index), "--overwrite", "-q"])
    covered = {r["source_qid"] for r in read_jsonl(data / "corpus/passages.jsonl")}
    questions = work / "dev.jsonl"
    timed(CQ + ["convert", "ambignq", str(data / "ambignq/dev_light.json")], stdout=str(questions))
    chosen = [r for r in read_jsonl(questions) if r["id"] in covered and r["gold"]["ambiguous"]][:args.n]
    write_jsonl(work / "chosen.jsonl", chosen)
    src = work / "retrieved.jsonl"
    timed(CQ + ["retrieve", "--index", str(index), "--hits", "20", "-q"], stdin=str(work / "chosen.jsonl"),
          stdout=str(src))

    before_dir = work / "before"
    subprocess.run(["git", "worktree", "remove", "--force", str(before_dir)], cwd=ROOT, capture_output=True)
    subprocess.run(["git", "worktree", "add", "--detach", str(before_dir), args.before], cwd=ROOT, check=True,
                   capture_output=True)
    rev = subprocess.run(["git", "rev-parse", "--short", args.before], cwd=ROOT, check=True, capture_output=True,
                         text=True).stdout.strip()
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, check=True, capture_output=True,
                          text=True).stdout.strip()
    versions = [(f"before ({rev})", env_for(before_dir), "before"), (f"after ({head})", env_for(None), "after")]
    rows, outputs = [], {}
    try:
        for label, env, tag in versions:
            load = os.getloadavg()[0]
            seconds, out = run_alone(env, src, work, tag)
            outputs[(tag, "alone")] = out
            rows.append((label, "alone", load, seconds, sum(seconds)))
        for label, env, tag in versions:
            load = os.getloadavg()[0]
            total, out = run_pipeline(env, src, work, tag)
            outputs[(tag, "pipeline")] = out
            rows.append((label, "pipeline", load, None, total))
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(before_dir)], cwd=ROOT, capture_output=True)

    n = len(chosen)
    base = {cond: total for label, cond, _, _, total in rows if label.startswith("before")}
    lines = ["# Idle threads sleep: the model stages before and after", "",
             f"`make bench-threads` on {time.strftime('%Y-%m-%d')} ({machine()}); generated by bench/threads.py.",
             f"{n} ambiguous covered AmbigNQ dev questions, BM25 top 20 over ../shared/data/corpus; default offline",
             "models (MiniLM-L12 INT8 reranker, SmolLM2-135M). `before` is the code at that revision (a git",
             "worktree), `after` this checkout, which starts every cq process with OMP_WAIT_POLICY=PASSIVE and",
             "onnxruntime without spinning. Load = 1-minute load average when the run started (other work was",
             "running on this machine; both versions ran back to back under it).", "",
             "| code | run | load | " + " | ".join(f"{name} s" for name, _ in STAGES) + " | total s | s/question | speed-up |",
             "|---|---|---|" + "---|" * len(STAGES) + "---|---|---|"]
    for label, cond, load, seconds, total in rows:
        per_stage = " | ".join(f"{s:.1f}" for s in seconds) if seconds else " | ".join("–" for _ in STAGES)
        lines.append(f"| {label} | {cond} | {load:.1f} | {per_stage} | {total:.1f} | {total / n:.1f} | "
                     f"{base[cond] / total:.2f}x |")
    lines += ["", "Same records from both versions (meta aside): "
              + ", ".join(f"{cond}: {'yes' if same_records(outputs[('before', cond)], outputs[('after', cond)]) else 'NO'}"
                          for cond in ("alone", "pipeline")), ""]
    Path(args.out).write_text("\n".join(lines) + "\n")
    print(json.dumps([{"code": r[0], "run": r[1], "load": r[2], "total_s": r[4]} for r in rows]))


if __name__ == "__main__":
    main()
