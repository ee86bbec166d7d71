"""`make bench-bm25-process`: BM25 as a user runs it, one whole process each, cq against bm25s.

Both read the same questions JSONL (AmbigNQ train, 10,036 questions, `cq convert`) on stdin and write
every record with its top k=100 passages ``{id, title, text, score, rank}`` as JSONL to a file: process
start, imports, the JVM (cq), reading the corpus and building the in-memory index (bm25s; cq opens the
index `cq index` built before, untimed), searching, writing. Runs alternate (cq, bm25s, cq, ...), so a
change in the machine's load hits both; the 1-min load average before each run is in the report.
The bm25s side: same k1/b as cq, English stopwords, all CPU threads, orjson for its output.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import CQ, machine, timed  # noqa: E402

START, END = "<!-- bm25-process: start -->", "<!-- bm25-process: end -->"


def peer(corpus: str, k: int, chunk: int = 1000) -> None:
    """Child: bm25s end to end, questions on stdin, records with passages on stdout."""
    import bm25s
    import orjson

    with open(corpus, "rb") as fh:
        docs = [orjson.loads(line) for line in fh if line.strip()]
    retriever = bm25s.BM25(k1=0.9, b=0.4)
    retriever.index(bm25s.tokenize([f"{d['title']}\n{d['text']}" for d in docs], stopwords="en",
                                   show_progress=False), show_progress=False)
    answer_stdin(retriever, docs, k, chunk)


def answer_stdin(retriever, docs: list[dict], k: int, chunk: int = 1000) -> None:
    """bm25s ``retriever`` answers the questions on stdin: records with their top ``k`` passages ``{id, title,
    text, score, rank}`` (cq's shape) on stdout, ``chunk`` questions at a time."""
    import bm25s
    import orjson

    out = sys.stdout.buffer
    lines = iter(sys.stdin.buffer)
    while True:
        records = [orjson.loads(line) for _, line in zip(range(chunk), lines)]
        if not records:
            break
        tokens = bm25s.tokenize([r["question"] for r in records], stopwords="en", show_progress=False)
        ids, scores = retriever.retrieve(tokens, k=k, show_progress=False, n_threads=os.cpu_count())
        for record, row, row_scores in zip(records, ids.tolist(), scores.tolist()):
            record["passages"] = [{"id": docs[j]["id"], "title": docs[j]["title"], "text": docs[j]["text"],
                                   "score": s, "rank": rank} for rank, (j, s) in enumerate(zip(row, row_scores), 1)]
            out.write(orjson.dumps(record) + b"\n")


def phases(index: Path, questions: Path, k: int, scorer: str = "auto", batch: int = 32) -> None:
    """Where cq's time goes, in one process: CPU seconds of each step of `cq retrieve`'s BM25 path over
    the questions (the steps of LuceneBM25.batch_search, then the JSONL line), printed as a table.
    ``scorer``: cq retrieve's --bm25-scorer (auto: the index's BM25 matrix when it has one)."""
    start = time.process_time()
    import orjson

    from cqtools.jsonl import dumps
    from cqtools.retrieval import open_searcher
    from cqtools.retrieval.ranking import ranked_passages, tie_scores_rows

    searcher = open_searcher(str(index), "bm25", bm25_scorer=scorer)
    spent = {"start (imports, JVM, open index)": time.process_time() - start}
    records = [orjson.loads(line) for line in open(questions, "rb")]
    threads = os.cpu_count()
    with open(os.devnull, "wb") as out:
        for n in range(0, len(records), batch):
            part, clock = records[n:n + batch], time.process_time()

            def step(name: str) -> None:
                nonlocal clock
                now = time.process_time()
                spent[name] = spent.get(name, 0.0) + now - clock
                clock = now
            # not searched ahead here (cq retrieve's prefetch), so that the search has its own line
            scored = searcher._lucene_arrays([r["question"] for r in part], k, threads)  # noqa: SLF001 (its steps)
            step("BM25 matrix (analysis in the JVM, scores in numpy)" if searcher._matrix is not None  # noqa: SLF001
                 else "Lucene search (JVM, all threads; hits text parsed)")
            docs = searcher.docstore.by_docnums(sorted({num for nums, _ in scored for num in nums}))
            step("passage store reads")
            ties = tie_scores_rows([scores[:k] for _, scores in scored])
            step("Anserini's tie scores (the batch at once)")
            for record, (nums, scores), row in zip(part, scored, ties):
                record["passages"] = ranked_passages(nums, scores, docs, k, row)
            step("Anserini's order, one dict per passage")
            out.write(b"".join(dumps(record) for record in part))
            step("JSON lines (orjson)")
    print(f"| step | CPU s ({len(records):,} questions, k={k}) |\n|---|---|")
    for name, seconds in spent.items():
        print(f"| {name} | {seconds:.2f} |")
    print(f"| total | {sum(spent.values()):.2f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--phases", action="store_true", help="print where cq's CPU time goes, step by step, and stop")
    ap.add_argument("--scorer", default="auto", choices=("auto", "lucene", "matrix"), help="--phases: cq's --bm25-scorer")
    ap.add_argument("--peer", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.peer:
        return peer(args.peer, args.k)
    corpus = args.data / "corpus" / "passages.jsonl"
    args.work.mkdir(parents=True, exist_ok=True)
    questions, index = args.work / "train.jsonl", args.work / "index"
    if not questions.exists():
        timed(CQ + ["convert", "ambignq", str(args.data / "ambignq" / "train_light.json"), "-o", str(questions)])
    if not (index / "cq_index.json").exists():
        timed(CQ + ["index", "--corpus", str(corpus), "--out", str(index), "--overwrite", "-q"])
    if args.phases:
        return phases(index, questions, args.k, args.scorer)
    commands = {"cq retrieve": CQ + ["retrieve", "--index", str(index), "--method", "bm25", "--hits", str(args.k), "-q"],
                "bm25s": [sys.executable, __file__, "--data", str(args.data), "--work", str(args.work),
                          "--k", str(args.k), "--peer", str(corpus)]}
    runs = {name: [] for name in commands}
    for _ in range(args.runs):
        for name, cmd in commands.items():
            load = os.getloadavg()[0]
            out = args.work / f"out.{name.split()[0]}.jsonl"
            result = timed(cmd, stdin=str(questions), stdout=str(out))
            runs[name].append({**result, "load": round(load, 1), "mib_out": round(out.stat().st_size / 2**20)})
            print(name, runs[name][-1], file=sys.stderr)
            time.sleep(1)
    n = sum(1 for _ in open(questions))
    report = render(runs, n, args)
    print(report)
    if args.out:
        text = args.out.read_text()
        before, _, rest = text.partition(START)
        after = rest.partition(END)[2] if rest else "\n"
        args.out.write_text(before.rstrip("\n") + "\n\n" + report + after)


def render(runs: dict, n: int, args) -> str:
    lines = [START, "## BM25, whole process: cq retrieve against bm25s", "",
             f"Command: `make bench-bm25-process` (bench/bm25_process.py, {args.runs} alternating runs each). "
             f"Machine: {machine()}, no GPU. Date: {date.today()}. {n:,} AmbigNQ train questions, k={args.k}, "
             "the shared 9.5k-passage corpus; one process each from start to end, JSONL in and out "
             "(cq: JVM start and opening its prebuilt index included; bm25s: reading the corpus and building its "
             "index included). CPU = user + system seconds of the process, all threads (steadier than wall time on a "
             "shared machine). Load = 1-min load average before the run (2 cores; other work was running).", "",
             "| run | cq retrieve s | CPU s | load | bm25s s | CPU s | load | cq / bm25s time | CPU |",
             "|---|---|---|---|---|---|---|---|---|"]
    for i, (ours, theirs) in enumerate(zip(runs["cq retrieve"], runs["bm25s"]), 1):
        lines.append(f"| {i} | {ours['seconds']} | {ours['cpu_s']} | {ours['load']} | {theirs['seconds']} | "
                     f"{theirs['cpu_s']} | {theirs['load']} | {ours['seconds'] / theirs['seconds']:.2f} | "
                     f"{ours['cpu_s'] / theirs['cpu_s']:.2f} |")
    med = {name: statistics.median(r["seconds"] for r in rs) for name, rs in runs.items()}
    cpu = {name: statistics.median(r["cpu_s"] for r in rs) for name, rs in runs.items()}
    lines += [f"| median | {med['cq retrieve']} | {cpu['cq retrieve']} | | {med['bm25s']} | {cpu['bm25s']} | | "
              f"{med['cq retrieve'] / med['bm25s']:.2f} | {cpu['cq retrieve'] / cpu['bm25s']:.2f} |", "",
              f"Peak RSS: cq {max(r['peak_mib'] for r in runs['cq retrieve'])} MiB, bm25s "
              f"{max(r['peak_mib'] for r in runs['bm25s'])} MiB. Output: cq {runs['cq retrieve'][0]['mib_out']} MiB "
              f"(with each record's `meta`), bm25s {runs['bm25s'][0]['mib_out']} MiB.", END]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
