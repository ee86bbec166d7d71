"""The index manifest and the ranking rule every searcher shares (the searcher shape itself is
:class:`cqtools.protocols.Searcher`)."""
from __future__ import annotations

import json
import os

from ..errors import ResourceError

MANIFEST = "cq_index.json"
LUCENE_DIR = "lucene"
DENSE_DIR = "dense"
K1, B = 0.9, 0.4  # Anserini's BM25 parameters (cq retrieve --k1/--b declare them from these)
MATRIX_MAX_PASSAGES = 250_000  # `cq index --bm25-matrix auto` writes a BM25 matrix up to this size (.matrix)
FUSION, ALPHA = "rrf", 0.1  # cq retrieve --method hybrid's fusion, and --fusion linear's sparse weight


def rank(hits: list[dict], k: int) -> list[dict]:
    """Sort by (-score, id) so ties break the same way every run, keep k, number from 1."""
    hits = sorted(hits, key=lambda h: (-h["score"], h["id"]))[:k]
    for i, hit in enumerate(hits, start=1):
        hit["rank"] = i
    return hits


def contents(passage: dict) -> str:
    """Pyserini's convention for Wikipedia passages (as in its wikipedia-dpr index): title, newline, text."""
    return f"{passage['title']}\n{passage['text']}" if passage.get("title") else passage["text"]


SWAPPED = ("index {name} changed while cq was opening it (a `cq index --overwrite` replaced it?); run again "
           "once the new index is in place")


def spread(n: int, count: int = 64) -> list[int]:
    """Up to ``count`` positions spread evenly over ``range(n)``, the first and the last included."""
    if n <= count:
        return list(range(n))
    return sorted({round(i * (n - 1) / (count - 1)) for i in range(count)})


def read_manifest(index_dir: str) -> dict:
    """Our manifest, or a synthesized one for a plain Pyserini Lucene index directory."""
    if not os.path.isdir(index_dir):
        raise ResourceError(f"index {index_dir} not found; build it with `cq index --corpus FILE --out {index_dir}`")
    path = os.path.join(index_dir, MANIFEST)
    if os.path.exists(path):
        with open(path) as fh:
            return json.load(fh)
    if any(name.startswith("segments_") for name in os.listdir(index_dir)):
        return {"lucene": ".", "dense": None}  # a Pyserini/Anserini Lucene index built elsewhere
    raise ResourceError(f"{index_dir} is not a cq or Pyserini index (no {MANIFEST}, no Lucene segments); "
                        f"build one with `cq index --corpus FILE --out {index_dir}`")


def write_manifest(index_dir: str, manifest: dict) -> None:
    with open(os.path.join(index_dir, MANIFEST), "w") as fh:
        json.dump(manifest, fh, indent=2)
        fh.write("\n")
