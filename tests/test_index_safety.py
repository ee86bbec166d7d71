"""`cq index` never loses a user's data: an old index survives a failed rebuild, and --overwrite
touches nothing but an index."""
import os
import shutil

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
