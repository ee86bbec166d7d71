"""`make bench-retrieve`: BM25 / dense / hybrid over the shared corpus, with bm25s as the peer.

Questions: AmbigNQ dev (light) questions that have passages in ../shared/data/corpus (chosen by
the corpus's ``source_qid``, which only this benchmark's selection reads, never a system).
Writes docs/benchmarks/retrieve.md.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import CQ, machine, read_jsonl, timed, write_jsonl  # noqa: E402
from bench.scale import more  # noqa: E402  (the same passes for both systems as in the scale table)
from cqtools.metrics.retrieval import answer_coverage  # noqa: E402

KS = (5, 10, 20, 100)


def select_questions(data: Path, work: Path) -> Path:
    qids = {json.loads(line)["source_qid"] for line in open(data / "corpus" / "passages.jsonl")}
    out = work / "questions.jsonl"
    records = read_jsonl_from_cq(["convert", "ambignq", str(data / "ambignq" / "dev_light.json")], work)
    write_jsonl(out, [r for r in records if r["id"] in qids])
    return out


def read_jsonl_from_cq(args, work: Path) -> list[dict]:
    tmp = work / "converted.jsonl"
    timed(CQ + args, stdout=str(tmp))
    return read_jsonl(tmp)


def coverage(records: list[dict]) -> dict[int, float]:
    totals = {k: 0.0 for k in KS}
    clusters = 0
    for record in records:
        n = len(record["gold"]["answers"])
        for k, value in answer_coverage(record["gold"]["answers"], record["passages"], KS).items():
            totals[k] += value * n
        clusters += n
    return {k: 100 * totals[k] / clusters for k in KS}


def bm25s_peer(corpus: Path, questions: Path, out: Path) -> dict:
    """bm25s end to end (load, tokenize, index, retrieve), same k1/b as ours, English stopwords."""
    import bm25s

    t0 = time.perf_counter()
    docs = read_jsonl(corpus)
    texts = [f"{d['title']}\n{d['text']}" for d in docs]
    retriever = bm25s.BM25(k1=0.9, b=0.4)
    retriever.index(bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False)
    t1 = time.perf_counter()
    qs = read_jsonl(questions)
    times = []
    while more(times):
        t2 = time.perf_counter()
        ids, scores = retriever.retrieve(bm25s.tokenize([q["question"] for q in qs], stopwords="en",
                                                        show_progress=False),
                                         k=100, show_progress=False, n_threads=os.cpu_count())
        times.append(round(time.perf_counter() - t2, 3))
    for q, row_ids, row_scores in zip(qs, ids, scores):
        q["passages"] = [{**{k: docs[i][k] for k in ("id", "title", "text")}, "score": float(s), "rank": r}
                         for r, (i, s) in enumerate(zip(row_ids, row_scores), start=1)]
    write_jsonl(out, qs)
    return {"index_seconds": round(t1 - t0, 2), "search_seconds": times}


KEPT = "## Where we stand"  # hand-written from the tables: this heading and everything after it are kept


def our_bm25_search_only(index: Path, questions: Path) -> dict[str, list[float]]:
    """Seconds for every question in one batch, as bench/scale.py times them: ``hits`` = ids and
    scores only (what bm25s' retrieve returns; from the index's BM25 matrix when it has one, else
    Lucene), ``passages`` = the whole batch_search (docstore reads, tie adjustment, ranked dicts);
    passes as bench/scale.py's (the JVM's JIT warms up)."""
    from cqtools.retrieval import open_searcher

    searcher = open_searcher(str(index), "bm25")
    qs = [q["question"] for q in read_jsonl(questions)]
    times = {"hits": [], "passages": [], "scorer": "lucene" if searcher._matrix is None else "matrix"}  # noqa: SLF001
    while more(times["hits"]):
        start = time.perf_counter()
        searcher._lucene_hits(qs, 100, os.cpu_count())
        times["hits"].append(round(time.perf_counter() - start, 3))
        start = time.perf_counter()
        searcher.batch_search(qs, [str(n) for n in range(len(qs))], 100, os.cpu_count())
        times["passages"].append(round(time.perf_counter() - start, 3))
    return times


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--work", default="work/bench")
    ap.add_argument("--out", default="docs/benchmarks/retrieve.md")
    ap.add_argument("--reuse-index", metavar="DIR",
                    help="use this `cq index --dense` of the corpus instead of building one (build times are "
                         "then the ones its manifest recorded)")
    ap.add_argument("--peer", help=argparse.SUPPRESS)
    args = ap.parse_args()
    data, work = Path(args.data), Path(args.work)
    corpus = data / "corpus" / "passages.jsonl"
    if args.peer:  # child process: bm25s alone, so its peak memory is its own
        print(json.dumps(bm25s_peer(corpus, Path(args.peer), work / "run.bm25s.jsonl")))
        return
    load = os.getloadavg()[0]
    if not corpus.exists():
        raise SystemExit(f"{corpus} not found: the benchmark needs ../shared/data")
    work.mkdir(parents=True, exist_ok=True)
    questions = select_questions(data, work)
    n = len(read_jsonl(questions))

    steps = {}
    index = Path(args.reuse_index) if args.reuse_index else work / "idx"
    if not args.reuse_index:
        steps["index bm25"] = timed(CQ + ["index", "--corpus", str(corpus), "--out", str(work / "idx-bm25"),
                                          "--overwrite"])
        steps["index bm25+dense"] = timed(CQ + ["index", "--corpus", str(corpus), "--out", str(index),
                                                "--dense", "--overwrite"])
    manifest = json.load(open(index / "cq_index.json"))
    runs = {}
    for method in ("bm25", "dense", "hybrid"):
        out = work / f"run.{method}.jsonl"
        steps[f"retrieve {method}"] = timed(CQ + ["retrieve", "--index", str(index), "--method", method,
                                                  "--hits", "100"], stdin=str(questions), stdout=str(out))
        runs[method] = coverage(read_jsonl(out))
    peer_out = work / "peer.json"
    steps["bm25s (index+retrieve)"] = timed([sys.executable, __file__, "--data", str(data), "--work", str(work),
                                             "--peer", str(questions)], stdout=str(peer_out))
    peer = json.load(open(peer_out))
    runs["bm25s"] = coverage(read_jsonl(work / "run.bm25s.jsonl"))
    search_only = our_bm25_search_only(index, questions)

    lines = [
        "# Retrieval benchmark", "",
        f"Command: `make bench-retrieve{f' REUSE_INDEX={args.reuse_index}' if args.reuse_index else ''}` "
        f"(bench/retrieve.py). Machine: {machine()}, no GPU; 1-min load average at the start {load:.1f}. "
        f"Date: {time.strftime('%Y-%m-%d')}.",
        f"Corpus: ../shared/data/corpus/passages.jsonl ({manifest['passages']} passages). Questions: the {n} AmbigNQ dev",
        "questions that have passages in that corpus. AC@k = share of gold answer clusters (all disambiguated",
        "answers) with an alias, normalised, inside one of the top-k passages (Tree of Clarifications' measure).", "",
        "## Answer coverage (%)", "",
        "| method | " + " | ".join(f"AC@{k}" for k in KS) + " |",
        "|---|" + "---|" * len(KS),
    ]
    for method, cov in runs.items():
        lines.append(f"| {method} | " + " | ".join(f"{cov[k]:.1f}" for k in KS) + " |")
    lines += ["", "## Time and memory (each step a separate process; wall time includes start-up)", "",
              "| step | seconds | peak RSS MiB | queries/s |", "|---|---|---|---|"]
    for step, value in steps.items():
        qps = f"{n / value['seconds']:.1f}" if step.startswith(("retrieve", "bm25s")) else ""
        lines.append(f"| {step} | {value['seconds']} | {value['peak_mib']} | {qps} |")
    def rates(times):
        return ", ".join(f"{t} s ({n / t:.0f} q/s)" for t in times)

    lines += ["", "Search alone (index open, JVM or model loaded), one batch of all questions, k=100, passes as in",
              "bench/scale.py, in one process (query tokenisation included; the first passes warm the JVM's JIT):", "",
              f"- cq BM25 hits (ids and scores; {'the index BM25 matrix, one thread' if search_only['scorer'] == 'matrix' else f'Lucene, {os.cpu_count()} threads'}): {rates(search_only['hits'])}",
              f"- cq BM25 passages (the whole batch_search): {rates(search_only['passages'])}",
              f"- bm25s ({os.cpu_count()} threads): {rates(peer['search_seconds'])};"
              f" its in-memory index build took {peer['index_seconds']} s",
              f"- dense index build (MiniLM-L6 encoding on CPU): {manifest['dense']['seconds']} s;"
              f" BM25 index build: {manifest['bm25_seconds']} s", ""]
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    kept = ""  # the hand-written notes and bench/scale.py's section (and what follows) survive a regeneration
    text = Path(args.out).read_text() if Path(args.out).exists() else ""
    for mark in (KEPT, "## Scale (synthetic corpora)"):
        if mark in text:
            kept = "\n" + mark + text.split(mark, 1)[1]
            break
    Path(args.out).write_text("\n".join(lines) + "\n" + kept)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
