"""BM25 over a Pyserini (Anserini) Lucene index, through Anserini's classes directly.

Going through ``pyserini.pyclass`` rather than ``pyserini.search.lucene`` avoids importing torch
and transformers (10-13 s) in a command that only needs Lucene (~2 s with the JVM start).
"""
from __future__ import annotations

import contextlib
import logging
import os
import shutil
import tempfile
from typing import Iterable

import orjson

from ..errors import ResourceError
from . import jvm
from .base import rank

log = logging.getLogger("cqtools")


def contents(passage: dict) -> str:
    """Pyserini's convention for Wikipedia passages (as in its wikipedia-dpr index): title, newline, text."""
    return f"{passage['title']}\n{passage['text']}" if passage.get("title") else passage["text"]


def split_contents(docid: str, raw: str) -> dict:
    """Back from a stored raw document to {id, title, text}."""
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError:
        doc = {"contents": raw}
    if "text" in doc:
        return {"id": docid, "title": doc.get("title", ""), "text": doc["text"]}
    title, sep, text = doc.get("contents", "").partition("\n")
    if not sep:
        title, text = "", title
    return {"id": docid, "title": title.strip('"'), "text": text}


@contextlib.contextmanager
def java_stdout_to_stderr():
    """Anserini logs on the process's stdout (fd 1); point fd 1 at stderr meanwhile."""
    import sys

    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)


def build_lucene(passages: Iterable[dict], out_dir: str, threads: int, chunk: int = 200_000) -> int:
    """Index passages with Anserini's IndexCollection (JsonCollection, raw stored). Returns the count."""
    tmp = tempfile.mkdtemp(prefix="cq-jsoncollection-", dir=os.path.dirname(os.path.abspath(out_dir)) or None)
    count = 0
    try:
        fh = None
        for passage in passages:
            if count % chunk == 0:
                if fh:
                    fh.close()
                fh = open(os.path.join(tmp, f"docs{count // chunk:05d}.jsonl"), "wb")
            fh.write(orjson.dumps({"id": passage["id"], "contents": contents(passage)}) + b"\n")
            count += 1
        if fh:
            fh.close()
        if count == 0:
            raise ResourceError("the corpus has no passages")
        indexer = jvm.autoclass("io.anserini.index.IndexCollection")
        args = ["-collection", "JsonCollection", "-input", tmp, "-index", out_dir,
                "-generator", "DefaultLuceneDocumentGenerator", "-threads", str(threads),
                "-storePositions", "-storeDocvectors", "-storeRaw"]
        with java_stdout_to_stderr():
            indexer.main(args)
        if not os.path.isdir(out_dir) or not any(n.startswith("segments_") for n in os.listdir(out_dir)):
            raise ResourceError(f"Anserini did not write an index to {out_dir} (see its messages above)")
        return count
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


class LuceneBM25:
    """BM25 searcher; also the document store every other backend reads passages from."""

    def __init__(self, index_dir: str, k1: float = 0.9, b: float = 0.4):
        if not os.path.isdir(index_dir):
            raise ResourceError(f"Lucene index {index_dir} not found; build it with `cq index`")
        searcher_class = jvm.autoclass("io.anserini.search.SimpleSearcher")
        with java_stdout_to_stderr():
            self._searcher = searcher_class(index_dir)
        self._searcher.set_bm25(float(k1), float(b))
        self._jlist = jvm.autoclass("java.util.ArrayList")
        self.params = {"k1": k1, "b": b}

    def _hits(self, java_hits, k: int) -> list[dict]:
        hits = []
        for h in java_hits:
            doc = split_contents(h.docid, h.lucene_document.get("raw"))
            doc["score"] = float(h.score)
            hits.append(doc)
        return rank(hits, k)

    def search(self, query: str, k: int) -> list[dict]:
        return self._hits(self._searcher.search(query, int(k)), k)

    def batch_search(self, queries: list[str], ids: list[str], k: int, threads: int = 1) -> dict[str, list[dict]]:
        jq, jid = self._jlist(), self._jlist()
        for q, i in zip(queries, ids):
            jq.add(q)
            jid.add(i)
        results = self._searcher.batch_search(jq, jid, int(k), int(threads))
        return {i: self._hits(results.get(i) or [], k) for i in ids}

    def docs(self, docids: list[str]) -> dict[str, dict]:
        """Passages by id (for dense hits, which carry ids only)."""
        out = {}
        for docid in docids:
            raw = self._searcher.doc_raw(docid)
            if raw is not None:
                out[docid] = split_contents(docid, raw)
        return out
