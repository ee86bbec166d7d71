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
import threading
import time
from typing import Iterable

import orjson

from .. import progress
from ..errors import ResourceError
from . import generation, jvm
from .handles import async_map, top_docs_function
from .base import B, K1, SWAPPED, contents, rank, spread  # noqa: F401 (contents: its old home)
from .ranking import (parse_hits_array, anserini_order, anserini_ties, parse_hits, ranked_passages, tie_scores,  # noqa: F401
                      tie_scores_rows)

BUFFER_MB = 256  # Lucene's indexing buffer (MiB): within the heap `cq index` gives the JVM (jvm.DEFAULT_XMX)
NO_MORE_DOCS = 2**31 - 1  # Lucene's DocIdSetIterator.NO_MORE_DOCS
MAX_CLAUSES = 1 << 16  # distinct terms a BM25 query may have (the input's longest question is far below)
log = logging.getLogger("cqtools")


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


def build_lucene(passages: Iterable[dict], out_dir: str, threads: int, chunk: int = 100_000,
                 docstore=None, buffer_mb: int = BUFFER_MB) -> int:
    """Index passages with Anserini's IndexCollection (JsonCollection, raw stored). Returns the count.

    The passages are first written as Anserini's JSON collection (files of ``chunk`` passages beside
    ``out_dir``, removed after), then indexed by ``threads`` threads, with Lucene's in-memory buffer
    bounded at ``buffer_mb`` MiB (Anserini's default, 4096, is more than the heap `cq index` gives the JVM:
    a large corpus would fill the heap before the buffer flushed). With a
    :class:`~cqtools.retrieval.docstore.DocStoreWriter`, Lucene's document numbers are recorded in it
    afterwards, so searches never load stored documents.
    """
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
                "-storePositions", "-storeDocvectors", "-storeRaw", "-memoryBuffer", str(buffer_mb)] + \
            ([] if _debug() else ["-quiet"])
        log.info("bm25: Lucene indexes %d passages on %d threads", count, threads)
        started = time.monotonic()
        with java_stdout_to_stderr(), progress.ticker(lambda: f"bm25: Lucene indexing for "
                                                              f"{progress.clock(time.monotonic() - started)}, "
                                                              f"{_mib(out_dir)} MiB written so far"):
            indexer.main(args)
        if not os.path.isdir(out_dir) or not any(n.startswith("segments_") for n in os.listdir(out_dir)):
            raise ResourceError(f"Anserini did not write an index to {out_dir} (see its messages above)")
        if docstore is not None:
            docstore.add_docnums(_docnums(out_dir))
            docstore.set_meta("lucene", _commit_id(out_dir))
        return count
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _mib(path: str) -> int:
    total = 0
    for entry in os.scandir(path) if os.path.isdir(path) else ():
        with contextlib.suppress(OSError):
            total += entry.stat().st_size
    return total >> 20


def _docnums(index_dir: str):
    """(Lucene document number, passage id) for every document: one pass at index time, over the ids'
    doc values (Anserini stores each id as a binary doc value too), not the stored documents: those hold
    the raw passages, and reading them all would page the whole stored corpus in."""
    reader = jvm.open_reader(index_dir)
    try:
        for leaf in reader.leaves().toArray():
            base, values = leaf.docBase, leaf.reader().getBinaryDocValues("id")
            doc = values.nextDoc()
            while doc != NO_MORE_DOCS:
                yield base + doc, values.binaryValue().utf8ToString()
                doc = values.nextDoc()
    finally:
        reader.close()


def _commit_id(index_dir: str) -> str | None:
    reader = jvm.open_reader(index_dir)
    try:
        return generation.lucene_commit_id(reader)
    finally:
        reader.close()


class LuceneScorer:
    """Lucene's own BM25 hits for a batch of queries: Lucene's IndexSearcher with Anserini's analyzer,
    bag-of-words query and BM25 similarity, the batch mapped in a Java pool of ``threads`` workers
    (:func:`~.handles.async_map`), each query's hits read back as one string."""

    def __init__(self, reader, k1: float, b: float):
        self._searcher = jvm.autoclass("org.apache.lucene.search.IndexSearcher")(
            jvm.cast("org.apache.lucene.index.IndexReader", reader))
        self._searcher.setSimilarity(jvm.autoclass("org.apache.lucene.search.similarities.BM25Similarity")(
            float(k1), float(b)))
        self._analyzer = jvm.autoclass("io.anserini.analysis.DefaultEnglishAnalyzer").newDefaultInstance()
        self._generator = jvm.autoclass("io.anserini.search.query.BagOfWordsQueryGenerator")()
        self._pools = {}  # threads -> Java ForkJoinPool
        self._starts = {}  # (fetch depth, threads) -> async_map's (start, join)
        self._as_list = jvm.autoclass("java.util.Arrays").asList  # a Python list of str -> a Java List
        self._lock = threading.Lock()

    def start(self, queries: list[str], fetch: int, threads: int):
        """The Java future of the queries' hits, searched from now on in the pool."""
        return self._async(fetch, threads)[0].apply(self._as_list(*queries))

    def hits(self, queries: list[str], fetch: int, threads: int, started=None) -> list:
        """Each query's top ``fetch`` (doc numbers, float32 scores) in Lucene's order (``started``: the
        future :meth:`start` gave for these queries)."""
        future = started if started is not None else self.start(queries, fetch, threads)
        return [parse_hits_array(text) for text in self._async(fetch, threads)[1].apply(future)]

    def _async(self, fetch: int, threads: int):
        """:func:`async_map`'s (start, join) for this depth and pool size."""
        with self._lock:  # Java objects built once per depth / pool size, never by two threads at once (jnius crashes)
            key = fetch, threads
            if key not in self._starts:
                if threads not in self._pools:
                    self._pools[threads] = jvm.autoclass("java.util.concurrent.ForkJoinPool")(int(threads))
                function = top_docs_function(self._searcher, self._generator, self._analyzer, fetch)
                self._starts[key] = async_map(function, self._pools[threads])
            return self._starts[key]


class LuceneBM25:
    """BM25 over a Lucene index, scored exactly as Anserini's searcher scores it.

    With a docstore (every ``cq index``) a batch of queries is scored at once by a scorer, either
    Lucene itself (:class:`LuceneScorer`) or, with ``matrix`` (a :class:`~.matrix.MatrixScorer` of the
    index's BM25 matrix, written by ``cq index`` for a small corpus), numpy with Lucene's scores to the
    bit; the next batch is scored while Python handles this one (:meth:`prefetch`), and hits are read
    from SQLite. Without one (a Pyserini index built elsewhere, Pyserini's prebuilt ones) Anserini's
    SimpleSearcher is used and passages come from the stored raw documents.
    """

    def __init__(self, index_dir: str, k1: float = K1, b: float = B, docstore=None, matrix=None):
        self.index_dir = index_dir
        if not os.path.isdir(index_dir):
            raise ResourceError(f"Lucene index {index_dir} not found; build it with `cq index`")
        self.params = {"k1": k1, "b": b}
        self.docstore = docstore
        jvm.setup(heap=jvm.SEARCH_XMX, opts=jvm.SEARCH_OPTS)  # a small heap (CQ_JVM_XMX overrides), cheap JIT
        # a question of over 1,024 distinct terms is scored (Lucene's default refuses the query with an
        # exception; the BM25 matrix has no such limit, and both paths must agree)
        jvm.autoclass("org.apache.lucene.search.IndexSearcher").setMaxClauseCount(MAX_CLAUSES)
        if docstore is not None:
            try:
                reader = jvm.open_reader(index_dir)
            except jvm.java_exception() as err:  # its files went (a swap deleted this generation) or are not Lucene's
                raise ResourceError(SWAPPED.format(name=index_dir) + f" ({jvm.java_message(err)})") from None
            self._reader = reader
            self.commit = generation.lucene_commit_id(reader)
            self._matrix = matrix  # with a BM25 matrix (small indexes): scored in numpy, exactly
            self._scorer = matrix or LuceneScorer(reader, k1, b)
            self._ahead = []  # (queries, fetch depth, threads, future) from prefetch, the last two
            self._lock = threading.Lock()
            return
        searcher_class = jvm.autoclass("io.anserini.search.SimpleSearcher")
        with java_stdout_to_stderr():
            self._anserini = searcher_class(index_dir)
        self._anserini.set_bm25(float(k1), float(b))
        self._jlist = jvm.autoclass("java.util.ArrayList")

    def mixed(self) -> str | None:
        """Why the open Lucene index and passage store are not one build (documents spread over the
        index whose stored ids differ from the store's document-number map), or None."""
        if self.docstore is None:
            return None
        by_id = generation.mismatch(self.docstore, lucene_id=self.commit)
        if by_id:
            return by_id
        if self._matrix is not None and self._matrix.commit != self.commit:
            return f"the BM25 matrix is of Lucene commit {self._matrix.commit}, the Lucene index is commit {self.commit}"
        n = self._reader.maxDoc()
        stored = self._reader.storedFields()
        nums = spread(n)
        mapped = self.docstore.ids_of(nums)
        if self.docstore.documents() != n:
            return f"the passage store maps {self.docstore.documents()} documents, the Lucene index holds {n}"
        for num in nums:
            if stored.document(num).get("id") != mapped.get(num):
                return f"Lucene document {num} is {stored.document(num).get('id')!r}, the store says {mapped.get(num)!r}"
        return None

    def search(self, query: str, k: int) -> list[dict]:
        return self.batch_search([query], ["q"], k)["q"]

    def batch_search(self, queries: list[str], ids: list[str], k: int, threads: int = 1) -> dict[str, list[dict]]:
        if self.docstore is None:
            return self._anserini_batch(queries, ids, k, threads)
        scored = self._lucene_arrays(queries, k, threads)
        docs = self.docstore.by_docnums(sorted({num for nums, _ in scored for num in nums}))
        ties = tie_scores_rows([scores[:k] for _, scores in scored])  # in Anserini's order too (see ranked_passages)
        return {i: ranked_passages(nums, scores, docs, k, row)  # dicts made for the top k only
                for i, (nums, scores), row in zip(ids, scored, ties)}

    def prefetch(self, queries: list[str], k: int, threads: int = 1) -> None:
        """Start searching ``queries`` now and return at once: in the JVM, or from a BM25 matrix of
        :data:`~.matrix.THREADED_FROM` documents or more in Python workers (a smaller one: nothing ahead);
        the next :meth:`batch_search` of the same queries, ``k`` and ``threads`` takes their hits from it.
        The stream engine calls this with the next batch while the current one becomes passages and JSON
        (Python), so the search and Python run on two cores at once. Any other next call just searches
        afresh."""
        if self.docstore is None:
            return
        todo, fetch = [q for q in queries if q.strip()], k + 16
        future = self._scorer.start(todo, fetch, threads) if todo else None
        if future is not None:
            with self._lock:  # the batch being handled now may still be waiting for its own: keep two
                self._ahead = self._ahead[-1:] + [(todo, fetch, threads, future)]

    def _lucene_hits(self, queries: list[str], k: int, threads: int = 1) -> list[tuple[list[int], list[float]]]:
        """Each query's Lucene (doc numbers, scores) (see :meth:`_lucene_arrays`)."""
        return [(nums, scores.tolist()) for nums, scores in self._lucene_arrays(queries, k, threads)]

    def _lucene_arrays(self, queries: list[str], k: int, threads: int = 1) -> list:
        """Each query's Lucene (doc numbers, float32 scores), fetched past ``k`` until no exact score tie
        crosses the cut (Anserini breaks such ties by passage id, Lucene by doc number). The whole
        batch is scored at once: in the BM25 matrix when the index has one, else inside the JVM, in a
        Java parallel stream on a pool of ``threads`` workers."""
        fetch = k + 16
        out: list = [parse_hits_array("")] * len(queries)
        todo = [n for n, q in enumerate(queries) if q.strip()]
        while todo:
            hits = self._hits([queries[n] for n in todo], fetch, threads)
            again = []
            for n, hit in zip(todo, hits):
                nums, scores = out[n] = hit
                if len(nums) == fetch and scores[min(k, fetch) - 1] <= scores[-1]:
                    again.append(n)
            todo, fetch = again, fetch * 2
        return out

    def _hits(self, queries: list[str], fetch: int, threads: int) -> list:
        """Each query's top ``fetch`` (doc numbers, float32 scores) in Lucene's order, from :meth:`prefetch`
        when it started these."""
        with self._lock:
            future = next((ahead[3] for ahead in self._ahead if ahead[:3] == (queries, fetch, threads)), None)
            self._ahead = [ahead for ahead in self._ahead if ahead[3] is not future]
        return self._scorer.hits(queries, fetch, threads, future)

    def _anserini_batch(self, queries, ids, k, threads):
        jq, jid = self._jlist(), self._jlist()
        for q, i in zip(queries, ids):
            jq.add(q)
            jid.add(i)
        results = self._anserini.batch_search(jq, jid, int(k), int(threads))
        return {i: self._anserini_hits(results.get(i) or [], k) for i in ids}

    def _anserini_hits(self, java_hits, k: int) -> list[dict]:
        hits = []
        for h in java_hits:
            doc = split_contents(h.docid, self._raw(h.docid, h.lucene_document.get("raw")))
            doc["score"] = float(h.score)
            hits.append(doc)
        return rank(hits, k)

    def docs(self, docids: list[str]) -> dict[str, dict]:
        """Passages by id (for dense hits, which carry ids only)."""
        if self.docstore is not None:
            return self.docstore.by_ids(docids)
        return {docid: split_contents(docid, self._raw(docid, self._anserini.doc_raw(docid))) for docid in docids}

    def _raw(self, docid: str, raw: str | None) -> str:
        if raw is None:
            raise ResourceError(f"passage {docid} has no stored text in the Lucene index {self.index_dir} (a '-slim' "
                                f"prebuilt index?); use an index that stores raw documents (cq index does)")
        return raw


def _debug() -> bool:
    from ..config import RunConfig

    return RunConfig.from_env().debug
