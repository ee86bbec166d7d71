"""`make bench-speed`: the model stages per question, today's code against the code before issue 11.

Issue 11 asks the model stages to get faster per question, measured against the code it was filed
on, in one run on the same machine. This runs each model stage of the pipeline alone (its own
process, wall time, default models of that code) on the same questions with the code of
``--before`` (a git worktree, started there so its own cqtools is imported) and with this checkout,
back to back, and this checkout again with idle threads spinning (as ``before`` did):

  rerank --top 5            MiniLM-L12 INT8 cross-encoder over BM25 top 20
  detect --method llm       SmolLM2-135M few-shot detector
  gen-cq --method llm       SmolLM2-135M CQ writer
  answer --mode cq          the default reader: SmolLM2 before; the extractive reader after when
                            `make models` installed one in $CQ_MODELS (else SmolLM2 again)
  answer --mode cq, LM      after only: ``--reader generative``, the same model as before
  disambiguate tree+prune   Tree of Clarifications (rac --tree --prune), SmolLM2-135M
  ... padded batches        after only: the same with CQ_PADDED_BATCHES=1

Each stage reads the output of the same version's stage before it (disambiguate reads rerank's).
A stage's records are compared between versions (``meta`` aside): a difference is expected only
where the default model changed. Writes docs/benchmarks/speed.md.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import CQ, ROOT, ambiguous_retrieved, code_cwd, env_for, machine, same_records  # noqa: E402

# (name, arguments, input stage or None for the retrieved questions, the stage of `before` it is timed
# against, extra environment): a stage compared with another runs in this checkout only
STAGES = [
    ("rerank", ["rerank", "--top", "5"], None, "rerank", {}),
    ("detect llm", ["detect", "--method", "llm"], "rerank", "detect llm", {}),
    ("gen-cq llm", ["gen-cq", "--method", "llm"], "detect llm", "gen-cq llm", {}),
    ("answer cq (default reader)", ["answer", "--mode", "cq"], "gen-cq llm", "answer cq (default reader)", {}),
    ("answer cq (SmolLM2 reader)", ["answer", "--mode", "cq", "--reader", "generative"], "gen-cq llm",
     "answer cq (default reader)", {}),
    ("disambiguate tree+prune", ["disambiguate", "--method", "rac", "--tree", "--prune"], "rerank",
     "disambiguate tree+prune", {}),
    ("disambiguate tree+prune, padded batches", ["disambiguate", "--method", "rac", "--tree", "--prune"], "rerank",
     "disambiguate tree+prune", {"CQ_PADDED_BATCHES": "1"}),
]
NOTES = "## What these numbers say"
TOTAL = ("rerank", "detect llm", "gen-cq llm", "answer cq (default reader)", "disambiguate tree+prune")


def slug(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name)


def run(env: dict, cwd: Path, src: Path, work: Path, tag: str) -> dict[str, tuple[float, Path]]:
    done: dict[str, tuple[float, Path]] = {}
    for name, args, source, compared, extra in STAGES:
        if tag == "before" and compared != name:
            continue
        out = work / f"{tag}.{slug(name)}.jsonl"
        current = src if source is None else done[source][1]
        start = time.perf_counter()
        with open(current, "rb") as fin, open(out, "wb") as fout:
            subprocess.run(CQ + args + ["-q"], stdin=fin, stdout=fout, env={**env, **extra}, cwd=cwd, check=True)
        done[name] = (time.perf_counter() - start, out)
    return done


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--work", default="work/bench-speed")
    ap.add_argument("--before", required=True, help="git revision of the code to compare with")
    ap.add_argument("--n", type=int, default=5, help="ambiguous covered AmbigNQ dev questions")
    ap.add_argument("--out", default="docs/benchmarks/speed.md")
    args = ap.parse_args()
    data, work = Path(args.data), Path(args.work).resolve()
    work.mkdir(parents=True, exist_ok=True)
    chosen, src = ambiguous_retrieved(data, work, args.n)

    before_dir = work / "before"
    git = lambda *a: subprocess.run(["git", *a], cwd=ROOT, check=True, capture_output=True, text=True).stdout.strip()  # noqa: E731
    subprocess.run(["git", "worktree", "remove", "--force", str(before_dir)], cwd=ROOT, capture_output=True)
    git("worktree", "add", "--detach", str(before_dir), args.before)
    rev, head = git("rev-parse", "--short", args.before), git("rev-parse", "--short", "HEAD")
    loads, results = {}, {}
    try:
        spin = {"OMP_WAIT_POLICY": "ACTIVE", "CQ_ORT_SPIN": "1"}
        for tag, code, extra in (("before", before_dir, {}), ("after", None, {}), ("spin", None, spin)):
            cwd = code_cwd(code)
            loads[tag] = os.getloadavg()[0]
            results[tag] = run(env_for(code, **extra), cwd, src, work, tag)
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(before_dir)], cwd=ROOT, capture_output=True)

    n = len(chosen)
    reader = ("the one `make models` installed in $CQ_MODELS"
              if (Path(os.environ.get("CQ_MODELS", "")) / "reader" / "config.json").exists()
              else "the shipped one (cqtools/shipped/reader; none installed in $CQ_MODELS)")
    lines = ["# Model stages per question: before and after issue 11", "",
             f"`make bench-speed` on {time.strftime('%Y-%m-%d')} ({machine()}); generated by bench/speed.py.",
             f"{n} ambiguous covered AmbigNQ dev questions, BM25 top 20 over ../shared/data/corpus; each stage",
             "alone (its own process: start-up and model load included), default models of each version.",
             f"`before` is the code at {rev} (a git worktree; its OpenMP and onnxruntime threads spin while idle),",
             f"`after` this checkout ({head}; idle threads sleep, the default since cfd2cd4), `after, spinning` this",
             "checkout with OMP_WAIT_POLICY=ACTIVE CQ_ORT_SPIN=1 (threads spin, as before). The default reader",
             f"after: {reader}. Seconds per question; speed-up = before / after.", "",
             "| stage | before | after | after, spinning | speed-up | speed-up, spinning | same records |",
             "|---|---|---|---|---|---|---|"]
    for name, _, _, compared, _ in STAGES:
        after, spun = results["after"][name], results["spin"][name]
        before = results["before"][compared]
        same = same_records(before[1], after[1]) and same_records(after[1], spun[1])
        lines.append(f"| {name} | {before[0] / n:.1f} | {after[0] / n:.1f} | {spun[0] / n:.1f} | "
                     f"{before[0] / after[0]:.2f}x | {before[0] / spun[0]:.2f}x | {'yes' if same else 'no'} |")
    total = {tag: sum(results[tag][s][0] for s in TOTAL) for tag in results}
    lines += [f"| **all default stages** | {total['before'] / n:.1f} | {total['after'] / n:.1f} | "
              f"{total['spin'] / n:.1f} | {total['before'] / total['after']:.2f}x | "
              f"{total['before'] / total['spin']:.2f}x | |", "",
              "Load (1-minute average) when each run started: "
              + ", ".join(f"{tag} {load:.1f}" for tag, load in loads.items())
              + (" (above the core count: a shared machine, slower than a quiet one)"
                 if max(loads.values()) > (os.cpu_count() or 1) else "")
              + ". `answer cq (SmolLM2 reader)` runs only in this checkout and is timed against before's",
              "default (SmolLM2) answer: the same model both sides, on CQs that differ (gen-cq's options changed).",
              "`padded batches` (CQ_PADDED_BATCHES=1) batches the prompts of one call with padding: faster, and",
              "within tolerance of each input alone rather than equal to it (its records may differ).", ""]
    out = Path(args.out)
    notes = out.read_text().split(NOTES, 1) if out.exists() else []
    tail = NOTES + notes[1] if len(notes) == 2 else ""  # the hand-written notes survive a regeneration
    out.write_text("\n".join(lines) + "\n" + tail)
    print(json.dumps({tag: {s: round(v[0], 2) for s, v in results[tag].items()} for tag in results}))


if __name__ == "__main__":
    main()
