"""faiss index types for the dense part: a factory string checked before any encoding, a build that
trains on a bounded, seeded sample of the vectors, a memory-mapped open, and the search knobs.

Every type is built with ``faiss.index_factory(dim, factory, METRIC_INNER_PRODUCT)``: ``Flat`` (exact,
the default; the very ``IndexFlatIP`` bytes Pyserini's ``FaissSearcher`` reads), ``HNSW32`` (a graph,
no training), ``IVF4096,Flat`` / ``IVF4096,PQ64`` / ``OPQ96,IVF4096,PQ96`` (inverted lists, trained by
k-means), ``SQ8`` (8-bit scalar quantiser, trained) ... (faiss's index_factory strings).
"""
from __future__ import annotations

import logging
import re
from typing import Callable, Iterator

from ..errors import InputError, ResourceError

log = logging.getLogger("cqtools")

DEFAULT_FACTORY = "Flat"
# Vectors a trained type (IVF, PQ, SQ) learns from: 64 a list for IVF4096 (faiss asks for 39 to 256 a
# centroid and subsamples above 256), 1,024 a centroid for PQ's 256; 384 MiB at 384 dimensions. Capped at
# the corpus size.
DEFAULT_TRAIN_SAMPLE = 262144
SAMPLE_SEED = 0  # the training sample is drawn with this fixed seed (a run sets another with build_faiss(seed=...))
MIN_PER_LIST = 39  # faiss's k-means warns below 39 training points a centroid
EXAMPLES = "e.g. Flat, HNSW32, IVF4096,Flat, IVF4096,PQ64, SQ8 (faiss's index_factory strings)"
KNOBS = {"ef_search": ("efSearch", "--ef-search", "HNSW"), "nprobe": ("nprobe", "--nprobe", "IVF")}


def _faiss_says(err: Exception) -> str:
    """faiss's reason without its C++ location (``Error in ... at file.cpp:64: <reason>``)."""
    first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    found = re.search(r" at \S+:\d+: (.*)", first)
    return (found.group(1) if found else first).strip()


def check_factory(factory: str, dim: int, vectors: int | None = None, train_sample: int = DEFAULT_TRAIN_SAMPLE):
    """The empty index ``factory`` makes for ``dim``-dimensional inner-product vectors, or a one-line
    error: a string faiss rejects, or (``vectors`` known: the corpus size) an IVF with more lists than
    the training sample can give a point each."""
    import faiss

    try:
        index = faiss.index_factory(int(dim), factory, faiss.METRIC_INNER_PRODUCT)
    except RuntimeError as err:
        raise InputError(f"faiss rejects index type {factory!r} for {dim}-dimensional vectors "
                         f"({_faiss_says(err)}); pass another --faiss-index, {EXAMPLES}") from None
    ivf = faiss.try_extract_index_ivf(index)
    if ivf is not None and vectors is not None:
        sample = min(train_sample, vectors)
        if ivf.nlist > sample:
            fits = max(1, sample // MIN_PER_LIST)
            raise InputError(f"--faiss-index {factory!r} has {ivf.nlist} inverted lists but only {sample} training "
                             f"vectors (the passages, up to --faiss-train-sample {train_sample}); pass fewer lists, "
                             f"e.g. IVF{fits} (faiss wants >= {MIN_PER_LIST} vectors a list), or Flat / HNSW32")
    return index


def draw_sample(chunks: Callable[[], Iterator], size: int, seed: int = SAMPLE_SEED):
    """A uniform sample of ``size`` vectors of the stream (all of them when it has fewer), by reservoir
    sampling with a seeded generator: the same stream and seed give the same sample; memory is the sample's."""
    import numpy as np

    rng = np.random.default_rng(seed)
    sample = None
    seen = 0
    for chunk in chunks():
        chunk = np.ascontiguousarray(chunk, dtype="float32")
        if sample is None:
            sample = np.empty((size, chunk.shape[1]), dtype="float32")
        take = min(max(size - seen, 0), len(chunk))  # the reservoir's first fill, in stream order
        sample[seen:seen + take] = chunk[:take]
        rest = chunk[take:]
        if len(rest):
            positions = seen + take + np.arange(len(rest))
            slots = rng.integers(0, positions + 1)  # Algorithm R: row i replaces slot j < size, j uniform in [0, i]
            hit = np.nonzero(slots < size)[0]
            # a later row replacing the same slot wins: keep each slot's last hit
            last = hit[::-1][np.unique(slots[hit][::-1], return_index=True)[1]]
            sample[slots[last]] = rest[last]
        seen += len(chunk)
    if sample is None:
        return np.empty((0, 0), dtype="float32")
    return sample[:min(seen, size)]


def build_faiss(factory: str, dim: int, chunks: Callable[[], Iterator], train_sample: int = DEFAULT_TRAIN_SAMPLE,
                seed: int = SAMPLE_SEED):
    """The ``factory`` index of the vectors ``chunks()`` yields (float32 arrays, corpus order). A type that
    needs training (IVF, PQ, SQ) reads the stream twice: once for a sample of at most ``train_sample``
    vectors drawn with ``seed`` (:func:`draw_sample`), once to add; faiss's own k-means seeds are its
    defaults, so the same vectors and seed give the same index bytes."""
    import faiss
    import numpy as np

    index = check_factory(factory, dim)
    if not index.is_trained:
        sample = draw_sample(chunks, train_sample, seed)
        check_factory(factory, dim, len(sample), train_sample)  # too few vectors for its lists: one line, no abort
        ivf = faiss.try_extract_index_ivf(index)
        if ivf is not None and ivf.nlist * MIN_PER_LIST > len(sample):
            log.warning("dense: %s trains %d lists on %d vectors (faiss wants >= %d a list): recall may suffer",
                        factory, ivf.nlist, len(sample), MIN_PER_LIST)
        try:
            index.train(sample)
        except RuntimeError as err:
            raise ResourceError(f"faiss could not train {factory!r} on {len(sample)} vectors ({_faiss_says(err)}); "
                                f"pass another --faiss-index or a larger --faiss-train-sample") from None
        del sample
    for chunk in chunks():
        index.add(np.ascontiguousarray(chunk, dtype="float32"))
    return index


def built_info(index, factory: str, train_sample: int) -> dict:
    """The manifest's record of an index :func:`build_faiss` made: its factory string, whether it was
    trained and on how many vectors, the metric and the vector count."""
    trained = not check_factory(factory, index.d).is_trained
    return {"faiss_index": factory, "trained": trained,
            "train_sample": min(train_sample, int(index.ntotal)) if trained else 0,
            "metric": "inner product", "ntotal": int(index.ntotal)}


def open_index(path: str, mmap: bool = True):
    """The index at ``path``; memory-mapped (``IO_FLAG_MMAP_IFC``: flat codes, HNSW's stored vectors, SQ
    codes and IVF lists stay in the page cache, shared by every process searching the index; HNSW's graph is
    read into memory) unless ``mmap`` is False or faiss cannot map it, then read whole."""
    import faiss

    if mmap:
        try:
            return faiss.read_index(path, faiss.IO_FLAG_MMAP_IFC)
        except RuntimeError as err:
            log.info("dense: %s not memory-mapped (%s); reading it whole", path, _faiss_says(err))
    return faiss.read_index(path)


def describe(index) -> str:
    """The index's faiss class, through a pre-transform (e.g. ``IndexPreTransform(IndexIVFPQ)``)."""
    import faiss

    index = faiss.downcast_index(index)
    name = type(index).__name__
    if isinstance(index, faiss.IndexPreTransform):
        name += f"({describe(index.index)})"
    return name


def set_knobs(index, ef_search: int | None = None, nprobe: int | None = None, factory: str | None = None) -> dict:
    """Set the search knobs asked for (None: the type's default: faiss's efSearch 16, nprobe 1) through
    faiss's ParameterSpace; a knob the index has not is a one-line error naming its type. Returns those set."""
    import faiss

    space = faiss.ParameterSpace()
    done = {}
    for name, value in (("ef_search", ef_search), ("nprobe", nprobe)):
        if value is None:
            continue
        knob, flag, kind = KNOBS[name]
        try:
            space.set_index_parameter(index, knob, int(value))
        except RuntimeError:
            built = f" (--faiss-index {factory!r})" if factory else ""
            raise InputError(f"{flag} is for {kind} indexes; this dense index is {describe(index)}{built}; drop "
                             f"{flag}, or rebuild with `cq index --dense --faiss-index` of an {kind} type") from None
        done[name] = int(value)
    return done


# `cq index` calibrates a type's search knob: passages drawn (seeded) from the corpus are searched as queries, and
# the smallest efSearch / nprobe finding TARGET of Flat's top K for them is stored in the manifest (questions lie
# farther from the passages than passages do from each other, hence a target above the 0.95 asked of questions).
CALIBRATION = {"k": 100, "queries": 256, "target": 0.98, "seed": 1}
EF_FACTORS = (1, 1.5, 2, 3, 4, 6, 8, 12, 16, 24, 32)  # efSearch tried, in multiples of K


def _graph(index):
    """The HNSW index that answers ``index``'s searches (through a pre-transform or a refine), or None."""
    import faiss

    index = faiss.downcast_index(index)
    while not isinstance(index, faiss.IndexHNSW):
        if isinstance(index, faiss.IndexPreTransform):
            index = faiss.downcast_index(index.index)
        elif isinstance(index, faiss.IndexRefine):
            index = faiss.downcast_index(index.base_index)
        else:
            return None
    return index


def knob_of(index) -> str | None:
    """The search knob of ``index``'s type: ``nprobe`` (inverted lists), ``ef_search`` (an HNSW graph), or None."""
    import faiss

    if faiss.try_extract_index_ivf(index) is not None:
        return "nprobe"
    return "ef_search" if _graph(index) is not None else None


class Knobs:
    """The search knobs of an open index: those given (``--ef-search`` / ``--nprobe``; a knob the type has not is
    a one-line error) over those ``cq index`` calibrated (``calibrated``, the manifest's). :meth:`apply` sets them
    for a search of ``k`` hits: an HNSW graph's efSearch is raised to ``k`` when lower (faiss's own search keeps
    efSearch candidates however many hits are asked for), a calibrated one in proportion to the hits above those
    it was calibrated for. ``params``: the knobs in use (before any raise), for the records' meta."""

    def __init__(self, index, ef_search: int | None = None, nprobe: int | None = None,
                 calibrated: dict | None = None, factory: str | None = None):
        self.params = set_knobs(index, ef_search, nprobe, factory)
        calibrated = calibrated or {}
        knob = knob_of(index)
        if knob and knob not in self.params and calibrated.get(knob):
            self.params |= set_knobs(index, **{knob: calibrated[knob]})
        self.graph, self.per = _graph(index), None
        if self.graph is not None:
            self.ef = self.params.get("ef_search") or int(self.graph.hnsw.efSearch)
            self.per = calibrated.get("k") if ef_search is None and calibrated.get("ef_search") else None

    def apply(self, k: int) -> None:
        if self.graph is not None:
            ef = self.ef if self.per is None else -(-self.ef * k // self.per)  # ceil(ef * k / per)
            self.graph.hnsw.efSearch = max(self.ef, ef, int(k))


def _exact_top(queries, chunks: Callable[[], Iterator], k: int):
    """Flat's top ``k`` row numbers for each of ``queries`` over the vectors ``chunks()`` yields (memory: a chunk)."""
    import faiss
    import numpy as np

    heap, start = faiss.ResultHeap(len(queries), k, keep_max=True), 0
    for chunk in chunks():
        chunk = np.ascontiguousarray(chunk, dtype="float32")
        scores, rows = faiss.knn(queries, chunk, min(k, len(chunk)), metric=faiss.METRIC_INNER_PRODUCT)
        heap.add_result(scores, np.where(rows >= 0, rows + start, -1))
        start += len(chunk)
    heap.finalize()
    return heap.I


def calibrate(index, chunks: Callable[[], Iterator], k: int = CALIBRATION["k"], queries: int = CALIBRATION["queries"],
              target: float = CALIBRATION["target"], seed: int = CALIBRATION["seed"]) -> dict | None:
    """The smallest value of ``index``'s search knob (:func:`knob_of`; None: a type without one) with which
    :class:`Knobs` finds ``target`` of Flat's top ``k`` for ``queries`` vectors drawn from ``chunks()`` with
    ``seed``; where no value does (a PQ's codes bound the recall), the smallest within 0.005 of the best
    recall, and a warning. The index's own knobs are left as they were. Returns the manifest's record of it."""
    import numpy as np

    knob = knob_of(index)
    if knob is None or index.ntotal == 0:
        return None
    k = min(k, int(index.ntotal))
    sample = draw_sample(chunks, queries, seed)
    exact = _exact_top(sample, chunks, k)
    if knob == "nprobe":
        import faiss

        ivf = faiss.extract_index_ivf(index)
        saved, values = ivf.nprobe, [2 ** i for i in range(int(np.log2(ivf.nlist)) + 1)] + [ivf.nlist]
    else:
        saved = _graph(index).hnsw.efSearch
        values = [int(k * f) for f in EF_FACTORS if k * f < index.ntotal] + [int(index.ntotal)]
    tried = {}
    try:
        for value in dict.fromkeys(values):  # in order, once each
            Knobs(index, **{knob: value}).apply(k)
            found = index.search(sample, k)[1]
            tried[value] = float(np.mean([len(set(a) & set(b)) / k for a, b in zip(found, exact)]))
            if tried[value] >= target:
                break
    finally:
        set_knobs(index, **{knob: saved})
    value = next(v for v, r in tried.items() if r >= min(target, max(tried.values()) - 0.005))
    recall = tried[value]
    if recall < target:
        log.warning("dense: no %s of this index finds %.2f of Flat's top %d (at best %.3f, %s %d); searches use "
                    "that; a type with finer codes (e.g. IVF...,Flat, SQ8) gets nearer", KNOBS[knob][1], target, k,
                    recall, KNOBS[knob][1], value)
    log.info("dense: calibrated %s %d: %.3f of Flat's top %d for %d corpus passages as queries", KNOBS[knob][1],
             value, recall, k, len(sample))
    return {knob: value, "recall": round(recall, 4), "target": target, "k": k, "queries": len(sample), "seed": seed}
