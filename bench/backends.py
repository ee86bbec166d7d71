"""`make bench-backends`: per-stage throughput of the local backend and the server backend in one run.

The first --questions fixture questions get their passages once (BM25 top 3 from a fixture index
built with `cq index --corpus fixtures/corpus.jsonl`). Each stage (`cq detect --method llm`,
`cq gen-cq --method llm --all`, `cq answer --mode single`) then runs as its own `cq` process
(wall time includes process start and model loading):
- local: SmolLM2-135M-Instruct through transformers on the CPU (HF_HUB_OFFLINE=1, CQ_OFFLINE=1);
- server: the same model's offline GGUF served by llama-cpp-python's OpenAI-compatible server on
  127.0.0.1 (started and stopped here, by the same code as the slow tests in
  tests/test_openai_backend.py), `--model openai:smollm2 --api-base URL` at each --concurrency,
  every run with a fresh, empty CQ_CACHE so no answer comes from the response cache.
Saturation: the concurrency beyond which questions/s stops rising (by more than 5%).
Writes (replaces) the "## Local vs server backend" section of docs/benchmarks/models.md.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import shlex
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import CQ, ROOT, machine, read_jsonl, timed  # noqa: E402

SECTION = "## Local vs server backend"
LOCAL_MODEL = "HuggingFaceTB/SmolLM2-135M-Instruct"
STAGES = {
    "detect": lambda args: ["detect", "--method", "llm"],
    "gen-cq": lambda args: ["gen-cq", "--method", "llm", "--all", "--max-new-tokens", str(args.gen_tokens)],
    "answer": lambda args: ["answer", "--mode", "single", "--max-new-tokens", str(args.answer_tokens)],
}


class LoadSampler(threading.Thread):
    """The 1-minute load average every few seconds while the benchmark runs."""

    def __init__(self, every: float = 2.0):
        super().__init__(daemon=True)
        self.every, self.samples, self.done = every, [], threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            self.samples.append(os.getloadavg()[0])
            self.done.wait(self.every)

    def summary(self) -> str:
        s = self.samples or [os.getloadavg()[0]]
        return f"min {min(s):.2f}, mean {sum(s) / len(s):.2f}, max {max(s):.2f} ({len(s)} samples)"


def llama_server():
    """The slow tests' llama.cpp server fixture, as a plain generator: yields the base URL, stops on close."""
    from tests.test_openai_backend import llama_server as fixture

    wrapped = getattr(fixture, "__pytest_wrapped__", None)  # pytest < 8.4; later: FixtureFunctionDefinition
    return wrapped.obj() if wrapped else fixture._get_wrapped_function()()


def saturation(rates: dict[int, float], tolerance: float = 0.05) -> int:
    """The lowest concurrency after which questions/s no longer rises by more than ``tolerance``."""
    levels = sorted(rates)
    for low, high in zip(levels, levels[1:]):
        if rates[high] <= rates[low] * (1 + tolerance):
            return low
    return levels[-1]


def run_stage(stage: str, args, extra: list[str], inp: Path, out: Path, env: dict) -> dict:
    old = dict(os.environ)
    os.environ.update(env)
    try:
        cmd = [*CQ, *STAGES[stage](args), *extra, "-q"]
        result = timed(cmd, stdin=str(inp), stdout=str(out))
    finally:
        os.environ.clear()
        os.environ.update(old)
    n = len(read_jsonl(out))
    if n != args.questions:
        raise SystemExit(f"{stage}: {n} records out of {args.questions} ({' '.join(cmd)})")
    result["qps"] = round(n / result["seconds"], 3)
    print(f"{stage} {' '.join(extra[:2])} {extra[-1] if extra else ''}: {result}", file=sys.stderr)
    return result


def labels(path: Path) -> list[bool]:
    return [r["ambiguity"]["label"] for r in read_jsonl(path)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--questions", type=int, default=8, help="first N fixture questions (default 8)")
    ap.add_argument("--concurrency", default="1,2,4", help="server backend concurrencies (default 1,2,4)")
    ap.add_argument("--stages", default="detect,gen-cq,answer", help="stages to time (default all three)")
    ap.add_argument("--gen-tokens", type=int, default=24, help="gen-cq --max-new-tokens (default 24)")
    ap.add_argument("--answer-tokens", type=int, default=8, help="answer --max-new-tokens (default 8)")
    ap.add_argument("--budget", type=float, default=0,
                    help="seconds: runs not started by then are reported as not measured (default: no limit)")
    ap.add_argument("--work", type=Path, default=ROOT / "work" / "bench-backends")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks" / "models.md")
    args = ap.parse_args()
    stages = [s for s in args.stages.split(",") if s]
    unknown = set(stages) - set(STAGES)
    if unknown:
        ap.error(f"unknown stages {sorted(unknown)}; choose from {sorted(STAGES)}")
    levels = sorted(int(c) for c in args.concurrency.split(","))
    args.work.mkdir(parents=True, exist_ok=True)
    offline = {"HF_HUB_OFFLINE": "1", "CQ_OFFLINE": "1"}
    os.environ.update(offline)
    started = datetime.datetime.now(datetime.timezone.utc)
    sampler = LoadSampler()
    sampler.start()
    wall = time.perf_counter()

    index = args.work / "index"
    if not (index / "cq_index.json").exists():
        timed([*CQ, "index", "--corpus", str(ROOT / "fixtures" / "corpus.jsonl"), "--out", str(index),
               "--overwrite", "-q"])
    questions = args.work / "questions.jsonl"
    questions.write_text("".join((ROOT / "fixtures" / "questions.jsonl").read_text()
                                 .splitlines(keepends=True)[:args.questions]))
    retrieved = args.work / "retrieved.jsonl"
    timed([*CQ, "retrieve", "--index", str(index), "--method", "bm25", "--hits", "3", "-q"],
          stdin=str(questions), stdout=str(retrieved))

    rows: dict[tuple[str, str], dict] = {}
    deadline = time.monotonic() + args.budget if args.budget else None

    def measure(stage: str, backend: str, extra: list[str], out: Path, env: dict) -> None:
        if deadline and time.monotonic() > deadline:
            print(f"{stage} {backend}: not measured (--budget {args.budget} s spent)", file=sys.stderr)
            return
        rows[(stage, backend)] = run_stage(stage, args, extra, retrieved, out, env)

    server = llama_server()
    url = next(server)
    try:
        for stage in stages:  # stage by stage, so a --budget cut leaves whole stages comparable
            measure(stage, "local", ["--model", LOCAL_MODEL, "--device", "cpu"], args.work / f"local.{stage}.jsonl",
                    {})
            for c in levels:
                cache = tempfile.mkdtemp(prefix=f"cache-c{c}-{stage}-", dir=args.work)
                measure(stage, f"server c={c}",
                        ["--model", "openai:smollm2", "--api-base", url, "--concurrency", str(c)],
                        args.work / f"server-c{c}.{stage}.jsonl", {"CQ_CACHE": cache})
    finally:
        next(server, None)
    wall = time.perf_counter() - wall
    sampler.done.set()
    sampler.join()

    agree = {}
    if "detect" in stages:
        local = labels(args.work / "local.detect.jsonl")
        for c in levels:
            if ("detect", f"server c={c}") not in rows or ("detect", "local") not in rows:
                continue
            server_labels = labels(args.work / f"server-c{c}.detect.jsonl")
            agree[c] = sum(a == b for a, b in zip(local, server_labels))
    sat = {}
    for stage in stages:
        measured = {c: rows[(stage, f"server c={c}")]["qps"] for c in levels if (stage, f"server c={c}") in rows}
        if len(measured) > 1:
            sat[stage] = saturation(measured)
    (args.work / "results.json").write_text(json.dumps(
        {"rows": {f"{k[0]} | {k[1]}": v for k, v in rows.items()}, "saturation": sat, "agree": agree,
         "wall": wall, "load": sampler.samples}, indent=1))
    write_section(args, stages, levels, rows, sat, agree, wall, started, sampler.summary())
    print(f"wrote {args.out}")


def write_section(args, stages, levels, rows, sat, agree, wall, started, load) -> None:
    command = "HF_HUB_OFFLINE=1 CQ_OFFLINE=1 .venv/bin/python bench/backends.py " + " ".join(
        shlex.quote(a) for a in sys.argv[1:])
    lines = [SECTION, "",
             f"Measured {started:%Y-%m-%d %H:%M} UTC on {machine()} (shared with other jobs), by `{command.strip()}`; "
             f"whole run {wall:.0f} s wall; 1-minute load average during the run: {load}.",
             "",
             f"The first {args.questions} fixture questions with their BM25 top 3 passages (fixture index). "
             f"Stages: `cq detect --method llm`, `cq gen-cq --method llm --all --max-new-tokens {args.gen_tokens}`, "
             f"`cq answer --mode single --max-new-tokens {args.answer_tokens}`; each a separate `cq` process, "
             "so seconds include process start and model loading. local: `--model "
             f"{LOCAL_MODEL} --device cpu` (transformers, fp32 dequantised from the offline GGUF); server: "
             "llama-cpp-python's server (`python -m llama_cpp.server`, the offline Q4_1 GGUF, `--n_threads 2`) "
             "on 127.0.0.1, `--model openai:smollm2 --api-base http://127.0.0.1:PORT/v1 --concurrency C`, "
             "each run with a fresh empty CQ_CACHE.",
             "",
             "| stage | backend | seconds | questions/s | ratio to local |",
             "|---|---|---|---|---|"]
    for stage in stages:
        base = rows.get((stage, "local"), {}).get("qps")
        for backend in ["local"] + [f"server c={c}" for c in levels]:
            r = rows.get((stage, backend))
            if r is None:
                lines.append(f"| {stage} | {backend} | not measured (--budget {args.budget:.0f} s spent) | – | – |")
                continue
            ratio = f"{r['qps'] / base:.2f}" if base else "–"
            lines.append(f"| {stage} | {backend} | {r['seconds']:.2f} | {r['qps']:.3f} | {ratio} |")
    lines += ["", "Saturation (the concurrency beyond which the server backend's questions/s rises by 5% or less): "
              + ("; ".join(f"{s} at c={c}" for s, c in sat.items()) or "not measured (fewer than two concurrencies)")
              + "."]
    if agree:
        lines.append("Detect labels equal to the local backend's: "
                     + ", ".join(f"c={c}: {n}/{args.questions}" for c, n in agree.items()) + ".")
    lines += ["", "Two shared CPU cores (load above): the absolute numbers move with other jobs; the ratios "
              "between rows of one run are what counts. llama-cpp-python's server evaluates one request at a "
              "time, so extra concurrency can only overlap the client's HTTP and tokenisation work with it.", ""]
    text = args.out.read_text() if args.out.exists() else ""
    if SECTION in text:
        head, _, rest = text.partition(SECTION)
        nxt = rest.find("\n## ")
        text = head + "\n".join(lines) + (rest[nxt + 1:] if nxt >= 0 else "")
    else:
        text = text.rstrip("\n") + "\n\n" + "\n".join(lines)
    args.out.write_text(text)


if __name__ == "__main__":
    main()
