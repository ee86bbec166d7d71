"""`make bench-chat`: how long a person waits in `cq chat` with the default models on this CPU.

One :class:`cqtools.chat.Session` with `cq chat`'s defaults (hybrid retrieval of 10 passages,
rerank to 3, and the detector, CQ writer and reader `cq chat` picks when given no model; the page
names them from the session built), built once, as `cq chat` builds it. Then, per question (the first ``--n`` AmbigNQ dev questions,
in order), what the person waits for:

  first response  question typed -> the CQ is shown (or, for a question judged unambiguous,
                  its answer);
  answer          option picked (the first one) -> the answer is shown;
  question->answer the two together (the time the person is not typing).

The person's own thinking time is not counted. Writes docs/benchmarks/chat.md (generated).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import CQ, ROOT, machine, portable, read_jsonl  # noqa: E402


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def summary(values: list[float]) -> str:
    return (f"{statistics.median(values):.2f} | {percentile(values, 0.9):.2f} | {max(values):.2f}"
            if values else "– | – | –")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--index", required=True, help="a cq index with a dense part (hybrid is chat's default)")
    ap.add_argument("--work", default="work/bench-chat")
    ap.add_argument("--n", type=int, default=30)
    ap.add_argument("--out", default="docs/benchmarks/chat.md")
    args = ap.parse_args()
    os.environ.setdefault("CQ_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from cqtools.chat import ChatOptions, Session, options_of

    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    questions = work / "questions.jsonl"
    with open(questions, "wb") as fh:
        subprocess.run(CQ + ["convert", "ambignq", str(Path(args.data) / "ambignq" / "dev_light.json"),
                             "--limit", str(args.n)], stdout=fh, check=True, cwd=ROOT)
    load = os.getloadavg()[0]
    start = time.perf_counter()
    session = Session(ChatOptions(index_dir=args.index))
    startup = time.perf_counter() - start
    reader = session.answer_selected.keywords["info"]  # meta.answer of every answered turn
    opts = session.opts  # the options the session was built with (its defaults filled in)
    turns = []
    for record in read_jsonl(questions):
        start = time.perf_counter()
        asked = session.ask({"id": record["id"], "question": record["question"]})
        first = time.perf_counter() - start
        options = options_of(asked)
        start = time.perf_counter()
        session.answer(asked, "option", options[0]) if options else session.answer(asked, "direct")
        turns.append({"first": first, "answer": time.perf_counter() - start, "asked": bool(options)})
        print(turns[-1], file=sys.stderr, flush=True)
    asked = [t for t in turns if t["asked"]]
    direct = [t for t in turns if not t["asked"]]
    lines = ["# `cq chat` latency", "",
             f"Command: `make bench-chat` (bench/chat.py, --n {args.n}). Machine: {machine()}, no GPU; 1-min load "
             f"average at the start {load:.1f}" + (" (a shared machine: every number here is slower than on a quiet "
                                                  "one)" if load > 1.5 else "") + f". Date: {time.strftime('%Y-%m-%d')}.",
             f"Index: {args.index}. `cq chat`'s defaults: {opts.retrieve} retrieval ({opts.hits} passages), rerank "
             f"to {opts.rerank_top} (MiniLM-L12 INT8 ONNX), the {opts.detect} detector, the {opts.gen_cq} CQ "
             f"writer, and `cq answer`'s default reader, here the {reader['reader']} one "
             f"({portable(reader['model'])}; $CQ_MODELS={portable(os.environ.get('CQ_MODELS', 'unset'))}).",
             f"Questions: the first {args.n} AmbigNQ dev questions, in order; for a CQ the person picks its first "
             "option. Seconds; the person's own time is not counted.", "",
             f"Session start (index opened, models loaded, once): **{startup:.1f} s**.", "",
             "| turns | n | first response: median | p90 | max | answer after the pick: median | p90 | max "
             "| question to answer: median | p90 | max |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, group in (("all", turns), ("CQ asked", asked), ("answered directly", direct)):
        lines.append(f"| {name} | {len(group)} | {summary([t['first'] for t in group])} | "
                     f"{summary([t['answer'] for t in group])} | "
                     f"{summary([t['first'] + t['answer'] for t in group])} |")
    lines += ["", f"The first turn (caches cold): first response {turns[0]['first']:.2f} s, answer "
              f"{turns[0]['answer']:.2f} s." if turns else "", ""]
    Path(args.out).write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
