"""The dense part's search knobs (cqtools/retrieval/faiss_index.py), on synthetic vectors: faiss's HNSW search keeps
efSearch candidates however many hits are asked for, so cq raises efSearch to the hits (the help always said so);
`cq index` calibrates efSearch / nprobe on corpus vectors searched as queries against Flat and the manifest's value
is what a search uses when no --ef-search / --nprobe is given."""
import logging

import faiss
import numpy as np
import pytest

from cqtools.retrieval import faiss_index as fi

K, DIM = 100, 96


def _vectors(n, seed):
    """Clustered unit vectors (50 topics, wide ones: at 96 dimensions HNSW32's efSearch 100 finds less than 0.95
    of Flat's top 100); the same topics for every ``seed``."""
    centres = np.random.default_rng(0).standard_normal((50, DIM))
    rng = np.random.default_rng(seed)
    x = centres[rng.integers(0, 50, n)] + 1.5 * rng.standard_normal((n, DIM))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype("float32")


X = _vectors(8000, seed=0)
Q = _vectors(200, seed=2)  # questions about the passages' topics, not passages


def _chunks():
    return lambda: (X[start:start + 1500] for start in range(0, len(X), 1500))


@pytest.fixture(scope="module")
def flat_top():
    flat = faiss.IndexFlatIP(DIM)
    flat.add(X)
    return flat.search(Q, K)[1]


@pytest.fixture(scope="module")
def hnsw():
    return fi.build_faiss("HNSW32", DIM, _chunks())


def _recall(index, exact, k=K):
    found = np.vstack([index.search(Q[i:i + 1], k)[1] for i in range(len(Q))])  # one query a call, as cq searches
    return float(np.mean([len(set(a) & set(b)) / k for a, b in zip(found, exact)]))


def _searched(index, knobs, exact):
    knobs.apply(K)
    return _recall(index, exact)


def test_ef_search_is_raised_to_the_hits_asked_for(hnsw, flat_top):
    """faiss's default efSearch 16 for 100 hits finds a fraction of Flat's top 100; raised to 100 it finds what
    efSearch 100 finds."""
    hnsw.hnsw.efSearch = 100
    at_100 = _recall(hnsw, flat_top)
    hnsw.hnsw.efSearch = 16
    unraised = _recall(hnsw, flat_top)
    for knobs in (fi.Knobs(hnsw), fi.Knobs(hnsw, ef_search=16)):
        assert _searched(hnsw, knobs, flat_top) == at_100 and hnsw.hnsw.efSearch == 100
    assert unraised < at_100 - 0.05
    knobs = fi.Knobs(hnsw, ef_search=300)
    assert knobs.params == {"ef_search": 300} and (knobs.apply(K), hnsw.hnsw.efSearch) == (None, 300)


@pytest.mark.parametrize("factory", ["HNSW32", "IVF64,Flat"])
def test_the_calibrated_knob_reaches_the_target_for_questions(factory, flat_top):
    index = fi.build_faiss(factory, DIM, _chunks(), train_sample=5000)
    knob = fi.knob_of(index)
    before = faiss.serialize_index(index).tobytes()
    calibrated = fi.calibrate(index, _chunks())
    assert faiss.serialize_index(index).tobytes() == before  # the index's own knobs are left as they were
    assert calibrated == fi.calibrate(index, _chunks())  # seeded: the same value every time
    assert set(calibrated) == {knob, "recall", "target", "k", "queries", "seed"}
    assert calibrated["recall"] >= calibrated["target"] == fi.CALIBRATION["target"] and calibrated["k"] == K
    default = _searched(index, fi.Knobs(index), flat_top)
    knobs = fi.Knobs(index, calibrated=calibrated)
    assert knobs.params == {knob: calibrated[knob]}
    recall = _searched(index, knobs, flat_top)
    assert recall >= 0.95 > default, (calibrated, recall, default)
    given = fi.Knobs(index, **{knob: 1}, calibrated=calibrated)  # a knob given overrides the calibrated one
    assert given.params == {knob: 1} and _searched(index, given, flat_top) == default


def test_a_calibrated_ef_search_grows_with_the_hits(hnsw):
    knobs = fi.Knobs(hnsw, calibrated={"ef_search": 150, "k": 100})
    for hits, ef in ((10, 150), (100, 150), (400, 600)):
        knobs.apply(hits)
        assert hnsw.hnsw.efSearch == ef


def test_codes_that_cannot_reach_the_target_get_their_best_knob_and_a_warning(caplog):
    index = fi.build_faiss("IVF16,PQ8x4", DIM, _chunks(), train_sample=2000)  # 4-bit codes: quick to train
    with caplog.at_level(logging.INFO, logger="cqtools"):
        calibrated = fi.calibrate(index, _chunks())
    assert calibrated["recall"] < calibrated["target"] and 1 <= calibrated["nprobe"] <= 16
    assert "no --nprobe of this index finds 0.98 of Flat's top 100" in caplog.text


def test_types_without_a_knob_are_not_calibrated():
    assert fi.calibrate(fi.build_faiss("Flat", DIM, _chunks()), _chunks()) is None
    assert fi.knob_of(faiss.index_factory(DIM, "SQ8", faiss.METRIC_INNER_PRODUCT)) is None


def test_the_dense_searcher_uses_the_manifests_knob(tmp_path, monkeypatch, hnsw, flat_top):
    """DenseSearcher (what `cq retrieve --method dense` opens) searches with the calibrated knob, raised to --hits."""
    from cqtools.retrieval import dense

    faiss.write_index(hnsw, str(tmp_path / "index"))
    (tmp_path / "docid").write_text("".join(f"p{i}\n" for i in range(len(X))))
    questions = {f"q{i}": Q[i] for i in range(len(Q))}

    class Encoder:
        def get_sentence_embedding_dimension(self):
            return DIM

        def encode(self, texts, **kwargs):
            return np.stack([questions[t] for t in texts])

    class Store:
        def docs(self, ids):
            return {i: {"id": i, "title": "", "text": ""} for i in ids}

    monkeypatch.setattr(dense, "load_encoder", lambda *a, **k: (type("M", (), {"name": "synthetic"}), Encoder()))
    ids = list(questions)

    def recall(**knobs):
        searcher = dense.DenseSearcher(str(tmp_path), "synthetic", Store(), **knobs)
        hits = searcher.batch_search(ids, ids, K)
        found = [[int(h["id"][1:]) for h in hits[q]] for q in ids]
        return searcher.params, float(np.mean([len(set(a) & set(b)) / K for a, b in zip(found, flat_top)]))

    params, calibrated = recall(calibrated=fi.calibrate(hnsw, _chunks()))
    assert params["ef_search"] > K and calibrated >= 0.95
    hnsw.hnsw.efSearch = K
    assert recall(ef_search=16) == ({"encoder": "synthetic", "ef_search": 16}, _recall(hnsw, flat_top))
