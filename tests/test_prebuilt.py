"""`--index NAME` with Pyserini's prebuilt index names, through Pyserini's registry and cache.

The fixture index's Lucene and faiss parts are placed where Pyserini's cache ($PYSERINI_CACHE)
keeps wikipedia-dpr-100w and wikipedia-dpr-100w.dpr-multi, and are found by name without any
download; a name not in the cache gives a one-line error saying where to put a copy."""
import os
import shutil

import pytest

from cqtools.cli import cli

from .conftest import parse_jsonl

SPARSE, DENSE = "wikipedia-dpr-100w", "wikipedia-dpr-100w.dpr-multi"
MINILM = "sentence-transformers/all-MiniLM-L6-v2"


def place(cache, name, source):
    """Copy ``source`` to where Pyserini unpacks the prebuilt index ``name``."""
    from cqtools.retrieval import prebuilt

    kind, info = prebuilt.entry(name)
    target = cache / "indexes" / prebuilt.cache_dir_name(info)
    shutil.copytree(source, target)
    return target


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PYSERINI_CACHE", str(tmp_path / "pyserini"))
    monkeypatch.setenv("CQ_OFFLINE", "1")  # never start a multi-GB download from a test
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return tmp_path / "pyserini"


def retrieve(runner, questions_text, *args):
    result = runner.invoke(cli, ["retrieve", "--hits", "5", *args], input=questions_text)
    assert result.exit_code == 0, result.stderr
    return parse_jsonl(result.stdout)


def hits(records):
    return [[(h["id"], h["title"], h["text"], h["score"], h["rank"]) for h in r["passages"]] for r in records]


def test_cache_location_is_pyserinis(cache, fixture_index):
    """The directory name (archive name + md5) is the one Pyserini's own check looks for."""
    from pyserini.util import check_downloaded

    assert not check_downloaded(SPARSE)
    path = place(cache, SPARSE, os.path.join(fixture_index, "lucene"))
    assert path.name == "lucene-index.wikipedia-dpr-100w.20210120.d1b9e6.7b58c08da992b2ea7e96667f0b176651"
    assert check_downloaded(SPARSE)


def test_sparse_prebuilt_by_name(runner, cache, fixture_index, questions_text):
    place(cache, SPARSE, os.path.join(fixture_index, "lucene"))
    by_name = retrieve(runner, questions_text, "--index", SPARSE)
    by_dir = retrieve(runner, questions_text, "--index", fixture_index)
    # same ids, scores and ranks; title and text read back from the index's stored raw documents
    assert hits(by_name) == hits(by_dir)
    meta = by_name[0]["meta"]["retrieve"]
    assert meta["prebuilt"] == SPARSE and meta["index_path"].startswith(str(cache))
    assert meta["index"] == SPARSE  # the name as given, not a path under the current directory


def test_dense_prebuilt_by_name(runner, cache, fixture_index, questions_text):
    place(cache, SPARSE, os.path.join(fixture_index, "lucene"))  # its "texts" index
    place(cache, DENSE, os.path.join(fixture_index, "dense"))
    some = "".join(questions_text.splitlines(keepends=True)[:6])  # dense encoding is the slow part
    by_name = retrieve(runner, some, "--index", DENSE, "--method", "dense", "--encoder", MINILM)
    by_dir = retrieve(runner, some, "--index", fixture_index, "--method", "dense")
    assert [[h[:3] + (h[4],) for h in r] for r in hits(by_name)] == [[h[:3] + (h[4],) for h in r]
                                                                      for r in hits(by_dir)]
    for a, b in zip(hits(by_name), hits(by_dir)):
        assert [h[3] for h in a] == pytest.approx([h[3] for h in b], abs=1e-6)
    # without --encoder, DPR's question encoder (Pyserini's DPR runs) is asked for, and is not here
    result = runner.invoke(cli, ["retrieve", "--index", DENSE, "--method", "dense"], input='{"question": "q"}\n')
    errors = [line for line in result.stderr.splitlines() if line.startswith("cq retrieve: error")]
    assert result.exit_code == 1 and len(errors) == 1 and "Traceback" not in result.stderr, result.stderr
    assert "query encoder facebook/dpr-question_encoder-multiset-base, which is not available" in errors[0]


def test_not_in_cache_is_a_one_line_error(runner, cache):
    result = runner.invoke(cli, ["retrieve", "--index", SPARSE], input='{"question": "q"}\n')
    assert result.exit_code == 1
    lines = [line for line in result.stderr.splitlines() if line.startswith("cq retrieve: error")]
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    for part in (SPARSE, str(cache / "indexes"), "7b58c08da992b2ea7e96667f0b176651",
                 "lucene-index.wikipedia-dpr-100w.20210120.d1b9e6.tar.gz", "PYSERINI_CACHE"):
        assert part in lines[0]


def test_failed_download_is_a_one_line_error(cache, monkeypatch):
    """Online, Pyserini's own download is tried; when it fails (no network here) the error names the fix."""
    import pyserini.util

    from cqtools.errors import ResourceError
    from cqtools.retrieval import open_searcher

    def unreachable(name, **_):
        raise ValueError("Unable to download prebuilt index at any known URLs.")

    monkeypatch.delenv("CQ_OFFLINE")
    monkeypatch.setattr(pyserini.util, "download_prebuilt_index", unreachable)
    with pytest.raises(ResourceError) as err:
        open_searcher(SPARSE, "bm25")
    message = str(err.value)
    assert "\n" not in message and "downloading it failed (Unable to download" in message
    assert str(cache / "indexes") in message and "rename the unpacked directory to lucene-index" in message


@pytest.mark.parametrize("index, method, says", [
    ("no-such-prebuilt-index", "bm25", "not one of Pyserini's prebuilt index names"),
    (SPARSE, "dense", "sparse (BM25) prebuilt index"),
])
def test_wrong_names(runner, cache, fixture_index, index, method, says):
    place(cache, SPARSE, os.path.join(fixture_index, "lucene"))
    result = runner.invoke(cli, ["retrieve", "--index", index, "--method", method], input='{"question": "q"}\n')
    assert result.exit_code == 1 and says in result.stderr, result.stderr


def test_cluster_doc_says_how_every_preset_runs_against_the_prebuilt_indexes():
    """docs/cluster.md's table of the papers' corpus has a row for every preset (a new preset needs one)."""
    from pathlib import Path

    from cqtools import presets

    text = Path(__file__).resolve().parent.parent.joinpath("docs/cluster.md").read_text()
    section = text.split("## The papers' corpus: Pyserini's prebuilt indexes", 1)[1].split("\n## ", 1)[0]
    rows = {line.split("|")[1].strip().strip("`") for line in section.splitlines() if line.startswith("| `")}
    assert rows == set(presets.names())
    assert "wikipedia-dpr-100w.dpr-multi" in section and "CQ_OFFLINE=1" in section
