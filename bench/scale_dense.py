"""`make bench-scale-dense`: faiss index types at 1M passage vectors (cqtools/retrieval/faiss_index.py).

Passage vectors are SYNTHETIC, drawn from the real encoder's statistics: the 9,532 shared passages are
encoded by the default offline encoder (sentence-transformers, L2-normalised), k-means splits them into
``--components`` topics, and each synthetic vector is a topic's mean plus a draw from the real pooled
within-topic covariance, L2-normalised as sentence-transformers indexes are. Why a mixture: one Gaussian over
all passages has no topics, which is exactly the structure IVF lists and HNSW graphs use (it would make both
look worse than on real text); noise around each real vector would make ~100 near-copies of each (it would
make the top 100 a set of near-ties). Queries: the real AmbigNQ dev questions, encoded by the same model (a
seeded subset of ``--queries``). Recall@100 is against the exact (Flat) top 100 of the same vectors.

Each measured step runs in its own process (peak RSS is its own): the build (cqtools' build_faiss, write),
then the search (cqtools' open_index: memory-mapped, as `cq retrieve` opens it). Writes the "Dense index
types" section of ``--out`` (the rest of the file is kept).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import machine, replace_section, timed  # noqa: E402

MARK = "## Dense index types at"
K = 100
THREADS = 2
FULL = 21_000_000  # DPR's Wikipedia: passages the memory column extrapolates to
# (factory, knob, values): each value is one row
TYPES = [("Flat", None, [None]), ("HNSW32", "ef_search", [64, 128, 256, 512, 1024, 2048, 4096]),
         ("HNSW64", "ef_search", [512, 1024, 2048]), ("IVF4096,Flat", "nprobe", [16, 64]),
         ("SQ8", None, [None]), ("IVF4096,PQ64", "nprobe", [16, 64]), ("OPQ96,IVF4096,PQ96", "nprobe", [16, 64]),
         ("SQ4", None, [None]), ("IVF4096,SQ4", "nprobe", [16, 64]), ("PQ192", None, [None]),
         # under an eighth of Flat with its codebooks, centroids and ids: a rotation to 352 dimensions, residuals
         # of 1024 lists, 176 two-dimensional sub-quantizers (176 + 8 bytes a vector)
         ("OPQ176_352,IVF1024,PQ176", "nprobe", [64, 128, 256]),
         # the example for 21M passages (65,536 lists want ~2.5M training vectors: at 1M it is undertrained)
         ("OPQ64,IVF65536_HNSW32,PQ64", "nprobe", [64, 256, 1024])]


def slug(factory: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", factory)


# -- children (each in its own process) --

def encode_real(data: Path, work: Path, queries: int, seed: int) -> dict:
    """The real passages and a seeded subset of the AmbigNQ dev questions, encoded by the default encoder."""
    import numpy as np

    from cqtools.config import RunConfig
    from cqtools.retrieval.base import contents
    from cqtools.retrieval.dense import DEFAULT_ENCODER, load_encoder

    # padded batches (CQ_PADDED_BATCHES=1): ~50x faster on a CPU than cq's text-at-a-time encoding, the same
    # vectors but for their last bits, and only their statistics and recall against Flat on them are used here
    config = RunConfig.from_env(environ={**os.environ, "CQ_PADDED_BATCHES": "1"})
    model, encoder = load_encoder(DEFAULT_ENCODER, "cpu", config=config)
    passages = [json.loads(line) for line in open(data / "corpus" / "passages.jsonl")]
    qs = [q["question"] for q in json.load(open(data / "ambignq" / "dev_light.json"))]
    rng = np.random.default_rng(seed)
    qs = [qs[i] for i in sorted(rng.choice(len(qs), min(queries, len(qs)), replace=False))]
    for name, texts in (("real", [contents(p) for p in passages]), ("queries", qs)):
        vectors = encoder.encode(texts, batch_size=64, normalize_embeddings=True, convert_to_numpy=True,
                                 show_progress_bar=False)
        np.save(work / f"{name}.npy", np.ascontiguousarray(vectors, dtype="float32"))
    return {"encoder": model.name, "passages": len(passages), "queries": len(qs)}


def synthesize(work: Path, n: int, components: int, seed: int) -> dict:
    """``n`` vectors from the mixture fitted to the real ones (module docstring), written as a float32 memmap."""
    import faiss
    import numpy as np

    real = np.load(work / "real.npy")
    dim = real.shape[1]
    kmeans = faiss.Kmeans(dim, components, niter=25, seed=seed, verbose=False)
    kmeans.train(real)
    _, assign = kmeans.index.search(real, 1)
    assign = assign[:, 0]
    means = np.stack([real[assign == c].mean(0) if (assign == c).any() else kmeans.centroids[c]
                      for c in range(components)])
    residuals = real - means[assign]
    cov = np.cov(residuals, rowvar=False) + 1e-6 * np.eye(dim)
    chol = np.linalg.cholesky(cov)
    weights = np.bincount(assign, minlength=components) / len(real)
    rng = np.random.default_rng(seed)
    out = np.lib.format.open_memmap(work / f"vectors-{n}.npy", mode="w+", dtype="float32", shape=(n, dim))
    for start in range(0, n, 65536):
        size = min(65536, n - start)
        x = means[rng.choice(components, size, p=weights)] + rng.standard_normal((size, dim)) @ chol.T
        out[start:start + size] = x / np.linalg.norm(x, axis=1, keepdims=True)
    out.flush()
    real_cos = float(np.mean(real[:2000] @ real[:2000].T))
    synth_cos = float(np.mean(out[:2000] @ out[:2000].T))
    return {"dim": dim, "components": components, "mean_cosine_real": round(real_cos, 4),
            "mean_cosine_synthetic": round(synth_cos, 4)}


def build(work: Path, n: int, factory: str, train_sample: int, seed: int) -> dict:
    import faiss
    import numpy as np

    from cqtools.retrieval.faiss_index import build_faiss

    faiss.omp_set_num_threads(THREADS)
    vectors = np.load(work / f"vectors-{n}.npy", mmap_mode="r")

    def chunks():
        for start in range(0, len(vectors), 65536):
            yield vectors[start:start + 65536]

    start = time.perf_counter()
    index = build_faiss(factory, vectors.shape[1], chunks, train_sample, seed)
    seconds = time.perf_counter() - start
    path = work / f"index-{n}-{slug(factory)}"
    faiss.write_index(index, str(path))
    return {"build_s": round(seconds, 1), "bytes": path.stat().st_size}


def search(work: Path, n: int, factory: str, knob: str | None, values: list, single: int) -> dict:
    """Per knob value: single-query q/s (the first ``single`` queries one call each, as `cq retrieve`
    searches), batched q/s (all queries in one call) and recall@100 against Flat's top 100."""
    import resource

    import faiss
    import numpy as np

    from cqtools.retrieval.faiss_index import open_index, set_knobs

    faiss.omp_set_num_threads(THREADS)
    queries = np.load(work / "queries.npy")
    index = open_index(str(work / f"index-{n}-{slug(factory)}"))
    truth_path = work / f"flat-top{K}-{n}.npy"
    rows = []
    for value in values:
        if knob:
            set_knobs(index, **{knob: value})
        qps = single_qps(index, queries, single)
        start = time.perf_counter()
        _, found = index.search(queries, K)
        batch_qps = len(queries) / (time.perf_counter() - start)
        if factory == "Flat":
            np.save(truth_path, found)
        truth = np.load(truth_path)
        recall = float(np.mean([len(set(a) & set(b)) / K for a, b in zip(found, truth)]))
        rows.append({"value": value, "single_qps": round(qps, 1), "batch_qps": round(batch_qps, 1),
                     "recall": round(recall, 4)})
    peak_mib = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)  # before Flat's pages count
    flat_single = None
    if factory != "Flat":  # Flat timed right after the type, so a speed-up compares like with like under any load
        del index
        flat_single = round(single_qps(open_index(str(work / f"index-{n}-Flat")), queries, single), 1)
    return {"rows": rows, "peak_mib": peak_mib, **({"flat_single_qps": flat_single} if flat_single else {}),
            "load": round(os.getloadavg()[0], 1)}


def single_qps(index, queries, single: int) -> float:
    """Queries a second, the first ``single`` queries one faiss call each (as `cq retrieve` searches), after a
    warm-up call that pages the index in."""
    index.search(queries[:8], K)
    count = min(single, len(queries))
    start = time.perf_counter()
    for i in range(count):
        index.search(queries[i:i + 1], K)
    return count / (time.perf_counter() - start)


CHILDREN = {"encode": encode_real, "synthesize": synthesize, "build": build, "search": search}


def child(args, kind: str, **kw) -> dict:
    out = Path(args.work) / "child.json"
    step = timed([sys.executable, __file__, "--work", args.work, "--child", kind, json.dumps(kw)], stdout=str(out))
    return {**json.loads(out.read_text()), "process": step}


# -- memory per type --

def per_vector(factory: str, dim: int) -> tuple[float, float, str]:
    """(bytes a vector, fixed bytes, the formula) of a factory string's parts, as faiss stores them. A
    transform (OPQM_D, PCAR D) changes the dimension the parts after it see."""
    per, fixed, words, d = 0.0, 0.0, [], dim
    for part in factory.split(","):
        if part == "Flat":
            per += 4 * d
            words.append(f"4·{d}")
        elif m := re.fullmatch(r"HNSW(\d+)", part):
            per += 4 * d + 2 * int(m[1]) * 4 * 1.05
            words.append(f"4·{d} + 2·{m[1]}·4 ·1.05 (level-0 links, upper levels)")
        elif m := re.fullmatch(r"IVF(\d+)(?:_HNSW(\d+))?", part):
            per += 8
            fixed += int(m[1]) * d * 4 + (int(m[1]) * 2 * int(m[2]) * 4 if m[2] else 0)
            words.append(f"8 (id) + {m[1]}·{d}·4 once (centroids"
                         + (f", and their HNSW{m[2]} graph)" if m[2] else ")"))
        elif m := re.fullmatch(r"SQ(\d+)", part):
            per += d * int(m[1]) / 8
            words.append(f"{d}·{m[1]}/8")
        elif m := re.fullmatch(r"PQ(\d+)(?:x(\d+))?", part):
            bits = int(m[2] or 8)
            per += int(m[1]) * bits / 8
            fixed += 2 ** bits * d * 4
            words.append(f"{m[1]}·{bits}/8 + {2 ** bits}·{d}·4 once (codebooks)")
        elif m := re.fullmatch(r"(OPQ\d+|PCAR?)(?:_?(\d+))?", part):
            out = int(m[2]) if m[2] else d
            fixed += d * out * 4
            words.append(f"{d}·{out}·4 once ({'rotation' if m[1].startswith('OPQ') else 'PCA'})")
            d = out
    return per, fixed, " + ".join(words)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--work", default="work/bench-scale-dense")
    ap.add_argument("--out", default="docs/benchmarks/scale.md")
    ap.add_argument("--n", type=int, default=1_000_000, help="synthetic passage vectors")
    ap.add_argument("--queries", type=int, default=1000, help="AmbigNQ dev questions (a seeded subset)")
    ap.add_argument("--single", type=int, default=200, help="queries timed one faiss call each")
    ap.add_argument("--components", type=int, default=256, help="mixture topics fitted to the real vectors")
    ap.add_argument("--train-sample", type=int, default=262144, help="as cq index --faiss-train-sample")
    ap.add_argument("--types", default=None, help="factory strings to run, ';'-separated [default: all]")
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--report-only", action="store_true", help="rewrite the section from WORK/dense-N.json")
    ap.add_argument("--child", nargs=2, metavar=("KIND", "JSON"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    work = Path(args.work)
    if args.child:
        kind, kw = args.child
        kw = json.loads(kw)
        print(json.dumps(CHILDREN[kind](**{k: Path(v) if k in ("work", "data") else v for k, v in kw.items()})))
        return
    work.mkdir(parents=True, exist_ok=True)
    saved = work / f"dense-{args.n}.json"
    report = json.loads(saved.read_text()) if saved.exists() else {"n": args.n, "types": {}}
    if not args.report_only:
        report["load"] = round(os.getloadavg()[0], 1)
        if not (work / "queries.npy").exists() or not (work / "real.npy").exists():
            report["encoded"] = child(args, "encode", data=str(Path(args.data).resolve()), work=str(work),
                                      queries=args.queries, seed=args.seed)
        if not (work / f"vectors-{args.n}.npy").exists():
            report["synthetic"] = child(args, "synthesize", work=str(work), n=args.n, components=args.components,
                                        seed=args.seed)
        wanted = args.types.split(";") if args.types else [t[0] for t in TYPES]
        if "Flat" not in wanted and not (work / f"flat-top{K}-{args.n}.npy").exists():
            wanted.insert(0, "Flat")  # the exact top 100 every recall is measured against
        others = [(t, None, [None]) for t in wanted if t not in {known for known, _, _ in TYPES}]  # no knob rows
        for factory, knob, values in [t for t in TYPES if t[0] in wanted] + others:
            built = child(args, "build", work=str(work), n=args.n, factory=factory, train_sample=args.train_sample,
                          seed=args.seed)
            found = child(args, "search", work=str(work), n=args.n, factory=factory, knob=knob, values=values,
                          single=args.single)
            report["types"][factory] = {"knob": knob, **built, **found, "build_process": built["process"],
                                        "search_process": found["process"]}
            print(json.dumps({factory: report["types"][factory]}), file=sys.stderr)
            saved.write_text(json.dumps(report, indent=1))
        report["date"] = time.strftime("%Y-%m-%d")
        saved.write_text(json.dumps(report, indent=1))
    write_report(Path(args.out), report, args)


def _mib(b: float) -> str:
    return f"{b / 2**20:,.1f}"


def write_report(out: Path, report: dict, args) -> None:
    n, types = report["n"], report["types"]
    known = [factory for factory, _, _ in TYPES]
    types = {f: types[f] for f in sorted(types, key=lambda f: known.index(f) if f in known else len(known))}
    dim = (report.get("synthetic") or {}).get("dim", 384)
    flat = types.get("Flat")
    encoded = report.get("encoded") or {}
    synthetic = report.get("synthetic") or {}
    lines = [f"{MARK} {n // 10**6}M" if n % 10**6 == 0 else f"{MARK} {n:,}", "",
             f"Command: `make bench-scale-dense` (bench/scale_dense.py --n {n}). Machine: {machine()}, no GPU; "
             f"1-min load average {report.get('load', '–')} before the latest run; the load column is each search "
             f"step's own (– where the step did not record it). Date of the latest run: {report.get('date', '–')}.",
             f"Vectors: {n:,} **synthetic** {dim}-d passage vectors drawn from a {synthetic.get('components', '–')}-topic "
             f"Gaussian mixture fitted to the {encoded.get('passages', 9532):,} real passages encoded by "
             f"{encoded.get('encoder', 'the default encoder')} (topic means + the pooled within-topic covariance, "
             f"L2-normalised; mean pairwise cosine real {synthetic.get('mean_cosine_real', '–')}, synthetic "
             f"{synthetic.get('mean_cosine_synthetic', '–')}). Queries: {encoded.get('queries', args.queries)} real AmbigNQ "
             f"dev questions (seeded subset), same encoder. Recall@{K} = |top {K} ∩ Flat's top {K}| / {K}, averaged.",
             f"Each build and each search is its own process ({THREADS} faiss threads); the search process opens the "
             f"index as `cq retrieve` does (memory-mapped, IO_FLAG_MMAP_IFC), so its peak RSS counts the mapped pages "
             f"it touched. Single-query q/s: the first {args.single} queries, one faiss call each (how `cq retrieve` "
             f"searches); batched: all queries in one call. Training sample: {args.train_sample:,} (capped at {n:,}).",
             "",
             "| index | knob | build s | build peak RSS MiB | on disk MiB | vs Flat | search peak RSS MiB | load | "
             "q/s single | Flat q/s single beside it | q/s batched | speed-up vs Flat (single) | recall@100 |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    run_flat = flat["rows"][0]["single_qps"] if flat else None

    def baseline(t: dict):  # Flat's single-query q/s timed beside the type when its search step did, else the run's
        return t.get("flat_single_qps") or run_flat

    for factory, t in types.items():
        for row in t["rows"]:
            knob = f"{t['knob']}={row['value']}" if t["knob"] else "–"
            ratio = f"{t['bytes'] / flat['bytes']:.3f}" if flat else "–"
            speed = f"{row['single_qps'] / baseline(t):.1f}x" if baseline(t) else "–"
            build_rss = (t.get("build_process") or {}).get("peak_mib", "–")
            lines.append(f"| {factory} | {knob} | {t['build_s']} | {build_rss} | {_mib(t['bytes'])} | {ratio} | "
                         f"{t['peak_mib']} | {t.get('load', '–')} | {row['single_qps']:,.0f} | "
                         f"{baseline(t) or '–'} | {row['batch_qps']:,.0f} | {speed} | {row['recall']:.3f} |")
    notes: dict[str, list[str]] = {}  # one line per note, naming every type it is about
    for factory, t in types.items():
        if t.get("note"):
            notes.setdefault(t["note"], []).append(factory)
    lines += [""] + [f"{', '.join(factories)}: {note}" for note, factories in notes.items()]
    lines += ["", "Goals (issue 44; reported, not tuned to pass):", ""]
    if flat:
        hnsw = [(f, r, t) for f, t in types.items() if f.startswith("HNSW") for r in t["rows"]]
        met = sorted({f"{f} {t['knob']}={r['value']}" for f, r, t in hnsw
                      if r["recall"] >= 0.95 and r["single_qps"] >= 10 * baseline(t)})
        lines.append(f"* HNSW recall@100 >= 0.95 at >= 10x Flat's single-query q/s: "
                     f"{'met by ' + ', '.join(met) if met else 'not met'} at {n:,} ("
                     + "; ".join(f"{f} {t['knob']}={r['value']}: {r['recall']:.3f} at "
                                 f"{r['single_qps'] / baseline(t):.1f}x" for f, r, t in hnsw) + ").")
        small = [(f, r, t) for f, t in types.items() if t["bytes"] <= flat["bytes"] / 8 for r in t["rows"]]
        good = [(f, r) for f, r, _ in small if r["recall"] >= 0.90]
        lines.append("* a compressed type at <= 1/8 of Flat's bytes on disk (codebooks, centroids and ids included) "
                     "with recall@100 >= 0.90: "
                     + (f"met by {', '.join(sorted({f for f, _ in good}))}" if good else "not met")
                     + " (types at <= 1/8: " + "; ".join(f"{f} {t['knob'] + '=' + str(r['value']) if t['knob'] else ''} "
                                                        f"{r['recall']:.3f}" for f, r, t in small) + ").")
    lines += ["", f"Memory at {FULL // 10**6}M passages ({dim}-d), from what faiss stores a vector (d = {dim}):", "",
              "| index | bytes a vector | fixed | at 21M GiB |", "|---|---|---|---|"]
    for factory in types:
        per, fixed, words = per_vector(factory, dim)
        lines.append(f"| {factory} | {words} = {per:,.0f} | {_mib(fixed)} MiB | {(per * FULL + fixed) / 2**30:,.1f} |")
    lines += ["", "HNSW's graph is read into memory when the index opens (memory-mapping covers its stored vectors); "
                  "Flat, SQ and IVF lists stay in the page cache, shared by every process searching the index. "
                  f"faiss searches HNSW with max(efSearch, k): at k={K}, ef_search=64 searches as 100.", ""]
    replace_section(out, MARK, lines, "# The papers' corpus at scale")


if __name__ == "__main__":
    main()
