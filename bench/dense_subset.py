"""A quick comparison of faiss index types on the first ``--n`` vectors of make bench-scale-dense's synthetic
set: recall@100 against Flat on the same subset and bytes a vector, one process, ``--threads`` threads. It is
how docs/benchmarks/scale.md's compressed type was picked before its 1M run; it times nothing.

    .venv/bin/python bench/dense_subset.py --work work/bench-scale-dense --n 200000 \\
        --types "PQ192;OPQ184_368,PQ184;PCAR184,SQ8;OPQ176_352,IVF1024,PQ176|32,128"

A type is a factory string, optionally ``|`` and the nprobe values to search it with.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

K = 100


def main() -> None:
    import faiss
    import numpy as np

    ap = argparse.ArgumentParser()
    ap.add_argument("--work", default="work/bench-scale-dense", help="make bench-scale-dense's folder")
    ap.add_argument("--n", type=int, default=200_000)
    ap.add_argument("--vectors", type=int, default=1_000_000, help="which vectors-N.npy to take the first --n of")
    ap.add_argument("--types", required=True, help="';'-separated factory strings, each optionally |nprobe,...")
    ap.add_argument("--train", type=int, default=131_072, help="training vectors (a seeded draw)")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    faiss.omp_set_num_threads(args.threads)
    work = Path(args.work)
    x = np.ascontiguousarray(np.load(work / f"vectors-{args.vectors}.npy", mmap_mode="r")[:args.n], dtype="float32")
    queries = np.load(work / "queries.npy")
    flat = faiss.IndexFlatIP(x.shape[1])
    flat.add(x)
    _, truth = flat.search(queries, K)
    del flat
    sample = x[np.random.default_rng(0).choice(len(x), min(len(x), args.train), replace=False)]
    for spec in args.types.split(";"):
        factory, _, probes = spec.partition("|")
        start = time.perf_counter()
        index = faiss.index_factory(x.shape[1], factory, faiss.METRIC_INNER_PRODUCT)
        index.train(sample)
        index.add(x)
        with tempfile.TemporaryDirectory() as tmp:
            faiss.write_index(index, os.path.join(tmp, "index"))
            size = os.path.getsize(os.path.join(tmp, "index"))
        recalls = []
        for nprobe in [int(v) for v in probes.split(",")] if probes else [None]:
            if nprobe is not None:
                faiss.ParameterSpace().set_index_parameter(index, "nprobe", nprobe)
            _, found = index.search(queries, K)
            recall = float(np.mean([len(set(a) & set(b)) / K for a, b in zip(found, truth)]))
            recalls.append(f"{'nprobe=' + str(nprobe) + ' ' if nprobe else ''}recall@{K} {recall:.3f}")
        print(f"{factory}: {size / len(x):.1f} bytes a vector ({size / (len(x) * 4 * x.shape[1]):.3f} of Flat), "
              f"{'; '.join(recalls)}, {time.perf_counter() - start:.0f} s", flush=True)


if __name__ == "__main__":
    sys.exit(main())
