"""`make bench-corpus`: `cq index` and whole-process BM25 retrieval at growing synthetic corpus sizes
(default 200k, 1M, 5M passages), bm25s beside it where it fits in memory; writes the "BM25" section of
docs/benchmarks/scale.md (other sections, e.g. bench/scale_dense.py's, are kept).

Corpora: bench/synthetic.py (the shared corpus's word frequencies and passage lengths; see there what
that keeps and loses). Questions: the first 10,000 AmbigNQ train questions (`cq convert ambignq`).
Every step is its own process, sampled every 0.2 s from /proc for its resident memory (VmRSS, and its
anonymous part RssAnon: heap and arrays, without the page cache of files the process has mapped, which
the kernel reclaims under pressure), with the peak RSS from wait4 beside it.

* cq: `cq index --corpus C --out I` (BM25: Lucene + passage store; the BM25 matrix per its default), then
  `cq retrieve --index I --hits 100 < questions > out` (JVM start, opening the index, searching, passages
  from the store, writing JSONL with each record's meta);
* bm25s (0.3, same k1 0.9 / b 0.4, English stopwords): one process tokenizes and indexes the corpus and
  saves it (its "index"); another loads it memory-mapped, reads the corpus for the passages' text,
  retrieves the top 100 for the same questions and writes the same JSONL (ids, titles, texts, scores, ranks).
  A bm25s step is killed when its RSS passes --bm25s-limit-gib: that row then shows its memory wall.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import synthetic  # noqa: E402
from bench.common import CQ, ROOT, env_for, machine  # noqa: E402

MARK = "## BM25 at 200k, 1M and 5M passages"
MATRIX_MAX_PASSAGES = 250_000  # cqtools.retrieval.base's: `cq index --bm25-matrix auto` writes one up to it


def _status(pid: int) -> dict[str, int]:
    """VmRSS / RssAnon / RssFile of one process in KiB (empty once it has gone)."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            return {k: int(v.split()[0]) for k, v in (line.split(":", 1) for line in fh)
                    if k in ("VmRSS", "RssAnon", "RssFile")}
    except (OSError, ValueError):
        return {}


def measure(cmd: list[str], stdin: str | None = None, stdout: str | None = None, limit_gib: float | None = None,
            env: dict | None = None, limit_s: float | None = None) -> dict:
    """Run ``cmd`` alone; wall and CPU seconds, peak RSS (wait4) and the sampled peaks of RSS and of its
    anonymous part (MiB). Over ``limit_gib`` of RSS it is killed and ``killed_gib`` says at what size; past
    ``limit_s`` seconds it is stopped and ``stopped_s`` says when (its output so far is kept)."""
    fin = open(stdin, "rb") if stdin else subprocess.DEVNULL
    fout = open(stdout, "wb") if stdout else subprocess.DEVNULL
    load = round(os.getloadavg()[0], 1)
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdin=fin, stdout=fout, stderr=subprocess.PIPE, cwd=ROOT,
                            env=env or env_for())
    peaks = {"VmRSS": 0, "RssAnon": 0}
    killed: list[float] = []
    stopped: list[float] = []
    done = threading.Event()  # set once wait4 has reaped the child (polling it here would reap it first)

    def sample():
        while not done.wait(0.2):
            now = _status(proc.pid)
            for key in peaks:
                peaks[key] = max(peaks[key], now.get(key, 0))
            if limit_gib and now.get("VmRSS", 0) > limit_gib * 2**20:
                killed.append(round(now["VmRSS"] / 2**20, 1))
                proc.kill()
                return
            if limit_s and time.perf_counter() - start > limit_s:
                stopped.append(round(time.perf_counter() - start, 1))
                proc.kill()
                return

    watcher = threading.Thread(target=sample, daemon=True)
    watcher.start()
    stderr = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    done.set()
    watcher.join()
    for fh in (fin, fout):
        if hasattr(fh, "close"):
            fh.close()
    code = os.waitstatus_to_exitcode(status)
    if code != 0 and not (killed or stopped):
        raise SystemExit(f"benchmark step failed ({code}): {' '.join(cmd)}\n{stderr.decode()[-2000:]}")
    out = {"seconds": round(seconds, 1), "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
           "peak_mib": round(usage.ru_maxrss / 1024), "rss_mib": round(peaks["VmRSS"] / 1024),
           "anon_mib": round(peaks["RssAnon"] / 1024), "load": load}
    if killed:
        out["killed_gib"] = killed[0]
    if stopped:
        out["stopped_s"] = stopped[0]
    return out


def du_mib(path: Path) -> float:
    return round(sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20)


def peer_index(corpus: str, saved: str) -> None:
    """Child: bm25s tokenizes and indexes the corpus, then saves the index (memory-mappable)."""
    import bm25s
    import orjson

    with open(corpus, "rb") as fh:
        texts = [f"{d['title']}\n{d['text']}" for d in map(orjson.loads, fh)]
    retriever = bm25s.BM25(k1=0.9, b=0.4)
    retriever.index(bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False)
    retriever.save(saved)


def peer_search(corpus: str, saved: str, k: int) -> None:
    """Child: bm25s loads its saved index memory-mapped, reads the passages, answers the questions on
    stdin with their top k passages (cq's JSONL shape) on stdout."""
    import bm25s
    import orjson

    from bench.bm25_process import answer_stdin

    retriever = bm25s.BM25.load(saved, mmap=True)
    with open(corpus, "rb") as fh:
        docs = [orjson.loads(line) for line in fh]
    answer_stdin(retriever, docs, k)


def questions(data: Path, work: Path, n: int) -> Path:
    path = work / f"questions-{n}.jsonl"
    if not path.exists():
        converted = subprocess.run(CQ + ["convert", "ambignq", str(data / "ambignq/train_light.json")], cwd=ROOT,
                                   env=env_for(), check=True, capture_output=True).stdout.splitlines()[:n]
        path.write_bytes(b"\n".join(converted) + b"\n")
    return path


def one_size(args, size: int, qs: Path) -> dict:
    work = Path(args.work)
    corpus, index = work / f"corpus-{size}.jsonl", work / f"index-{size}"
    made = None
    if not corpus.exists():
        start = time.perf_counter()
        synthetic.write(Path(args.data) / "corpus/passages.jsonl", size, corpus)
        made = round(time.perf_counter() - start, 1)
    row = {"size": size, "corpus_mib": du_mib(corpus) if corpus.is_dir() else round(corpus.stat().st_size / 2**20),
           "corpus_seconds": made}
    row["index"] = measure(CQ + ["index", "--corpus", str(corpus), "--out", str(index), "--overwrite", "-q",
                                 *args.index_args.split()])
    row["disk_mib"] = du_mib(index)
    row["mean_words"] = synthetic.mean_words(Path(args.data) / "corpus/passages.jsonl")
    if size <= MATRIX_MAX_PASSAGES:  # like for like with the sizes that get no BM25 matrix
        bare = work / f"index-{size}-bare"
        row["index_no_matrix"] = measure(CQ + ["index", "--corpus", str(corpus), "--out", str(bare), "--overwrite",
                                               "-q", "--bm25-matrix", "no", *args.index_args.split()])
        row["disk_no_matrix_mib"] = du_mib(bare)
    row["manifest"] = {k: v for k, v in json.loads((index / "cq_index.json").read_text()).items()
                       if k in ("parts", "passages", "bm25_seconds")}
    row["retrieve"] = measure(CQ + ["retrieve", "--index", str(index), "--hits", str(args.k), "-q"], stdin=str(qs),
                              stdout=str(work / "cq.out.jsonl"))
    if not args.no_bm25s:
        saved = work / f"bm25s-{size}"
        me = [sys.executable, __file__, "--data", args.data, "--work", args.work]
        if args.reuse_bm25s and saved.exists():  # its index from an earlier run: not measured again
            row["bm25s_index"] = {"reused": True}
        else:
            row["bm25s_index"] = measure(me + ["--child", "index", str(corpus), str(saved)],
                                         limit_gib=args.bm25s_limit_gib)
        if "killed_gib" not in row["bm25s_index"]:
            answers = work / "bm25s.out.jsonl"
            row["bm25s_retrieve"] = measure(me + ["--child", "search", str(corpus), str(saved), "--k", str(args.k)],
                                            stdin=str(qs), stdout=str(answers), limit_gib=args.bm25s_limit_gib,
                                            limit_s=args.bm25s_limit_s)
            row["bm25s_retrieve"]["answered"] = sum(1 for _ in open(answers, "rb"))
            row["bm25s_disk_mib"] = du_mib(saved)
    return row


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--work", default="work/bench-corpus")
    ap.add_argument("--out", default="docs/benchmarks/scale.md")
    ap.add_argument("--sizes", default="200000,1000000,5000000")
    ap.add_argument("--questions", type=int, default=10_000)
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--bm25s-limit-gib", type=float, default=16.0)
    ap.add_argument("--no-bm25s", action="store_true")
    ap.add_argument("--bm25s-limit-s", type=float, default=None,
                    help="stop bm25s's retrieval after this many seconds (its rate is then from the questions answered)")
    ap.add_argument("--reuse-bm25s", action="store_true", help="search bm25s's index saved by an earlier run")
    ap.add_argument("--index-args", default="", help="more `cq index` flags, e.g. '--bm25-matrix no'")
    ap.add_argument("--report-only", action="store_true", help="rewrite the section from WORK/rows.json")
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        kind, *paths = args.child
        return peer_index(*paths) if kind == "index" else peer_search(*paths, args.k)
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    saved = work / "rows.json"  # a size measured again replaces its row
    rows = json.loads(saved.read_text()) if saved.exists() else []
    qs = questions(Path(args.data), work, args.questions)
    for size in [] if args.report_only else [int(s) for s in args.sizes.split(",")]:
        row = one_size(args, size, qs)
        print(json.dumps(row), file=sys.stderr)
        rows = sorted([r for r in rows if r["size"] != size] + [row], key=lambda r: r["size"])
        saved.write_text(json.dumps(rows, indent=1))
    from bench.scale_report import write_bm25

    write_bm25(Path(args.out), rows, args, MARK)


if __name__ == "__main__":
    main()
