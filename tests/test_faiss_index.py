"""faiss index types of the dense part (cqtools/retrieval/faiss_index.py): built on synthetic vectors,
compared with flat search, deterministic, memory-mapped; and through `cq index` / `cq retrieve`."""
import json
import os
import shutil

import numpy as np
import pytest

from cqtools.cli import cli
from cqtools.errors import InputError
from cqtools.retrieval import faiss_index as fi

from .conftest import FIXTURES, parse_jsonl

DIM, N, CHUNK = 32, 10000, 1500  # 10,000 vectors: PQ's 256 centroids get faiss's 39 points each


def _vectors(n=N, dim=DIM, seed=0):
    """Clustered unit vectors (50 topics), like sentence-transformers passage vectors in miniature; the
    same topics for every ``seed`` (questions are drawn about the passages' topics)."""
    centres = np.random.default_rng(0).standard_normal((50, dim))
    rng = np.random.default_rng(seed)
    x = centres[rng.integers(0, 50, n)] + 0.6 * rng.standard_normal((n, dim))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype("float32")


X = _vectors()
Q = _vectors(100, seed=1)


def _chunks(x=X, calls=None):
    def chunks():
        if calls is not None:
            calls.append(1)
        for start in range(0, len(x), CHUNK):
            yield x[start:start + CHUNK]
    return chunks


def _top(index, k=10):
    return index.search(Q, k)[1]


def _recall(found, exact):
    return float(np.mean([len(set(a) & set(b)) / len(b) for a, b in zip(found, exact)]))


@pytest.fixture(scope="module")
def flat_top():
    return _top(fi.build_faiss("Flat", DIM, _chunks()))


@pytest.mark.parametrize("factory, knobs, floor", [
    ("HNSW32", {"ef_search": 128}, 0.95),
    ("IVF16,Flat", {"nprobe": 16}, 1.0),  # every list searched: exact
    ("IVF16,Flat", {"nprobe": 4}, 0.7),
    ("SQ8", {}, 0.9),
    ("IVF16,PQ8", {"nprobe": 16}, 0.3),  # 8 bytes a 32-d vector: coarse by design
])
def test_each_type_against_flat(factory, knobs, floor, flat_top, capsys):
    calls = []
    index = fi.build_faiss(factory, DIM, _chunks(calls=calls), train_sample=4000)
    assert index.ntotal == N
    assert len(calls) == (1 if factory == "HNSW32" else 2)  # a trained type reads the stream twice
    fi.set_knobs(index, **knobs)
    recall = _recall(_top(index), flat_top)
    with capsys.disabled():
        print(f"\n{factory} {knobs}: recall@10 vs flat {recall:.3f}")
    assert recall >= floor
    info = fi.built_info(index, factory, 4000)
    assert info == {"faiss_index": factory, "trained": factory != "HNSW32",
                    "train_sample": 0 if factory == "HNSW32" else 4000, "metric": "inner product", "ntotal": N}


def test_flat_is_the_old_index_flat_ip_byte_for_byte(flat_top):
    import faiss

    old = faiss.IndexFlatIP(DIM)
    for chunk in _chunks()():
        old.add(chunk)
    ours = fi.build_faiss("Flat", DIM, _chunks())
    assert faiss.serialize_index(ours).tobytes() == faiss.serialize_index(old).tobytes()
    assert (_top(ours) == flat_top).all()
    assert fi.built_info(ours, "Flat", 262144)["trained"] is False


@pytest.mark.parametrize("factory", ["HNSW32", "IVF16,Flat", "SQ8", "IVF16,PQ8"])
def test_the_same_vectors_and_seed_give_the_same_bytes_at_any_thread_count(factory):
    import faiss

    before = faiss.omp_get_max_threads()
    built = []
    try:
        for threads in (1, 2, 2):
            faiss.omp_set_num_threads(threads)
            built.append(faiss.serialize_index(fi.build_faiss(factory, DIM, _chunks(), 4000, seed=3)).tobytes())
    finally:
        faiss.omp_set_num_threads(before)
    assert built[0] == built[1] == built[2]
    if factory != "HNSW32":  # another seed draws another training sample
        other = faiss.serialize_index(fi.build_faiss(factory, DIM, _chunks(), 4000, seed=4)).tobytes()
        assert other != built[0]


def test_the_training_sample_is_seeded_uniform_and_bounded():
    x = np.arange(20000, dtype="float32").reshape(-1, 1)
    first = fi.draw_sample(_chunks(x), 1000, seed=7)
    assert first.shape == (1000, 1) and len(np.unique(first)) == 1000
    assert (fi.draw_sample(_chunks(x), 1000, seed=7) == first).all()
    assert not (fi.draw_sample(_chunks(x), 1000, seed=8) == first).all()
    assert 8000 < first.mean() < 12000 and first.max() > 15000  # drawn from the whole stream, not its head
    small = fi.draw_sample(_chunks(x[:300]), 1000, seed=7)  # fewer vectors than the sample: all of them, in order
    assert (small[:, 0] == np.arange(300)).all()


@pytest.mark.parametrize("factory, says", [
    ("HNSW3x", "faiss rejects index type 'HNSW3x' for 32-dimensional vectors (could not parse index string HNSW3x)"),
    ("IVF16,PQ7", "faiss rejects index type 'IVF16,PQ7'"),  # 32 is no multiple of 7
])
def test_a_string_faiss_rejects_is_one_line(factory, says):
    with pytest.raises(InputError) as err:
        fi.check_factory(factory, DIM)
    assert says in str(err.value) and "\n" not in str(err.value) and "HNSW32" in str(err.value)


def test_more_lists_than_training_vectors_is_an_error_not_a_crash():
    with pytest.raises(InputError, match=r"has 4096 inverted lists but only 1000 training vectors.*e\.g\. IVF25 "):
        fi.build_faiss("IVF4096,Flat", DIM, _chunks(X[:1000]))
    with pytest.raises(InputError, match="but only 5000 training vectors"):
        fi.check_factory("IVF8192,Flat", DIM, vectors=N, train_sample=5000)


def test_a_knob_the_type_has_not_is_one_line_naming_the_type():
    index = fi.build_faiss("HNSW32", DIM, _chunks(X[:500]))
    with pytest.raises(InputError, match=r"--nprobe is for IVF indexes; this dense index is IndexHNSWFlat "
                                         r"\(--faiss-index 'HNSW32'\)"):
        fi.set_knobs(index, nprobe=8, factory="HNSW32")
    assert fi.set_knobs(index, ef_search=64) == {"ef_search": 64}
    assert fi.set_knobs(index) == {}


@pytest.mark.parametrize("factory", ["Flat", "HNSW32", "IVF16,Flat", "SQ8", "IVF16,PQ8", "OPQ8,IVF16,PQ8"])
def test_a_memory_mapped_index_searches_like_one_read_whole(factory, tmp_path):
    import faiss

    path = str(tmp_path / "index")
    faiss.write_index(fi.build_faiss(factory, DIM, _chunks(), 4000), path)
    whole, mapped = faiss.read_index(path), fi.open_index(path)
    for index in (whole, mapped):
        if faiss.try_extract_index_ivf(index) is not None:
            fi.set_knobs(index, nprobe=4)
    assert [a.tolist() for a in whole.search(Q, 10)] == [a.tolist() for a in mapped.search(Q, 10)]


# through the CLI, on the fixture corpus

def _index(runner, out, *extra):
    return runner.invoke(cli, ["index", "--corpus", str(FIXTURES / "corpus.jsonl"), "--out", str(out), "--dense",
                               "--threads", "2", "-q", *extra])


@pytest.fixture(scope="module")
def hnsw_index(tmp_path_factory):
    from click.testing import CliRunner

    out = tmp_path_factory.mktemp("faiss") / "hnsw"
    result = _index(CliRunner(), out, "--faiss-index", "HNSW32")
    assert result.exit_code == 0, result.output
    return out


def test_an_hnsw_index_is_built_recorded_and_searched_with_ef_search(runner, hnsw_index, fixture_index,
                                                                     questions_text):
    dense = json.loads((hnsw_index / "cq_index.json").read_text())["dense"]
    assert {k: dense[k] for k in ("faiss_index", "trained", "train_sample", "metric", "ntotal")} == {
        "faiss_index": "HNSW32", "trained": False, "train_sample": 0, "metric": "inner product",
        "ntotal": dense["passages"]}
    runs = {}
    for index, extra in ((hnsw_index, ["--ef-search", "64"]), (fixture_index, [])):
        result = runner.invoke(cli, ["retrieve", "--index", str(index), "--method", "dense", "--hits", "5", *extra],
                               input=questions_text)
        assert result.exit_code == 0, result.stderr
        runs[str(index)] = parse_jsonl(result.stdout)
    ours = runs[str(hnsw_index)]
    assert all(r["meta"]["retrieve"]["ef_search"] == 64 for r in ours)
    assert "ef_search" not in runs[str(fixture_index)][0]["meta"]["retrieve"]
    # 155 passages, efSearch 64: the graph finds flat's top 5
    assert [[p["id"] for p in r["passages"]] for r in ours] == \
        [[p["id"] for p in r["passages"]] for r in runs[str(fixture_index)]]


def test_the_calibrated_ef_search_is_stored_and_searched_with(runner, hnsw_index, questions_text):
    """`cq index` stores the efSearch it calibrated; `cq retrieve` without --ef-search searches with it."""
    calibrated = json.loads((hnsw_index / "cq_index.json").read_text())["dense"]["calibrated"]
    assert calibrated["ef_search"] >= 1 and calibrated["recall"] >= calibrated["target"] == 0.98
    assert (calibrated["k"], calibrated["queries"]) == (100, 155)  # the fixture's 155 passages: all of them
    result = runner.invoke(cli, ["retrieve", "--index", str(hnsw_index), "--method", "dense", "--hits", "5"],
                           input=questions_text)
    assert result.exit_code == 0, result.stderr
    assert {r["meta"]["retrieve"]["ef_search"] for r in parse_jsonl(result.stdout)} == {calibrated["ef_search"]}


def test_hybrid_takes_the_knobs_too(runner, hnsw_index, questions_text):
    result = runner.invoke(cli, ["retrieve", "--index", str(hnsw_index), "--method", "hybrid", "--hits", "3",
                                 "--ef-search", "32"], input=questions_text)
    assert result.exit_code == 0, result.stderr
    assert parse_jsonl(result.stdout)[0]["meta"]["retrieve"]["ef_search"] == 32


def test_the_default_index_is_flat_and_says_so(fixture_index):
    dense = json.loads((open(os.path.join(fixture_index, "cq_index.json"))).read())["dense"]
    assert dense["faiss_index"] == "Flat" and dense["trained"] is False and dense["ntotal"] == dense["passages"]


def test_nprobe_on_a_flat_index_is_one_line(runner, fixture_index, questions_text):
    result = runner.invoke(cli, ["retrieve", "--index", fixture_index, "--method", "dense", "--nprobe", "8"],
                           input=questions_text)
    assert result.exit_code != 0 and result.stdout == ""
    assert result.stderr.strip().splitlines() == [
        "cq retrieve: error: --nprobe is for IVF indexes; this dense index is IndexFlatIP (--faiss-index 'Flat'); "
        "drop --nprobe, or rebuild with `cq index --dense --faiss-index` of an IVF type"]


def test_a_rejected_type_builds_nothing_and_keeps_an_old_index(runner, tmp_path, fixture_index):
    result = _index(runner, tmp_path / "new", "--faiss-index", "HNSW3x")
    assert result.exit_code != 0 and len(result.stderr.strip().splitlines()) == 1
    assert "faiss rejects index type 'HNSW3x'" in result.stderr
    assert not (tmp_path / "new").exists() and os.listdir(tmp_path) == []
    old = tmp_path / "old"
    shutil.copytree(fixture_index, old)
    before = sorted(os.listdir(old)), (old / "cq_index.json").read_text()
    result = _index(runner, old, "--overwrite", "--faiss-index", "IVF4096,Flat")  # 155 passages: too few lists
    assert result.exit_code != 0 and "has 4096 inverted lists but only 155 training vectors" in result.stderr
    assert (sorted(os.listdir(old)), (old / "cq_index.json").read_text()) == before
    assert sorted(os.listdir(tmp_path)) == ["old"]


def test_faiss_index_without_dense_is_refused(runner, tmp_path):
    result = runner.invoke(cli, ["index", "--corpus", str(FIXTURES / "corpus.jsonl"), "--out", str(tmp_path / "i"),
                                 "--faiss-index", "HNSW32"])
    assert result.exit_code != 0 and "--faiss-index goes with --dense" in result.stderr


def test_a_trained_type_reads_its_spilled_vectors_and_leaves_none(runner, tmp_path, fixture_index, questions_text):
    out = tmp_path / "ivf"
    result = _index(runner, out, "--faiss-index", "IVF2,Flat", "--faiss-train-sample", "100")
    assert result.exit_code == 0, result.stderr
    dense = json.loads((out / "cq_index.json").read_text())["dense"]
    assert (dense["faiss_index"], dense["trained"], dense["train_sample"]) == ("IVF2,Flat", True, 100)
    assert sorted(os.listdir(out / "dense")) == ["docid", "generation", "index"]  # the spill is gone
    runs = []
    for index, extra in ((out, ["--nprobe", "2"]), (fixture_index, [])):  # every list probed: flat's ranking
        result = runner.invoke(cli, ["retrieve", "--index", str(index), "--method", "dense", "--hits", "5", *extra],
                               input=questions_text)
        assert result.exit_code == 0, result.stderr
        runs.append([[p["id"] for p in r["passages"]] for r in parse_jsonl(result.stdout)])
    assert runs[0] == runs[1]
