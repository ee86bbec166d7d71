"""Anserini's BM25 scores from a term-by-document matrix held in memory: the arithmetic of Lucene 9.9's
BM25Similarity over Anserini's bag-of-words queries, redone in numpy/scipy for a whole batch of queries.

Why: on a small corpus Lucene spends most of a query in its per-query machinery (weights, scorers, a
heap of hits, run by the JVM's cheapest JIT tier in a short process); scoring every matching document
of a batch at once in one sparse product is what bm25s does, and is 3-4x less CPU here (measured:
docs/benchmarks/retrieve.md). Lucene stays the engine for what it alone does well: large corpora,
whose postings stay on disk, memory-mapped.

The scores are Lucene's, bit for bit (checked against Lucene on every query of the benchmark, and by
tests/test_retrieve.py on the fixtures), because every step is Lucene's in the same float32 arithmetic:

* a term's weight: ``idf = (float) log(1 + (N - df + 0.5) / (df + 0.5))`` (Java's ``Math.log``, taken at
  build time), times the query's boost, the term's count in the query (BagOfWordsQueryGenerator's
  ``BoostQuery``);
* ``normInverse = 1f / (k1 * ((1 - b) + b * LENGTH_TABLE[norm] / avgdl))`` from the document's
  one-byte length norm (SmallFloat's, decoded) and ``avgdl = (float) (sumTotalTermFreq / docCount)``;
* a term's score ``weight - weight / (1f + freq * normInverse)``, each operation rounded to float32;
* a document's score: the terms' float32 scores summed in double, then cast to float. The double sum
  of a few float32 values of this size is exact, so the order of the sum (Lucene's scorers') cannot
  change it; a boost that is a power of two scales a term's score exactly, so such terms take part
  in the sparse product with the boost as its factor, and only other boosts (a word three times in
  a question) are scored apart;
* hits in Lucene's order: score desc, document number asc.

The matrix comes from the index's own analysis: every passage is run through Anserini's analyzer in
the JVM (one call for a batch of passages), counted here, and compared with the Lucene index before
it is written (collection statistics, every term's document and term frequencies, every document's
norm); any difference and no matrix is written (searches then use Lucene).
"""
from __future__ import annotations

import logging
import os

from ..errors import ResourceError
from . import jvm

log = logging.getLogger("cqtools")

FILE = "bm25_matrix.npz"
FIELD = "contents"
# Documents from which a batch is scored by Python threads (the next batch while this one is written, or a
# batch in parts): scipy's product and numpy's sorts release the GIL, but on a small corpus a batch's scoring
# is mostly Python calls that hold it (measured, --threads 2, file input: 9.5k passages 3.5 -> 3.8 s with
# threads, 100k 10.0 -> 8.2 s, 250k 19.5 -> 13.1 s; docs/benchmarks/retrieve.md)
THREADED_FROM = 50_000


class Analysis:
    """Texts -> token lists, a whole batch in one JVM call (a Java parallel stream)."""

    def __init__(self, analyzer):
        from .handles import analyze_function, map_all, proxy

        self._map = proxy("java.util.function.Function", map_all(analyze_function(analyzer)))
        self._as_list = jvm.autoclass("java.util.Arrays").asList

    def __call__(self, texts: list[str]) -> list[list[str]]:
        if not texts:
            return []
        return [text.split(" ") if text else [] for text in self._map.apply(self._as_list(*texts))]


def postings(lucene_dir: str) -> int:
    """How many (term, passage) postings the Lucene index at ``lucene_dir`` has: the matrix's non-zeros."""
    reader = jvm.open_reader(lucene_dir)
    try:
        total = 0
        for leaf in reader.leaves().toArray():
            terms = leaf.reader().terms(FIELD)
            total += int(terms.getSumDocFreq()) if terms is not None else 0
        return total
    finally:
        reader.close()


def build(lucene_dir: str, store, path: str, chunk: int = 5_000) -> str | None:
    """Write the matrix of the Lucene index at ``lucene_dir`` (passages from the read-only passage
    ``store``, best opened without a cache) to ``path``; returns None, or why none was written (no
    passage has a term, or the analysis did not reproduce the index). ``chunk`` passages are analysed
    at a time."""
    import numpy as np
    import scipy.sparse as sp

    from .base import contents
    from .generation import lucene_commit_id

    reader = jvm.open_reader(lucene_dir)
    try:
        analysis = Analysis(jvm.autoclass("io.anserini.analysis.DefaultEnglishAnalyzer").newDefaultInstance())
        n, vocab = reader.maxDoc(), {}
        terms, docs, counts, lengths = [], [], [], np.zeros(n, dtype=np.int64)
        for start in range(0, n, chunk):
            nums = list(range(start, min(n, start + chunk)))
            passages = store.by_docnums(nums)
            tokens = analysis([contents(passages[num]) for num in nums])
            lengths[start:start + len(nums)] = [len(t) for t in tokens]
            ids = np.fromiter((vocab.setdefault(t, len(vocab)) for toks in tokens for t in toks), dtype=np.int64)
            doc = np.repeat(np.arange(start, start + len(nums), dtype=np.int64), lengths[start:start + len(nums)])
            keys, count = np.unique(doc << 32 | ids, return_counts=True)
            terms.append((keys & 0xFFFFFFFF).astype(np.int32))
            docs.append((keys >> 32).astype(np.int32))
            counts.append(count.astype(np.float32))
        matrix = sp.csr_matrix((np.concatenate(counts),
                                (np.concatenate(terms), np.concatenate(docs))), shape=(len(vocab), n))
        words = list(vocab)
        small_float = jvm.autoclass("org.apache.lucene.util.SmallFloat")
        norm_of = {int(length): small_float.intToByte4(int(length)) & 0xFF for length in np.unique(lengths)}
        norms = np.array([norm_of[int(length)] for length in lengths], dtype=np.uint8)
        stats = _searcher(reader).collectionStatistics(FIELD)
        if stats is None:  # Lucene's answer when no document has a term
            return "no passage has a term once analysed (nothing to score)"
        why = _differs(reader, stats, matrix, words, lengths, norms)
        if why:
            return f"the analysis did not reproduce the index: {why}"
        doc_freq = np.diff(matrix.indptr)
        math = jvm.autoclass("java.lang.Math")
        idf_of = {int(df): math.log(1 + (stats.docCount() - int(df) + 0.5) / (int(df) + 0.5))
                  for df in np.unique(doc_freq)}
        table = [small_float.byte4ToInt(i - 256 if i > 127 else i) for i in range(256)]
        tmp = f"{path}.tmp-{os.getpid()}.npz"
        np.savez(tmp, words=np.frombuffer("\n".join(words).encode(), dtype=np.uint8),
                 indptr=matrix.indptr.astype(np.int64), docs=matrix.indices.astype(np.int32),
                 freqs=matrix.data.astype(np.float32), norms=norms,
                 idf=np.array([idf_of[int(df)] for df in doc_freq], dtype=np.float64).astype(np.float32),
                 length_table=np.array(table, dtype=np.float32),
                 stats=np.array([stats.docCount(), stats.sumTotalTermFreq()], dtype=np.int64),
                 commit=np.array(lucene_commit_id(reader) or ""))
        os.replace(tmp, path)
        return None
    finally:
        reader.close()


def _searcher(reader):
    return jvm.autoclass("org.apache.lucene.search.IndexSearcher")(jvm.cast("org.apache.lucene.index.IndexReader",
                                                                             reader))


def _differs(reader, stats, matrix, words: list[str], lengths, norms) -> str | None:
    """Why the counted matrix is not the Lucene index's (collection ``stats``, every term's document
    and term frequencies, every document's norm), or None."""
    import numpy as np

    ours = (int((lengths > 0).sum()), int(lengths.sum()), int(matrix.nnz))
    theirs = (stats.docCount(), stats.sumTotalTermFreq(), stats.sumDocFreq())
    if ours != theirs:
        return f"(documents, tokens, postings) {ours} counted, {theirs} in the Lucene index"
    term = jvm.autoclass("org.apache.lucene.index.Term")
    doc_freq, term_freq = np.diff(matrix.indptr).tolist(), np.asarray(matrix.sum(axis=1)).ravel().tolist()
    for word, df, ttf in zip(words, doc_freq, term_freq):
        t = term(FIELD, word)
        if (reader.docFreq(t), reader.totalTermFreq(t)) != (df, ttf):
            return f"term {word!r}: (df, ttf) ({df}, {ttf}) counted, " \
                   f"({reader.docFreq(t)}, {reader.totalTermFreq(t)}) in the Lucene index"
    values = jvm.autoclass("org.apache.lucene.index.MultiDocValues").getNormValues(reader, FIELD)
    for num in np.flatnonzero(lengths).tolist():
        if not values.advanceExact(num) or values.longValue() & 0xFF != norms[num]:
            return f"document {num}: norm {norms[num]} counted, another in the Lucene index"
    return None


MEMBERS = ("words", "indptr", "docs", "freqs", "norms", "idf", "length_table", "stats", "commit")


def _load(path: str) -> dict:
    """The arrays of a matrix file, checked for shape; a damaged file is a one-line error."""
    import zipfile
    import zlib

    import numpy as np

    try:
        with np.load(path) as z:
            data = {name: z[name] for name in MEMBERS}
    except (ValueError, KeyError, EOFError, zipfile.BadZipFile, zlib.error) as err:
        raise ResourceError(f"BM25 matrix {path} cannot be read ({type(err).__name__}: {err}); rebuild the index "
                            f"with `cq index --overwrite`, or search with --bm25-scorer lucene") from None
    terms = int(data["words"].size > 0) + int(bytes(data["words"]).count(b"\n"))
    shapes = (len(data["indptr"]) - 1 == terms == len(data["idf"]), int(data["indptr"][-1]) == len(data["docs"])
              == len(data["freqs"]), len(data["length_table"]) == 256, len(data["stats"]) == 2)
    if not all(shapes) or (len(data["docs"]) and int(data["docs"].max()) >= len(data["norms"])):
        raise ResourceError(f"BM25 matrix {path} is damaged (its arrays do not fit together); rebuild the index "
                            f"with `cq index --overwrite`, or search with --bm25-scorer lucene")
    return data


class Bm25Matrix:
    """The matrix of one index, scored with ``k1`` and ``b``: :meth:`search` gives what Lucene's
    IndexSearcher gives for the same queries (see the module's docstring)."""

    def __init__(self, path: str, k1: float, b: float):
        import numpy as np
        import scipy.sparse as sp

        data = _load(path)  # an OSError (the file gone: a swap) is the caller's to retry
        f32 = np.float32
        self.commit = str(data["commit"]) or None
        self.vocab = {word: i for i, word in enumerate(bytes(data["words"]).decode().split("\n"))} \
            if len(data["words"]) else {}
        self.indptr, self.docs, self.freqs, self.idf = data["indptr"], data["docs"], data["freqs"], data["idf"]
        doc_count, sum_ttf = (int(x) for x in data["stats"])
        self.n = len(data["norms"])
        k1, b = f32(k1), f32(b)
        avgdl = f32(sum_ttf / float(doc_count)) if doc_count else f32(1)
        with np.errstate(divide="ignore"):  # k1 = 0 or b = 1 with a zero length: an infinite inverse, as in Java
            cache = (f32(1) / (k1 * ((f32(1) - b) + b * data["length_table"] / avgdl))).astype(f32)
        self.norm_inverse = cache[data["norms"]]
        scores = self._term_scores(np.repeat(self.idf, np.diff(self.indptr)), slice(None))
        self.scores = sp.csr_matrix((scores.astype(np.float64), self.docs, self.indptr), shape=(len(self.vocab), self.n))
        # a term score that rounds to 0 (k1 in the tens of millions) is a match Lucene keeps and a sparse
        # product drops: such a matrix is not used (LuceneBM25 scores with Lucene instead)
        self.exact = bool(scores.all())
        self.threaded = self.n >= THREADED_FROM

    def _term_scores(self, weight, span):
        """Lucene's ``weight - weight / (1f + freq * normInverse)`` for the postings in ``span``, in float32."""
        import numpy as np

        one = np.float32(1)
        return weight - weight / (one + self.freqs[span] * self.norm_inverse[self.docs[span]])

    def search(self, token_lists: list[list[str]], fetch: int) -> list[tuple[list[int], object]]:
        """Each query's top ``fetch`` hits as (document numbers, float32 scores), in Lucene's order."""
        import numpy as np
        import scipy.sparse as sp

        rows, cols, boosts, extra = [], [], [], []
        for q, tokens in enumerate(token_lists):
            counts: dict[str, int] = {}
            for token in tokens:
                counts[token] = counts.get(token, 0) + 1
            for token, count in counts.items():
                term = self.vocab.get(token)
                if term is None:
                    continue
                if count & (count - 1) == 0:  # a power of two: it scales the score exactly
                    rows.append(q)
                    cols.append(term)
                    boosts.append(float(count))
                else:
                    extra.append((q, term, np.float32(count) * self.idf[term]))
        nq = len(token_lists)
        summed = sp.csr_matrix((boosts, (rows, cols)), shape=(nq, len(self.vocab))) @ self.scores
        if extra:
            summed = summed + self._boosted(extra, nq)
        return self._top(summed, fetch)

    def _boosted(self, extra: list, nq: int):
        """The scores of terms whose boost is no power of two, as a sparse (queries x documents) matrix."""
        import numpy as np
        import scipy.sparse as sp

        rows, cols, values = [], [], []
        for q, term, weight in extra:
            span = slice(self.indptr[term], self.indptr[term + 1])
            rows.append(np.full(span.stop - span.start, q))
            cols.append(self.docs[span])
            values.append(self._term_scores(weight, span))
        return sp.csr_matrix((np.concatenate(values).astype(np.float64), (np.concatenate(rows), np.concatenate(cols))),
                             shape=(nq, self.n))

    @staticmethod
    def _top(summed, fetch: int) -> list:
        import numpy as np

        bounds, docs, scores = summed.indptr.tolist(), summed.indices, summed.data.astype(np.float32)
        out = []
        for start, end in zip(bounds, bounds[1:]):
            nums, values = docs[start:end], scores[start:end]
            if end - start > fetch:  # all documents scoring at least the fetch-th best score
                keep = values >= np.partition(values, end - start - fetch)[end - start - fetch]
                nums, values = nums[keep], values[keep]
            order = np.lexsort((nums, -values))[:fetch]
            out.append((nums[order].tolist(), values[order]))
        return out


class MatrixScorer:
    """Lucene's BM25 hits for a batch of queries from an index's :class:`Bm25Matrix`: the queries are
    analysed in the JVM (one call), scored in numpy; from :data:`THREADED_FROM` documents a batch is
    scored in parts by Python threads, and the next batch by a worker of its own (:meth:`start`)."""

    def __init__(self, matrix: Bm25Matrix, analyzer):
        import threading

        self.matrix, self.commit, self.threaded = matrix, matrix.commit, matrix.threaded
        self._analysis = Analysis(analyzer)
        self._workers = {}  # threads -> Python threads scoring the matrix (0: the one scoring ahead)
        self._lock = threading.Lock()

    def start(self, queries: list[str], fetch: int, threads: int):
        """A future of the queries' hits, or None when this matrix is too small to gain from scoring ahead.
        They are analysed here (the JVM, this thread) and scored by a worker in threads - 1 parts: one core
        stays with this thread, which turns the batch before into JSON."""
        if not self.threaded:
            return None
        return self._worker(0).submit(self._score, self._analysis(queries), fetch, max(1, threads - 1))

    def hits(self, queries: list[str], fetch: int, threads: int, started=None) -> list:
        """Each query's top ``fetch`` (doc numbers, float32 scores) in Lucene's order (``started``: the
        future :meth:`start` gave for these queries)."""
        return started.result() if started is not None else self._score(self._analysis(queries), fetch, threads)

    def _score(self, tokens: list[list[str]], fetch: int, threads: int) -> list:
        """The hits of analysed queries, in up to ``threads`` parts scored at once when the matrix is large
        enough (scipy's product, numpy's partition and sort release the GIL)."""
        if not self.threaded or min(threads, len(tokens)) <= 1:
            return self.matrix.search(tokens, fetch)
        size = -(-len(tokens) // min(threads, len(tokens)))
        parts = [tokens[at:at + size] for at in range(0, len(tokens), size)]
        return [hit for part in self._worker(threads).map(lambda part: self.matrix.search(part, fetch), parts)
                for hit in part]

    def _worker(self, threads: int):
        """Python threads: ``threads`` of them, or (0) the one that scores a batch ahead (apart, so that it
        never waits for a pool it occupies)."""
        from concurrent.futures import ThreadPoolExecutor

        with self._lock:
            if threads not in self._workers:
                self._workers[threads] = ThreadPoolExecutor(max(1, threads), thread_name_prefix="cq-bm25")
            return self._workers[threads]


def open_scorer(path: str, k1: float, b: float) -> MatrixScorer | None:
    """The scorer of the matrix file at ``path`` with ``k1`` and ``b``, or None (with a warning) when some of
    its term scores round to 0, which a sparse product would drop (such an index is scored by Lucene)."""
    matrix = Bm25Matrix(path, k1, b)
    if not matrix.exact:
        log.warning("BM25: with k1=%s and b=%s some term scores round to 0, which the BM25 matrix cannot hold; "
                    "scoring with Lucene", k1, b)
        return None
    jvm.setup(heap=jvm.SEARCH_XMX, opts=jvm.SEARCH_OPTS)  # as LuceneBM25's (the first call decides)
    return MatrixScorer(matrix, jvm.autoclass("io.anserini.analysis.DefaultEnglishAnalyzer").newDefaultInstance())
