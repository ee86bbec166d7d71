"""`cq indexes`: Pyserini's prebuilt indexes (the names `cq retrieve --index NAME` takes), from the
installed Pyserini's own registry, and whether each is in Pyserini's cache."""
from __future__ import annotations

import click

from .listing import emit, listing_options


@click.command(name="indexes")
@click.option("--kind", type=click.Choice(["sparse", "dense", "impact", "lucene-hnsw", "lucene-flat"]), multiple=True,
              help="Only these kinds (repeatable); cq retrieve reads sparse (BM25) and dense (faiss) ones.")
@click.option("--match", metavar="TEXT", help="Only names containing TEXT (case-insensitive).")
@listing_options
def cli(kind, match, as_json, as_table):
    """List Pyserini's prebuilt indexes: a table on a terminal, else one JSON object per line: {name, kind,
    documents, bytes (compressed download), cached (already in Pyserini's cache), description}. Pyserini
    reads half of its registry from Anserini, so this starts the JVM (a few seconds); nothing is
    downloaded.

    \b
    Example:
      cq indexes --match wikipedia --kind sparse
      cq retrieve --index wikipedia-dpr-100w --hits 100 < questions.jsonl > bm25.jsonl
    """
    import os

    from ..retrieval import prebuilt

    registry = prebuilt._registry()  # first: it sets up the JVM that pyserini.util's import needs
    home = prebuilt.cache_home()
    rows = []
    for k, table in registry:
        if kind and k not in kind:
            continue
        for name, info in table.items():
            if match and match.lower() not in name.lower():
                continue
            rows.append({"name": name, "kind": k, "documents": info.get("documents"),
                         "bytes": info.get("size compressed (bytes)"),
                         "cached": os.path.isdir(os.path.join(home, prebuilt.cache_dir_name(info))) if info.get("md5")
                         else False, "description": info.get("description")})
    emit(rows, ["name", "kind", "documents", "bytes", "cached", "description"], as_json, as_table)
