"""Dense retrieval: a faiss inner-product index stored in Pyserini's layout (``index`` +
``docid``), so Pyserini's ``FaissSearcher`` can open it too, over vectors from either

* a sentence-transformers model (one encoder for questions and passages, L2-normalised), or
* DPR's two encoders (a context encoder for passages, a question encoder for questions; [CLS]
  vectors, raw inner product, no normalisation, as DPR and Pyserini's DPR indexes use).

Search uses faiss directly: importing ``pyserini.search.faiss`` costs 10-13 s and adds nothing
for a flat inner-product index.
"""
from __future__ import annotations

import contextlib
import logging
import os
from typing import Iterable

from .. import progress
from ..errors import ResourceError
from ..models import resolve
from ..models.roles import role
from . import generation
from .base import rank, spread
from .base import contents
from .faiss_index import DEFAULT_FACTORY, DEFAULT_TRAIN_SAMPLE, build_faiss, built_info, check_factory, \
    set_knobs

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
    from ..models.backends import load_encoder as load_bi_encoder

    model = resolve(name, announce=False, config=config)
    if dpr.dpr_kind(model):
        expect = {"question": dpr.QUESTION, "context": dpr.CONTEXT}.get(role or "")
        return model, dpr.load_dpr(name, device, expect, config)
    if model.fmt not in ("sentence-transformers", "hf"):
        raise ResourceError(f"dense encoder {name} resolved to a {model.fmt} copy; pass a sentence-transformers "
                            f"model or a DPR encoder (a hub id or a local directory)")
    return model, load_bi_encoder(name, device, config)


def build_dense(passages: Iterable[dict], out_dir: str, encoder: str, batch_size: int = 256,
                device: str = "cpu", chunk: int = 8192, query_encoder: str | None = None, config=None,
                faiss_index: str = DEFAULT_FACTORY, train_sample: int = DEFAULT_TRAIN_SAMPLE,
                expected: int | None = None) -> dict:
    """Encode passages in chunks into a faiss index of type ``faiss_index`` (:mod:`.faiss_index`; Flat: an
    IndexFlatIP); returns manifest info. The type is checked once the encoder is loaded, before any encoding
    (``expected``: the passage count when known, for an IVF's list count). The encoders load under the run
    configuration ``config`` (`cq index`'s; None: one from the environment).

    A sentence-transformers ``encoder`` encodes title, newline, text, L2-normalised; a DPR context
    encoder encodes (title, text) pairs unnormalised, and ``query_encoder`` (default: its pair by
    DPR's naming) is recorded as the encoder of questions."""
    import faiss
    import numpy as np

    from ..models import dpr

    model, st = load_encoder(encoder, device, role="context", config=config)
    is_dpr = isinstance(st, dpr.DPREncoder)
    if is_dpr:
        query_encoder = query_encoder or dpr.question_encoder_for(encoder)
        load_encoder(query_encoder, device, role="question", config=config)  # fail now, not after hours of encoding
    elif query_encoder and query_encoder != encoder:
        raise ResourceError(f"--query-encoder is for DPR context encoders; {encoder} encodes questions itself")
    dim = _dimension(st)
    trains = not check_factory(faiss_index, dim, expected, train_sample).is_trained  # a bad type costs no encoding
    os.makedirs(out_dir, exist_ok=True)
    spill = os.path.join(out_dir, "vectors.f32")  # a trained type reads the vectors twice: the second time from here
    count, passes = [0], []

    def chunks():  # build_faiss reads the vectors once (Flat, HNSW), or twice (a trained type: then from the spill)
        passes.append(len(passes))
        if len(passes) == 1:
            return _encoded(st, is_dpr, passages, out_dir, chunk, batch_size, spill if trains else None, count)
        vectors = np.memmap(spill, dtype="float32", mode="r").reshape(-1, dim)
        return (vectors[start:start + chunk] for start in range(0, len(vectors), chunk))

    index = build_faiss(faiss_index, dim, chunks, train_sample)
    if os.path.exists(spill):
        os.remove(spill)
    faiss.write_index(index, os.path.join(out_dir, "index"))
    info = {"encoder": model.name, "encoder_source": model.source, "dim": dim, "normalized": not is_dpr,
            "passages": count[0], **built_info(index, faiss_index, train_sample)}
    if is_dpr:
        qm = resolve(query_encoder, announce=False, config=config)
        info |= {"kind": "dpr", "query_encoder": qm.path if qm.source == "local" else qm.name, "pooling": "cls",
                 "similarity": "inner product"}
    return info


def _encoded(st, is_dpr: bool, passages, out_dir: str, chunk: int, batch_size: int, spill: str | None, count: list):
    """The passages' vectors, a float32 array a ``chunk`` of passages, their ids written to ``docid`` (and the
    vectors to ``spill`` when given) as they go; ``count[0]``: passages encoded so far."""
    import numpy as np

    from ..jsonl import batched

    # On a terminal: passages encoded so far (rate) and sentence-transformers' own bar over each chunk's batches;
    # elsewhere a log line per chunk.
    with progress.bar("dense: encoding", "passage") as bar, open(os.path.join(out_dir, "docid"), "w") as ids_fh, \
            (open(spill, "wb") if spill else contextlib.nullcontext()) as spill_fh:
        for group in batched(passages, chunk):
            if is_dpr:
                vectors = st.encode([p["text"] for p in group], titles=[p.get("title") or "" for p in group],
                                    batch_size=batch_size)
            else:
                vectors = st.encode([contents(p) for p in group], batch_size=batch_size, normalize_embeddings=True,
                                    convert_to_numpy=True, show_progress_bar=not bar.disable)
            vectors = np.ascontiguousarray(vectors, dtype="float32")
            if spill_fh:
                spill_fh.write(vectors.tobytes())
            ids_fh.writelines(f"{p['id']}\n" for p in group)
            count[0] += len(group)
            bar.update(len(group))
            if bar.disable:
                log.info("dense: encoded %d passages", count[0])
            yield vectors


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
                 factory: str | None = None):
        """``config``: the run configuration the query encoder loads under (None: one from the environment);
        ``ef_search`` / ``nprobe``: HNSW's and IVF's search knobs (None: the type's default; one the index has not
        is an error naming its type, ``factory`` the string it was built from when known)."""
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
        knobs = set_knobs(self.index, ef_search, nprobe, factory)
        self.model, self.encoder = load_encoder(encoder, device, role="question", config=config)
        if _dimension(self.encoder) != self.index.d:
            raise ResourceError(f"query encoder {encoder} gives {_dimension(self.encoder)}-"
                                f"dimensional vectors but the index in {dense_dir} holds {self.index.d}-dimensional "
                                f"ones; pass the encoder the index was built for (--encoder)")
        self.docstore = docstore
        self.batch_size = batch_size
        self.normalize = normalize
        self.params = {"encoder": self.model.name, **knobs}

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
