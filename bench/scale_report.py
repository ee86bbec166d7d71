"""The BM25 section of docs/benchmarks/scale.md from bench/corpus_scale.py's rows: the measured table, the
issue's goals checked on it, and the linear extrapolation to DPR's 21M passages with its formula."""
from __future__ import annotations

import os
import time
from pathlib import Path

from bench.common import machine, replace_section

TITLE = "# The papers' corpus at scale"

DPR_PASSAGES, DPR_WORDS = 21_015_324, 100


def _fit(rows: list[dict], value) -> tuple[float, float]:
    """(a, b) of value = a + b * passages through the two largest sizes measured."""
    (n1, v1), (n2, v2) = [(r["size"], value(r)) for r in rows[-2:]]
    b = (v2 - v1) / (n2 - n1)
    return v1 - b * n1, b


def _qps(n: int, step: dict) -> str:
    return f"{step.get('answered', n) / step['seconds']:,.1f}"


def _rate(n: int, step: dict) -> float:
    """Questions a second: all ``n``, or (a step stopped at its time limit) those it answered."""
    return step.get("answered", n) / step["seconds"]


def write_bm25(out: Path, rows: list[dict], args, mark: str) -> None:
    n = args.questions
    words = rows[0].get("mean_words", 47.4)
    lines = [mark, "",
             f"Command: `make bench-corpus` (bench/corpus_scale.py --sizes {','.join(str(r['size']) for r in rows)}). "
             f"Machine: {machine()}, 24 GiB, no GPU; the",
             "1-min load average before each step is in the tables (other work shared the machine when it is above 2).",
             f"Date: {time.strftime('%Y-%m-%d')}. Corpora: bench/synthetic.py (the shared corpus's word frequencies and "
             f"passage lengths, {words} words",
             "a passage on average; seeded): right for time and memory, meaningless for quality. Questions: the first "
             f"{n:,} AmbigNQ train",
             f"questions, k={args.k}, every step its own process (JVM start, reading, writing JSONL included).", "",
             "### Indexing (`cq index --corpus C --out I`, BM25 part, defaults: 2 threads, `--jvm-heap 2g`)", "",
             "| passages | corpus MiB | load | s | µs a passage | peak RSS MiB | peak anonymous MiB | index on disk MiB | "
             "parts |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        ix = r["index"]
        lines.append(f"| {r['size']:,} | {r['corpus_mib']} | {ix['load']} | {ix['seconds']} | "
                     f"{ix['seconds'] / r['size'] * 1e6:.0f} | {ix['peak_mib']} | {ix['anon_mib']} | {r['disk_mib']} | "
                     f"{', '.join(r['manifest']['parts'])} |")
        if r.get("index_no_matrix"):
            nm = r["index_no_matrix"]
            lines.append(f"| {r['size']:,} (`--bm25-matrix no`) | {r['corpus_mib']} | {nm['load']} | {nm['seconds']} | "
                         f"{nm['seconds'] / r['size'] * 1e6:.0f} | {nm['peak_mib']} | {nm['anon_mib']} | "
                         f"{r.get('disk_no_matrix_mib', '–')} | bm25 |")
    lines += ["", "Peak RSS is wait4's (it includes the pages of index files Lucene has memory-mapped while merging "
                  "segments, which the", "kernel reclaims under pressure); peak anonymous is sampled from /proc every "
                  "0.2 s: the heap and arrays the process really needs.", "",
              f"### Whole-process retrieval of {n:,} questions, top {args.k}", "",
              "| passages | cq load | cq retrieve s | q/s | CPU s | peak RSS MiB | bm25s index s | its peak RSS MiB | "
              "bm25s load | bm25s retrieve s | q/s | CPU s | peak RSS MiB | cq speed / bm25s: wall, CPU |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        cq, bi, br = r["retrieve"], r.get("bm25s_index"), r.get("bm25s_retrieve")
        if bi and "killed_gib" in bi:
            peer = f"killed at {bi['killed_gib']} GiB ({bi['seconds']} s in) | – | – | – | – | – | – | – |"
        elif bi and br:
            built = "reused¹ | –" if bi.get("reused") else f"{bi['seconds']} | {bi['peak_mib']}"
            took = (f"stopped at {br['stopped_s']}² ({br['answered']:,} answered)" if br.get("stopped_s")
                    else f"{br['seconds']}")
            cpu_rate = br["cpu_s"] / br.get("answered", n) / (cq["cpu_s"] / n)
            peer = (f"{built} | {br['load']} | {took} | {_qps(n, br)} | {br['cpu_s']} | {br['peak_mib']} | "
                    f"{_rate(n, cq) / _rate(n, br):.2f}, {cpu_rate:.2f} |")
        else:
            peer = "not run | – | – | – | – | – | – | – |"
        lines.append(f"| {r['size']:,} | {cq['load']} | {cq['seconds']} | {_qps(n, cq)} | {cq['cpu_s']} | "
                     f"{cq['peak_mib']} | {peer}")
    lines += ["", "bm25s: its index built and saved by one process (tokenising the whole corpus in memory), then "
                  "loaded memory-mapped", "by the retrieving process, which also reads the corpus for the passages' "
                  "text, as cq's output has it. Speed ratios are questions a second (wall clock, and CPU seconds a "
                  "question).", ""]
    if any(r.get("bm25s_index", {}).get("reused") for r in rows):
        lines += ["¹ bm25s's index saved by an earlier run of the target on the same corpus (`--reuse-bm25s`), not "
                  "measured again.", ""]
    if any(r.get("bm25s_retrieve", {}).get("stopped_s") for r in rows):
        lines += ["² stopped at the time limit (`--bm25s-limit-s`): q/s are the questions it answered (in chunks of "
                  "1,000) over the seconds it ran, its start-up (loading the index, reading the corpus) included.", ""]
    lines += goals(rows, n) + extrapolation(rows, n, words)
    replace_section(out, mark, lines, TITLE)


def goals(rows: list[dict], n: int) -> list[str]:
    by = {r["size"]: r for r in rows}
    out = ["### The issue's goals, on these rows", ""]
    small, big = by.get(200_000), by.get(5_000_000)
    if small and big:
        for label, key in (("peak RSS", "peak_mib"), ("peak anonymous memory", "anon_mib")):
            ratio = big["index"][key] / small["index"][key]
            out.append(f"- `cq index` {label} at 5M / at 200k: {big['index'][key]} / {small['index'][key]} MiB = "
                       f"{ratio:.2f} (goal <= 1.5: {'met' if ratio <= 1.5 else 'not met'}).")
        if small.get("index_no_matrix"):
            ratio = big["index"]["peak_mib"] / small["index_no_matrix"]["peak_mib"]
            out.append(f"- The same against 200k without the BM25 matrix (5M has none either): "
                       f"{big['index']['peak_mib']} / {small['index_no_matrix']['peak_mib']} MiB = {ratio:.2f}.")
    if big:
        bi, br = big.get("bm25s_index"), big.get("bm25s_retrieve")
        if bi and "killed_gib" in bi:
            out.append(f"- BM25 retrieval at 5M: bm25s could not index 5M passages within the limit (killed at "
                       f"{bi['killed_gib']} GiB of RSS): its memory wall; cq retrieved at {_qps(n, big['retrieve'])} q/s "
                       f"with a peak RSS of {big['retrieve']['peak_mib']} MiB.")
        elif br:
            ratio = _rate(n, big["retrieve"]) / _rate(n, br)
            cpu = br["cpu_s"] / br.get("answered", n) / (big["retrieve"]["cpu_s"] / n)
            out.append(f"- BM25 whole-process retrieval at 5M: cq {_qps(n, big['retrieve'])} q/s, bm25s {_qps(n, br)} "
                       f"q/s (its index prebuilt): cq {ratio:.2f}x bm25s's speed by the wall clock, {cpu:.2f}x by CPU "
                       f"time (goal >= 2: "
                       f"{'met' if min(ratio, cpu) >= 2 else 'met by one measure only' if max(ratio, cpu) >= 2 else 'not met'}"
                       f"; the wall clock is the goal's measure, CPU time the one other work on the machine moves less).")
    return out + [""]


def extrapolation(rows: list[dict], n: int, words: float) -> list[str]:
    if len(rows) < 2:
        return []
    scale = DPR_WORDS / words  # DPR's passages are 100 words: time and disk of indexing follow the tokens
    a, b = _fit(rows, lambda r: r["index"]["seconds"])
    da, db = _fit(rows, lambda r: r["disk_mib"])
    ra, rb = _fit(rows, lambda r: r["retrieve"]["seconds"])
    index_s = a + b * DPR_PASSAGES * scale
    disk = da + db * DPR_PASSAGES * scale
    retrieve_s = ra + rb * DPR_PASSAGES * scale
    big = rows[-1]
    out = ["### Extrapolation to DPR's 21,015,324 passages (100 words each)", "",
           f"Straight lines through the two largest sizes measured ({rows[-2]['size']:,} and {big['size']:,}), "
           f"with the passage count", f"scaled by {DPR_WORDS}/{words} = {scale:.2f} for DPR's longer passages "
           f"(indexing, disk and posting-list lengths follow the tokens):", "",
           f"- `cq index` seconds = {a:.1f} + {b * 1e6:.1f} µs × passages → **~{index_s / 3600:.1f} h** on 2 cores "
           f"(`--threads` scales the Lucene part; segment merges grow a little faster than linearly: a lower bound).",
           f"- Index on disk MiB = {da:.0f} + {db * 1e6:.0f} MiB per million passages → **~{disk / 1024:.0f} GiB**, "
           f"plus the JSON collection written beside it while building (about the corpus's size) and the corpus.",
           f"- `cq index` memory: the JVM's heap is capped by `--jvm-heap` (2 GiB by default; Lucene's buffer an eighth "
           f"of it) and Python streams the corpus, so nothing in the process is sized by the corpus; the measured peaks "
           f"(anonymous memory) are " + ", ".join(f"{r['index']['anon_mib']} MiB at {r['size']:,}" for r in rows)
           + ": at 21M expect the largest of them, not a line through them.",
           f"- Retrieval of {n:,} questions: seconds = {ra:.1f} + {rb * 1e6:.2f} µs × passages → "
           f"**~{retrieve_s / 60:.0f} min** (~{n / retrieve_s:.0f} q/s on 2 cores): Lucene's cost a query grows with "
           f"the posting lists of the query's terms, which grow with the corpus.",
           ]
    peers = [r for r in rows if "peak_mib" in r.get("bm25s_index", {})]  # measured (not reused, not killed)
    if len(peers) >= 2:
        pa, pb = _fit(peers, lambda r: r["bm25s_index"]["peak_mib"])
        out.append(f"- bm25s indexing memory MiB = {pa:.0f} + {pb * 1e6:.0f} MiB per million passages → "
                   f"~{(pa + pb * DPR_PASSAGES * scale) / 1024:.0f} GiB for DPR's corpus.")
    return out + [""]
