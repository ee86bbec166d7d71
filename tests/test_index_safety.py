"""`cq index` never loses a user's data: an old index survives a failed rebuild, and --overwrite
touches nothing but an index."""
import os
import shutil
from pathlib import Path

import pytest

from cqtools.cli import cli

from .conftest import FIXTURES, parse_jsonl

QUESTION = '{"id": "q1", "question": "Who wrote The Hobbit?"}\n'


@pytest.fixture
def built(tmp_path, fixture_index):
    """A copy of the session's fixture index that a test may try to replace."""
    target = tmp_path / "idx"
    shutil.copytree(fixture_index, target)
    return target


def _leftovers(parent):
    return [n for n in os.listdir(parent) if ".building-" in n or ".old-" in n]


def _search(runner, index):
    result = runner.invoke(cli, ["retrieve", "--index", str(index), "--hits", "2"], input=QUESTION)
    assert result.exit_code == 0, result.stderr
    return parse_jsonl(result.stdout)[0]["passages"]


@pytest.mark.parametrize("corpus_text, what", [
    ('{"id": "p1", "title": "T", "text": "fine"}\n{not json\n', "line 2"),
    (None, "not found"),
])
def test_failed_rebuild_keeps_the_old_index(runner, built, tmp_path, corpus_text, what):
    before = _search(runner, built)
    corpus = tmp_path / "bad.jsonl"
    if corpus_text is not None:
        corpus.write_text(corpus_text)
    result = runner.invoke(cli, ["index", "--corpus", str(corpus), "--out", str(built), "--overwrite"])
    assert result.exit_code == 1 and what in result.stderr and "Traceback" not in result.stderr, result.stderr
    assert _search(runner, built) == before
    assert _leftovers(tmp_path) == []


def test_overwrite_refuses_a_directory_that_is_not_an_index(runner, tmp_path):
    target = tmp_path / "mine"
    target.mkdir()
    (target / "notes.txt").write_text("precious")
    result = runner.invoke(cli, ["index", "--corpus", str(FIXTURES / "corpus.jsonl"), "--out", str(target),
                                 "--overwrite"])
    assert result.exit_code == 1 and "not a cq or Pyserini index" in result.stderr
    assert (target / "notes.txt").read_text() == "precious" and os.listdir(target) == ["notes.txt"]


def test_overwrite_refuses_when_the_corpus_is_inside(runner, built):
    shutil.copy(FIXTURES / "corpus.jsonl", built / "corpus.jsonl")
    result = runner.invoke(cli, ["index", "--corpus", str(built / "corpus.jsonl"), "--out", str(built),
                                 "--overwrite"])
    assert result.exit_code == 1 and "inside" in result.stderr
    assert (built / "corpus.jsonl").exists()


def test_rebuild_replaces_and_cleans_up(runner, built, tmp_path):
    corpus = tmp_path / "small.jsonl"
    corpus.write_text('{"id": "p1", "title": "The Hobbit", "text": "Tolkien wrote The Hobbit."}\n')
    refused = runner.invoke(cli, ["index", "--corpus", str(corpus), "--out", str(built)])
    assert refused.exit_code == 1 and "--overwrite" in refused.stderr
    result = runner.invoke(cli, ["index", "--corpus", str(corpus), "--out", str(built), "--overwrite", "--quiet"])
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
    assert [p["id"] for p in _search(runner, built)] == ["p1"]
    assert _leftovers(tmp_path) == []


# --- a search never mixes two builds of an index (issue 26, item 1) -----------------------------------

JOKER = '{"id": "q", "question": "Who played the Joker?"}\n'


@pytest.fixture(scope="module")
def reversed_index(tmp_path_factory):
    """A BM25 index of the fixture corpus in reverse order: the same passages under other Lucene
    document numbers (what a rebuild from a reordered corpus gives)."""
    from click.testing import CliRunner

    root = tmp_path_factory.mktemp("reversed")
    lines = (FIXTURES / "corpus.jsonl").read_text().splitlines(keepends=True)
    (root / "corpus.jsonl").write_text("".join(reversed(lines)))
    result = CliRunner().invoke(cli, ["index", "--corpus", str(root / "corpus.jsonl"), "--out", str(root / "idx"), "-q"])
    assert result.exit_code == 0, result.stderr
    return root / "idx"


def test_a_passage_store_of_another_build_is_refused_not_searched(runner, built, reversed_index):
    shutil.copy(reversed_index / "docstore.sqlite", built / "docstore.sqlite")  # Lucene of one build, store of another
    result = runner.invoke(cli, ["retrieve", "--index", str(built), "--hits", "3"], input=JOKER)
    assert result.exit_code != 0 and result.stdout == ""
    assert f"index {built} changed while cq was opening it" in result.stderr
    assert "the Lucene index is commit" in result.stderr and "Traceback" not in result.stderr


def test_dense_rows_missing_from_the_passage_store_are_refused():
    from cqtools.retrieval.dense import DenseSearcher

    class Store:
        def passages(self):
            return 3

        def known(self, ids):
            return sum(i in {"a", "b", "c"} for i in ids)

    dense = DenseSearcher.__new__(DenseSearcher)
    dense.docstore = type("Sparse", (), {"docstore": Store()})()
    dense.docids = ["a", "b", "c"]
    assert dense.mixed() is None
    dense.docids = ["a", "b", "x"]
    assert "not the passage store's 3" in dense.mixed()


def test_retrieve_while_an_index_is_swapped_in_a_loop_is_right_or_refused(fixture_index, reversed_index, tmp_path):
    """Real processes: `cq retrieve` runs while another thread replaces the index again and again as
    `cq index --overwrite` does (build beside, rename the old away, rename the new in, delete the old).
    Each run gives the right passages or a one-line error; never another build's passages."""
    import threading

    target = tmp_path / "idx"
    shutil.copytree(reversed_index, target)
    want = [p["id"] for p in _search_process(target)[1]]
    stop = threading.Event()

    def swap():
        n = 0
        while not stop.is_set():
            source = (fixture_index, reversed_index)[n % 2]
            fresh, old = tmp_path / f"new{n}", tmp_path / f"old{n}"
            shutil.copytree(source, fresh, ignore=shutil.ignore_patterns("dense"))
            os.rename(target, old)
            os.rename(fresh, target)
            shutil.rmtree(old)
            n += 1

    swapper = threading.Thread(target=swap)
    swapper.start()
    try:
        outcomes = [_search_process(target) for _ in range(3)]
    finally:
        stop.set()
        swapper.join()
    for rc, passages, stderr in outcomes:  # an error may also be "not found": between the two renames
        if rc == 0:                         # the name points nowhere, as with `mv idx old; mv new idx`
            assert [p["id"] for p in passages] == want, outcomes
        else:
            assert "Traceback" not in stderr and len(stderr.strip().splitlines()) == 1, outcomes


def _search_process(index):
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "cqtools", "retrieve", "--index", str(index), "--hits", "3",
                           "-q"], input=JOKER, capture_output=True, text=True, timeout=300)
    passages = parse_jsonl(done.stdout)[0]["passages"] if done.returncode == 0 else []
    return done.returncode, passages, done.stderr


# --- a build has an identity: same ids, edited texts (issue 36, item 1) --------------------------------

@pytest.fixture(scope="module")
def edited_index(tmp_path_factory):
    """A BM25 + dense index of the fixture corpus with every text edited in place: the same ids, in the
    same order, under the same Lucene document numbers (the usual rebuild of an edited corpus)."""
    import json

    from click.testing import CliRunner

    root = tmp_path_factory.mktemp("edited")
    records = [json.loads(line) for line in (FIXTURES / "corpus.jsonl").read_text().splitlines()]
    texts = [r["text"] for r in records]
    for r, text in zip(records, texts[1:] + texts[:1]):  # each id now holds its neighbour's text
        r["text"] = text
    (root / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    result = CliRunner().invoke(cli, ["index", "--corpus", str(root / "corpus.jsonl"), "--out", str(root / "idx"),
                                      "--dense", "-q"])
    assert result.exit_code == 0, result.stderr
    return root / "idx"


def test_a_passage_store_of_a_same_ids_build_is_refused(runner, tmp_path, fixture_index, edited_index):
    target = tmp_path / "idx"
    shutil.copytree(fixture_index, target)
    shutil.copy(edited_index / "docstore.sqlite", target / "docstore.sqlite")  # same ids, counts and docnums
    result = runner.invoke(cli, ["retrieve", "--index", str(target), "--hits", "3"], input=JOKER)
    assert result.exit_code != 0 and result.stdout == "", result.stdout
    assert f"index {target} changed while cq was opening it" in result.stderr and "commit" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("method", ["dense", "hybrid"])
def test_a_dense_half_of_a_same_ids_build_is_refused(runner, tmp_path, fixture_index, edited_index, method):
    target = tmp_path / "idx"
    shutil.copytree(fixture_index, target)
    shutil.rmtree(target / "dense")
    shutil.copytree(edited_index / "dense", target / "dense")  # the other build's vectors, the same ids
    result = runner.invoke(cli, ["retrieve", "--index", str(target), "--method", method, "--hits", "3"],
                           input=JOKER)
    assert result.exit_code != 0 and result.stdout == "", result.stdout
    assert "changed while cq was opening it" in result.stderr and "dense index is build" in result.stderr
    assert "Traceback" not in result.stderr


def test_each_half_of_a_build_carries_the_same_generation(fixture_index):
    import json
    import sqlite3

    manifest = json.loads((Path(fixture_index) / "cq_index.json").read_text())
    store = dict(sqlite3.connect(Path(fixture_index) / "docstore.sqlite").execute("SELECT key, value FROM meta"))
    assert manifest["generation"] == store["generation"]
    assert (Path(fixture_index) / "dense" / "generation").read_text().strip() == store["generation"]
    assert len(store["lucene"]) == 32  # Lucene's own 16-byte commit id


def test_an_index_that_vanishes_after_click_saw_it_gets_cqs_own_one_line_error(runner, fixture_index, monkeypatch):
    """The swap loop above once lost a race in click itself: `--index` was a click.Path that stats the name and
    then asks os.access, so an index renamed away between the two gave click's four-line usage error. cq checks
    the index itself (one line, says what to do); click must not ask. os.access answering no stands in for the
    name vanishing between the stat and the access."""
    monkeypatch.setattr(os, "access", lambda *a, **k: False)
    assert _search(runner, fixture_index)
    result = runner.invoke(cli, ["retrieve", "--index", str(fixture_index) + "-gone"], input=QUESTION)
    assert result.exit_code == 1 and "Usage:" not in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "cq index" in result.stderr, result.stderr
