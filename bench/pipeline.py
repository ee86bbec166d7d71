"""`make bench-pipeline`: throughput and peak memory per stage on this machine.

Cheap stages (convert, retrieve bm25, score) at 100 / 1,000 / 10,000 questions (AmbigNQ train,
10,036 questions) — flat peak memory across sizes is what streaming promises. Model stages with
the default (offline) models on a small slice, since they run at a few questions per second on
CPU. Writes docs/benchmarks/pipeline.md.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import CQ, machine, read_jsonl, timed, write_jsonl  # noqa: E402

SIZES = (100, 1000, 10000)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--work", default="work/bench")
    ap.add_argument("--out", default="docs/benchmarks/pipeline.md")
    ap.add_argument("--model-questions", type=int, default=20)
    args = ap.parse_args()
    data, work = Path(args.data), Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    corpus = data / "corpus" / "passages.jsonl"
    index = work / "idx-pipeline"
    if not (index / "cq_index.json").exists():
        timed(CQ + ["index", "--corpus", str(corpus), "--out", str(index), "--overwrite"])
    train = work / "train.jsonl"
    timed(CQ + ["convert", "ambignq", str(data / "ambignq" / "train_light.json")], stdout=str(train))
    rows = []
    for size in SIZES:
        part = work / f"train.{size}.jsonl"
        timed(CQ + ["convert", "ambignq", str(data / "ambignq" / "train_light.json"), "--limit", str(size)],
              stdout=str(part))
        steps = {
            "convert": (CQ + ["convert", "ambignq", str(data / "ambignq" / "train_light.json"), "--limit", str(size)],
                        None, work / "tmp.convert.jsonl"),
            "retrieve bm25 k=100": (CQ + ["retrieve", "--index", str(index), "--hits", "100"], part,
                                    work / f"ret.{size}.jsonl"),
            "score retrieval": (CQ + ["score", "--task", "retrieval"], work / f"ret.{size}.jsonl", None),
            "score ambigqa (simple tok.)": (CQ + ["score", "--task", "ambigqa", "--tokenizer", "simple"],
                                            work / f"ret.{size}.jsonl", None),
        }
        for name, (cmd, stdin, stdout) in steps.items():
            result = timed(cmd, stdin=str(stdin) if stdin else None, stdout=str(stdout) if stdout else None)
            rows.append((name, size, result))
            print(name, size, result, flush=True)

    m = args.model_questions
    small = work / f"ret.model{m}.jsonl"
    write_jsonl(small, read_jsonl(work / "ret.100.jsonl")[:m])
    model_steps = [
        ("rerank (MiniLM-L12 INT8 ONNX, 20 passages/question)", ["rerank", "--top", "5"], small, "rr"),
        ("detect --method llm (SmolLM2-135M)", ["detect", "--method", "llm"], work / "rr.jsonl", "det"),
        ("gen-cq --method llm (SmolLM2-135M)", ["gen-cq", "--method", "llm", "--all"], work / "det.jsonl", "cq"),
        ("answer --mode single (SmolLM2-135M)", ["answer", "--mode", "single"], work / "rr.jsonl", "ans"),
    ]
    model_rows = []
    for name, cmd, stdin, out in model_steps:
        if cmd[0] == "rerank":
            trimmed = work / "rr.in.jsonl"
            write_jsonl(trimmed, [{**r, "passages": r["passages"][:20]} for r in read_jsonl(stdin)])
            stdin = trimmed
        result = timed(CQ + cmd, stdin=str(stdin), stdout=str(work / f"{out}.jsonl"))
        model_rows.append((name, m, result))
        print(name, m, result, flush=True)

    lines = ["# Pipeline throughput and memory", "",
             f"Command: `make bench-pipeline` (bench/pipeline.py). Machine: {machine()}, no GPU. "
             f"Date: {time.strftime('%Y-%m-%d')}.",
             "Each step is its own process: wall time includes Python start-up, imports and (retrieve) the JVM;",
             "peak RSS is that process's own (wait4). Input: the first N AmbigNQ train questions.", "",
             "## Cheap stages at growing input size", "",
             "| stage | N | seconds | questions/s | peak RSS MiB |", "|---|---|---|---|---|"]
    for name, size, r in rows:
        lines.append(f"| {name} | {size} | {r['seconds']} | {size / r['seconds']:.0f} | {r['peak_mib']} |")
    lines += ["", f"## Model stages, default offline models, {m} questions", "",
              "| stage | N | seconds | questions/s | peak RSS MiB |", "|---|---|---|---|---|"]
    for name, size, r in model_rows:
        lines.append(f"| {name} | {size} | {r['seconds']} | {size / r['seconds']:.2f} | {r['peak_mib']} |")
    lines.append("")
    Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
