"""`make bench-scale`: index build and BM25 search at growing corpus sizes, bm25s as the peer.

Corpora above the shared 9,532 passages are SYNTHETIC: the real passages, then passages made by
sentence shuffling (each keeps a random real passage's title and sentence count, its sentences drawn
at random from all real passages; seeded). Term statistics are therefore realistic, topics are not,
so these corpora measure time and memory only, never quality.
Queries: the AmbigNQ dev (light) questions. Each step runs in its own process (peak RSS is its own).
Writes the "Scale" section of docs/benchmarks/retrieve.md (the rest of the file is kept).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import CQ, machine, replace_section, timed  # noqa: E402

MARK = "## Scale (synthetic corpora)"
SENTENCE = re.compile(r"(?<=[.!?])\s+")


def synthetic_corpus(real: Path, size: int, out: Path, seed: int = 13) -> None:
    """The real passages (up to ``size``), then sentence-shuffled ones labelled ``synthetic``."""
    passages = [json.loads(line) for line in open(real)]
    with open(out, "w") as fh:
        for p in passages[:size]:
            fh.write(json.dumps({"id": p["id"], "title": p["title"], "text": p["text"]}) + "\n")
        if size <= len(passages):
            return
        rng = random.Random(seed)
        split = [SENTENCE.split(p["text"]) for p in passages]
        pool = [s for sentences in split for s in sentences]
        for n in range(size - len(passages)):
            source = rng.randrange(len(passages))
            text = " ".join(rng.choice(pool) for _ in split[source])
            fh.write(json.dumps({"id": f"synthetic-{n}", "title": passages[source]["title"], "text": text,
                                 "source": "synthetic"}) + "\n")


def questions(data: Path) -> list[str]:
    return [q["question"] for q in json.load(open(data / "ambignq" / "dev_light.json"))]


def peak_mib() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


PASSES, PASS_BUDGET = 5, 60.0  # up to 5 timed passes each; none after a pass slower than the budget


def more(times: list[float]) -> bool:
    """Same rule for both systems: warm passes until PASSES, or stop once one pass took PASS_BUDGET s."""
    return len(times) < PASSES and not (times and times[-1] > PASS_BUDGET)


def cq_search(index: str, qs: list[str], k: int) -> dict:
    """Child: cq's BM25 searcher. `hits` = ids and scores only (what bm25s returns), from the index's BM25
    matrix when it has one (`cq index` writes one up to 250k passages), else Lucene (``scorer``);
    `passages` = batch_search, i.e. also docstore reads, tie adjustment, ranked dicts."""
    from cqtools.retrieval import open_searcher

    searcher = open_searcher(index, "bm25")
    threads = os.cpu_count()
    out = {"hits": [], "passages": [], "scorer": "lucene" if searcher._matrix is None else "matrix"}  # noqa: SLF001
    while more(out["hits"]):
        start = time.perf_counter()
        searcher._lucene_hits(qs, k, threads)
        out["hits"].append(round(time.perf_counter() - start, 3))
        start = time.perf_counter()
        searcher.batch_search(qs, [str(n) for n in range(len(qs))], k, threads)
        out["passages"].append(round(time.perf_counter() - start, 3))
    out["peak_mib"] = peak_mib()
    return out


def bm25s_search(corpus: str, qs: list[str], k: int) -> dict:
    """Child: bm25s end to end (same k1/b, English stopwords), search timed three times."""
    import bm25s

    start = time.perf_counter()
    texts = []
    with open(corpus) as fh:
        for line in fh:
            d = json.loads(line)
            texts.append(f"{d['title']}\n{d['text']}")
    retriever = bm25s.BM25(k1=0.9, b=0.4)
    retriever.index(bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False)
    del texts
    index_seconds = round(time.perf_counter() - start, 2)
    times = []
    while more(times):
        start = time.perf_counter()
        retriever.retrieve(bm25s.tokenize(qs, stopwords="en", show_progress=False), k=k, show_progress=False,
                           n_threads=os.cpu_count())
        times.append(round(time.perf_counter() - start, 3))
    return {"index_seconds": index_seconds, "search": times, "peak_mib": peak_mib()}


def du_mib(path: Path) -> float:
    return round(sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20, 1)


def child(args, *extra) -> dict:
    out = Path(args.work) / "child.json"
    timed([sys.executable, __file__, "--data", args.data, "--work", args.work, "--k", str(args.k), *extra],
          stdout=str(out))
    return json.loads(out.read_text())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--work", default="work/bench-scale")
    ap.add_argument("--out", default="docs/benchmarks/retrieve.md")
    ap.add_argument("--scale", default="10000,100000,1000000", help="corpus sizes, comma-separated")
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--report-only", action="store_true", help="rewrite the section from work/.../scale.json")
    ap.add_argument("--child", nargs=2, metavar=("KIND", "PATH"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    data, work = Path(args.data), Path(args.work)
    qs = questions(data)
    if args.child:
        kind, path = args.child
        print(json.dumps(cq_search(path, qs, args.k) if kind == "cq" else bm25s_search(path, qs, args.k)))
        return
    work.mkdir(parents=True, exist_ok=True)
    saved = work / "scale.json"  # rows of earlier runs are kept; a size measured again replaces its row
    rows = json.loads(saved.read_text()) if saved.exists() else []
    for size in [] if args.report_only else [int(s) for s in args.scale.split(",")]:
        corpus, index = work / f"corpus-{size}.jsonl", work / f"idx-{size}"
        load = round(os.getloadavg()[0], 1)  # 1-min load average before this size's steps
        t0 = time.perf_counter()
        if not corpus.exists():
            synthetic_corpus(data / "corpus" / "passages.jsonl", size, corpus)
        made = round(time.perf_counter() - t0, 1)
        build = timed(CQ + ["index", "--corpus", str(corpus), "--out", str(index), "--overwrite"])
        ours = child(args, "--child", "cq", str(index))
        peer = child(args, "--child", "bm25s", str(corpus))
        row = {"size": size, "load": load, "corpus_seconds": made, "build": build, "disk_mib": du_mib(index), "cq": ours,
               "bm25s": peer}
        rows = sorted([r for r in rows if r["size"] != size] + [row], key=lambda r: r["size"])
        print(json.dumps(row), file=sys.stderr)
        saved.write_text(json.dumps(rows, indent=1))
    write_report(Path(args.out), rows, len(qs), args)


def write_report(out: Path, rows: list[dict], n: int, args) -> None:
    def qps(times):
        return f"{n / min(times):,.0f}"

    lines = [MARK, "",
             f"Command: `make bench-scale SCALE={','.join(str(r['size']) for r in rows)}` (bench/scale.py, k={args.k}). "
             f"Machine: {machine()},",
             f"no GPU; the 1-min load average before each size is in the table. Date: {time.strftime('%Y-%m-%d')}. Queries: the {n} AmbigNQ dev questions,",
             f"k={args.k}, {os.cpu_count()} threads for both systems; q/s from the best of up to {PASSES} passes in one process (none after a pass over {PASS_BUDGET:.0f} s).",
             "Corpora above 9,532 passages are **synthetic** (the real passages plus sentence-shuffled ones): right for",
             "time and memory, meaningless for quality.", "",
             "| passages | load | cq index s | index peak RSS MiB | index on disk MiB | cq scorer | cq BM25 hits q/s | "
             "cq BM25 passages q/s | cq search peak RSS MiB | bm25s q/s | bm25s index s | bm25s peak RSS MiB | "
             "cq hits / bm25s |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        ratio = min(r["bm25s"]["search"]) / min(r["cq"]["hits"])
        lines.append(f"| {r['size']:,} | {r.get('load', '–')} | {r['build']['seconds']} | {r['build']['peak_mib']} | {r['disk_mib']} | "
                     f"{r['cq'].get('scorer', 'lucene')} | {qps(r['cq']['hits'])} | {qps(r['cq']['passages'])} | {r['cq']['peak_mib']} | "
                     f"{qps(r['bm25s']['search'])} | {r['bm25s']['index_seconds']} | {r['bm25s']['peak_mib']} | "
                     f"{ratio:.2f} |")
    lines += ["", "`hits` = ids and scores only (what bm25s' `retrieve` returns), scored by `cq scorer`: the index's BM25",
              "matrix (numpy, Lucene's exact scores; `cq index` writes one up to 250,000 passages) or Lucene;",
              "`passages` = cq's whole `batch_search` (docstore reads, Anserini's tie adjustment, ranked passage dicts).", ""]
    replace_section(out, MARK, lines, "# Retrieval benchmark")


if __name__ == "__main__":
    main()
