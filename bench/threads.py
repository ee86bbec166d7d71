"""`make bench-threads`: the model stages with idle threads spinning and sleeping.

`cq` starts with OMP_WAIT_POLICY=PASSIVE (torch's and faiss's OpenMP threads) and onnxruntime
sessions without spinning, unless the user set otherwise. This runs the model stages of the
pipeline (rerank -> detect llm -> gen-cq llm -> answer cq) on the same questions with this checkout
under both policies:

  spin   OMP_WAIT_POLICY=ACTIVE CQ_ORT_SPIN=1 (idle threads spin: what cq did before cfd2cd4, and
         what a user gets by setting them)
  sleep  cq's default (idle threads sleep)

each one

  alone     one stage at a time, each its own process (wall time per stage, summed), and
  pipeline  the four stages as one shell pipeline, all processes running at once (how users run them),

back to back in one run on this machine, and checks the two policies write the same records
(``meta`` aside). The load average before each run is in the table. Then one SmolLM2 decode step
(48 steps after a 300-token prompt, model loaded first) under each policy, on free cores and beside
one and two busy processes (pure-Python loops): what a stage meets when other work shares its
cores. Writes docs/benchmarks/threads.md.
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

from bench.common import CQ, ROOT, ambiguous_retrieved, env_for, machine, same_records  # noqa: E402

STAGES = [("rerank", ["rerank", "--top", "5"]), ("detect llm", ["detect", "--method", "llm"]),
          ("gen-cq llm", ["gen-cq", "--method", "llm"]), ("answer cq", ["answer", "--mode", "cq"])]


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


BUSY = [sys.executable, "-c", "while True: pass"]
DECODE_POLICIES = [("spin", {"OMP_WAIT_POLICY": "ACTIVE"}), ("sleep (default)", {"OMP_WAIT_POLICY": "PASSIVE"}),
                   ("one thread", {"OMP_WAIT_POLICY": "PASSIVE", "OMP_NUM_THREADS": "1"})]


def decode_child() -> None:
    """Print the milliseconds of one greedy decode step of the offline SmolLM2 (after a 300-token prompt)."""
    import torch

    from cqtools.models.load import load_generator

    model = load_generator("HuggingFaceTB/SmolLM2-135M-Instruct", "cpu").model
    ids = torch.arange(300)[None] * 13 % 20000 + 100
    with torch.inference_mode():
        past = model(ids, use_cache=True).past_key_values
        step = ids[:, -1:]
        start = time.perf_counter()
        for _ in range(48):
            past = model(step, past_key_values=past, use_cache=True).past_key_values
    print(f"{(time.perf_counter() - start) / 48 * 1000:.1f}")


def decode_table() -> list[str]:
    lines = ["One SmolLM2 decode step (ms), free cores and beside busy processes:", "",
             "| threads | free cores | 1 busy process | 2 busy processes |", "|---|---|---|---|"]
    cells: dict[str, list[str]] = {label: [] for label, _ in DECODE_POLICIES}
    for busy in range(3):
        loops: list[subprocess.Popen] = []
        try:
            loops += [subprocess.Popen(BUSY) for _ in range(busy)]
            for label, extra in DECODE_POLICIES:
                env = env_for(**extra)
                if "OMP_NUM_THREADS" not in extra:  # torch's own default, not the caller's setting
                    env.pop("OMP_NUM_THREADS", None)
                out = subprocess.run([sys.executable, __file__, "--decode-child"], env=env, cwd=ROOT,
                                     capture_output=True, text=True)
                cells[label].append(out.stdout.strip().splitlines()[-1] if out.returncode == 0 else "failed")
        finally:
            for loop in loops:
                loop.kill()
                loop.wait()
    return lines + [f"| {label} | " + " | ".join(values) + " |" for label, values in cells.items()] + [""]


def main() -> None:
    if "--decode-child" in sys.argv:
        return decode_child()
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--work", default="work/bench-threads")
    ap.add_argument("--n", type=int, default=4, help="ambiguous covered AmbigNQ dev questions")
    ap.add_argument("--out", default="docs/benchmarks/threads.md")
    args = ap.parse_args()
    work = Path(args.work).resolve()
    work.mkdir(parents=True, exist_ok=True)
    chosen, src = ambiguous_retrieved(Path(args.data), work, args.n)
    versions = [("spin", env_for(OMP_WAIT_POLICY="ACTIVE", CQ_ORT_SPIN="1"), "spin"), ("sleep (default)", env_for(), "sleep")]
    rows, outputs = [], {}
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

    n = len(chosen)
    base = {cond: total for label, cond, _, _, total in rows if label == "spin"}
    lines = ["# Idle threads: spinning or sleeping", "",
             f"`make bench-threads` on {time.strftime('%Y-%m-%d')} ({machine()}); generated by bench/threads.py.",
             f"{n} ambiguous covered AmbigNQ dev questions, BM25 top 20 over ../shared/data/corpus; default offline",
             "models of this checkout. `spin`: OMP_WAIT_POLICY=ACTIVE CQ_ORT_SPIN=1 (idle OpenMP and onnxruntime",
             "threads spin); `sleep`: cq's default (OMP_WAIT_POLICY=PASSIVE, onnxruntime without spinning).",
             "Load = 1-minute load average when the run started; the runs went back to back.", "",
             "| threads | run | load | " + " | ".join(f"{name} s" for name, _ in STAGES) + " | total s | s/question | speed-up |",
             "|---|---|---|" + "---|" * len(STAGES) + "---|---|---|"]
    for label, cond, load, seconds, total in rows:
        per_stage = " | ".join(f"{s:.1f}" for s in seconds) if seconds else " | ".join("–" for _ in STAGES)
        lines.append(f"| {label} | {cond} | {load:.1f} | {per_stage} | {total:.1f} | {total / n:.1f} | "
                     f"{base[cond] / total:.2f}x |")
    lines += ["", "Same records under both policies (meta aside): "
              + ", ".join(f"{cond}: {'yes' if same_records(outputs[('spin', cond)], outputs[('sleep', cond)]) else 'NO'}"
                          for cond in ("alone", "pipeline")), ""]
    lines += decode_table()
    Path(args.out).write_text("\n".join(lines) + "\n")
    print(json.dumps([{"threads": r[0], "run": r[1], "load": r[2], "total_s": r[4]} for r in rows]))


if __name__ == "__main__":
    main()
