"""Dense retrieval: a faiss inner-product index stored in Pyserini's layout (``index`` +
``docid``), so Pyserini's ``FaissSearcher`` can open it too, over vectors from either

* a sentence-transformers model (one encoder for questions and passages, L2-normalised), or
* DPR's two encoders (a context encoder for passages, a question encoder for questions; [CLS]
  vectors, raw inner product, no normalisation, as DPR and Pyserini's DPR indexes use).

Search uses faiss directly: importing ``pyserini.search.faiss`` costs 10-13 s and adds nothing
for a flat inner-product index.
"""
from __future__ import annotations

import logging
import os

from ..errors import ResourceError
from ..models import resolve
from ..models.roles import role
from . import generation
from .base import rank, spread
from .base import contents
from .faiss_index import DEFAULT_FACTORY, DEFAULT_TRAIN_SAMPLE, Knobs, build_faiss, built_info, calibrate, \
    check_factory

log = logging.getLogger("cqtools")

DEFAULT_ENCODER = role("encoder").default


def encoder_device(config) -> str:
    """The query encoder's device: the run configuration's (``auto``: cpu, as before)."""
    return "cpu" if config.device == "auto" else config.device


def load_encoder(name: str, device: str = "cpu", role: str | None = None, config=None):
    """(resolved model, encoder) for dense retrieval from the model layer, loaded under the run configuration
    ``config`` (None: one from the environment): a DPR encoder when the checkpoint is one (``role``: "question" or "context"
    checks which), else the cached sentence-transformers bi-encoder (the index manifest records which model built
    the vectors)."""
    from ..models import dpr
    from ..models.load import load_encoder as load_bi_encoder

    model = resolve(name, announce=False, config=config)
    if dpr.dpr_kind(model):
        expect = {"question": dpr.QUESTION, "context": dpr.CONTEXT}.get(role or "")
        return model, dpr.load_dpr(name, device, expect, config)
    if model.fmt not in ("sentence-transformers", "hf"):
        raise ResourceError(f"dense encoder {name} resolved to a {model.fmt} copy; pass a sentence-transformers "
                            f"model or a DPR encoder (a hub id or a local directory)")
    return model, load_bi_encoder(name, device, config)


class PassageEncoder:
    """The passage side of a dense index, loaded once: :meth:`encode_chunk` gives a chunk of passages' vectors and
    ``info`` what the index manifest records of it (encoder, source, dim, normalised or not, DPR's question encoder).

    A sentence-transformers ``encoder`` encodes title, newline, text, L2-normalised; a DPR context encoder encodes
    (title, text) pairs unnormalised, and ``query_encoder`` (default: its pair by DPR's naming) is recorded as the
    encoder of questions. The encoders load under the run configuration ``config`` (None: one from the
    environment)."""

    def __init__(self, encoder: str, device: str = "cpu", query_encoder: str | None = None, config=None):
        from ..models import dpr

        model, self.st = load_encoder(encoder, device, role="context", config=config)
        self.is_dpr = isinstance(self.st, dpr.DPREncoder)
        if self.is_dpr:
            query_encoder = query_encoder or dpr.question_encoder_for(encoder)
            load_encoder(query_encoder, device, role="question", config=config)  # fail now, not after hours
        elif query_encoder and query_encoder != encoder:
            raise ResourceError(f"--query-encoder is for DPR context encoders; {encoder} encodes questions itself")
        self.info = {"encoder": model.name, "encoder_source": model.source, "dim": _dimension(self.st),
                     "normalized": not self.is_dpr}
        if config is not None and config.padded_batches:  # vectors of padded batches differ in their last bits:
            self.info["padded_batches"] = True  # shards encoded both ways are refused as another encoder's
        if self.is_dpr:
            qm = resolve(query_encoder, announce=False, config=config)
            self.info |= {"kind": "dpr", "query_encoder": qm.path if qm.source == "local" else qm.name,
                          "pooling": "cls", "similarity": "inner product"}

    def encode_chunk(self, passages: list[dict], batch_size: int, show_progress: bool = False):
        """The passages' vectors: a C-contiguous float32 array, one row a passage."""
        import numpy as np

        if self.is_dpr:
            vectors = self.st.encode([p["text"] for p in passages], titles=[p.get("title") or "" for p in passages],
                                     batch_size=batch_size)
        else:
            vectors = self.st.encode([contents(p) for p in passages], batch_size=batch_size,
                                     normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=show_progress)
        return np.ascontiguousarray(vectors, dtype="float32")


def build_dense(corpus: str, out_dir: str, encoder: str, batch_size: int | None = None, device: str = "cpu",
                chunk: int | None = None, query_encoder: str | None = None, config=None,
                faiss_index: str = DEFAULT_FACTORY, train_sample: int = DEFAULT_TRAIN_SAMPLE,
                expected: int | None = None) -> dict:
    """Encode the passages of the file ``corpus`` into a faiss index of type ``faiss_index`` (:mod:`.faiss_index`;
    Flat: an IndexFlatIP) in ``out_dir``; returns manifest info. The same code as `cq encode` then `cq index
    --vectors` (:mod:`.vectors`): the chunks' vectors are written to files in a temporary directory inside
    ``out_dir`` (removed after), then added in corpus order (a trained type reads them twice: a sample, then all),
    so a one-process index and one merged from shards are the same bits. ``batch_size`` and ``chunk`` default as
    `cq encode`'s flags do; ``expected``: the passage count when known (an IVF's list count is checked on it)."""
    import shutil

    from . import vectors

    settings = vectors.EncodeSettings()
    passage_encoder = PassageEncoder(encoder, device, query_encoder, config)
    check_factory(faiss_index, passage_encoder.info["dim"], expected, train_sample)  # a bad type costs no encoding
    os.makedirs(out_dir, exist_ok=True)
    tmp = os.path.join(out_dir, ".vectors")
    try:
        vectors.encode_shard(corpus, tmp, (0, 1), passage_encoder, chunk or settings.chunk,
                             batch_size or settings.batch_size, desc="dense: encoding")
        return index_vectors(tmp, corpus, out_dir, faiss_index=faiss_index, train_sample=train_sample)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def index_vectors(vectors_dir: str, corpus: str, out_dir: str, encoder: str | None = None,
                  query_encoder: str | None = None, faiss_index: str = DEFAULT_FACTORY,
                  train_sample: int = DEFAULT_TRAIN_SAMPLE) -> dict:
    """The faiss index (``index``, of type ``faiss_index``) and its row ids (``docid``) in ``out_dir`` from the
    vector files of ``vectors_dir``, once they are checked to be every chunk of ``corpus`` (its ids in order) by one
    encoder (``encoder``/``query_encoder``: the ones asked for, None: any); returns manifest info. The type's
    list count is checked against its training sample by :func:`~.faiss_index.build_faiss`; a type with a search
    knob (HNSW's efSearch, IVF's nprobe) records the one :func:`~.faiss_index.calibrate` chose."""
    import faiss

    from ..data.formats import iter_corpus
    from .vectors import VectorSet

    found = VectorSet(vectors_dir, corpus)
    found.check(encoder, query_encoder)
    os.makedirs(out_dir, exist_ok=True)
    count = found.write_docid(iter_corpus(corpus), os.path.join(out_dir, "docid"))
    index = build_faiss(faiss_index, found.info["dim"], found.chunks, train_sample)
    calibrated = calibrate(index, found.chunks)
    faiss.write_index(index, os.path.join(out_dir, "index"))
    return {**found.info, "passages": count, **built_info(index, faiss_index, train_sample),
            **({"calibrated": calibrated} if calibrated else {})}


def encoder_dimension(name: str, device: str = "cpu", config=None) -> int:
    """The dimension of the passage vectors encoder ``name`` gives (it loads once per process)."""
    return _dimension(load_encoder(name, device, role="context", config=config)[1])


def _dimension(encoder) -> int:
    return int((getattr(encoder, "get_embedding_dimension", None) or encoder.get_sentence_embedding_dimension)())


class DenseSearcher:
    """Inner-product search over a faiss index. Questions are L2-normalised for indexes built
    normalised (sentence-transformers ones), and left as the encoder gives them for DPR ones."""

    def __init__(self, dense_dir: str, encoder: str, docstore, device: str = "cpu", batch_size: int = 64,
                 normalize: bool = True, config=None, ef_search: int | None = None, nprobe: int | None = None,
                 factory: str | None = None, calibrated: dict | None = None):
        """``config``: the run configuration the query encoder loads under (None: one from the environment);
        ``ef_search`` / ``nprobe``: HNSW's and IVF's search knobs (None: the one ``cq index`` calibrated, the
        manifest's ``calibrated``, else the type's default; one the index has not is an error naming its type,
        ``factory`` the string it was built from when known; :class:`~.faiss_index.Knobs`)."""
        path = os.path.join(dense_dir, "index")
        if not os.path.exists(path):
            raise ResourceError(f"no dense index in {dense_dir}; rebuild with `cq index --dense`")
        files = generation.DenseFiles(dense_dir)  # index, docid and generation of one build
        try:
            self.index = files.read_index()
            self.docids = (files.text("docid") or "").split("\n")[:-1]  # one id a line, each ended by \n
            self.generation = (files.text(generation.FILE) or "").strip() or None
        finally:
            files.close()
        self.knobs = Knobs(self.index, ef_search, nprobe, calibrated, factory)
        self.model, self.encoder = load_encoder(encoder, device, role="question", config=config)
        if _dimension(self.encoder) != self.index.d:
            raise ResourceError(f"query encoder {encoder} gives {_dimension(self.encoder)}-"
                                f"dimensional vectors but the index in {dense_dir} holds {self.index.d}-dimensional "
                                f"ones; pass the encoder the index was built for (--encoder)")
        self.docstore = docstore
        self.batch_size = batch_size
        self.normalize = normalize
        self.params = {"encoder": self.model.name, **self.knobs.params}

    def mixed(self) -> str | None:
        """Why the open faiss index and passage store are not one build (its row ids, spread over
        the index, missing from the store, or another count), or None."""
        store = getattr(self.docstore, "docstore", None)
        if store is None:
            return None
        by_id = generation.mismatch(store, dense_id=getattr(self, "generation", None), dense=True)
        if by_id:
            return by_id
        sample = [self.docids[i] for i in spread(len(self.docids))]
        if store.passages() != len(self.docids) or store.known(sample) != len(sample):
            return f"the dense index's {len(self.docids)} passages are not the passage store's {store.passages()}"
        return None

    def search(self, query: str, k: int) -> list[dict]:
        return self.batch_search([query], ["q"], k)["q"]

    def batch_search(self, queries: list[str], ids: list[str], k: int, threads: int = 1) -> dict[str, list[dict]]:
        """Each query is encoded and searched alone (the encoder runs one text per forward pass),
        so a query's hits do not depend on the batch it came in."""
        import faiss
        import numpy as np

        faiss.omp_set_num_threads(max(1, int(threads)))
        vectors = self.encoder.encode(queries, batch_size=self.batch_size, normalize_embeddings=self.normalize,
                                      convert_to_numpy=True, show_progress_bar=False)
        vectors = np.ascontiguousarray(vectors, dtype="float32")
        k = min(k, self.index.ntotal)
        self.knobs.apply(k)
        # one query per faiss call: from 20 queries on faiss computes the inner products with a
        # BLAS matrix product whose sums differ in the last bits from the one-query loop, which
        # could reorder near-tied passages depending on the batch a query came in
        found = [self.index.search(vectors[i:i + 1], k) for i in range(len(queries))]
        scores = [s[0] for s, _ in found]
        rows = [r[0] for _, r in found]
        wanted = {self.docids[r] for row in rows for r in row if r >= 0}
        docs = self.docstore.docs(sorted(wanted))
        out = {}
        for qid, row_scores, row_ids in zip(ids, scores, rows):
            hits = [{**docs[self.docids[r]], "score": float(s)} for s, r in zip(row_scores, row_ids)
                    if r >= 0 and self.docids[r] in docs]
            out[qid] = rank(hits, k)
        return out
