"""`cq pyserini TOOL ...`: Pyserini's own search tools run in our environment on cq indexes, and
their TREC runs equal `cq retrieve`'s ranks and scores for the fixture questions."""
import os
import subprocess
import sys

import pytest

from cqtools.cli import cli

from .conftest import parse_jsonl
from .test_dpr import dpr_index, tiny_dpr  # noqa: F401  (module fixtures: a tiny DPR index)

HITS = 10


@pytest.fixture(scope="module")
def topics(tmp_path_factory, questions):
    path = tmp_path_factory.mktemp("topics") / "topics.tsv"
    path.write_text("".join(f"{q['id']}\t{q['question']}\n" for q in questions))
    return str(path)


def cq_run(runner, questions_text, index, method):
    result = runner.invoke(cli, ["retrieve", "--index", index, "--method", method, "--hits", str(HITS)],
                           input=questions_text)
    assert result.exit_code == 0, result.stderr
    return [(r["id"], h["id"], h["rank"], h["score"]) for r in parse_jsonl(result.stdout) for h in r["passages"]]


def pyserini_run(runner, tool, index, topics, out, *extra):
    result = runner.invoke(cli, ["pyserini", tool, "--index", index, "--topics", topics, "--output", str(out),
                                 "--hits", str(HITS), *extra])
    assert result.exit_code == 0, result.output
    rows = []
    for line in out.read_text().splitlines():
        qid, _, docid, rank, score, _tag = line.split()
        rows.append((qid, docid, int(rank), score))
    return rows


def test_search_lucene_equals_cq_retrieve(runner, fixture_index, topics, questions_text, tmp_path):
    theirs = pyserini_run(runner, "search.lucene", fixture_index, topics, tmp_path / "run.txt")
    ours = [(q, d, r, f"{s:.6f}") for q, d, r, s in cq_run(runner, questions_text, fixture_index, "bm25")]
    assert len(ours) > 250  # 291: a few questions match fewer than 10 passages
    assert theirs == ours  # ids, ranks and scores to the digit Pyserini writes


def _compare_dense(theirs, ours, atol):
    assert [row[:3] for row in theirs] == [row[:3] for row in ours]  # ids and ranks: identical
    worst = max(abs(float(t[3]) - o[3]) for t, o in zip(theirs, ours))
    assert worst <= atol, worst


def test_search_faiss_equals_cq_retrieve(runner, fixture_index, topics, questions_text, tmp_path):
    # Pyserini's AutoQueryEncoder (mean pooling, L2) and sentence-transformers differ in the last bits
    # of a query vector: scores agree to 1e-6 (the 6th decimal Pyserini writes may differ by one).
    # Ten questions: MiniLM query encoding is the slow part (all 30 agree the same way).
    some = tmp_path / "topics10.tsv"
    some.write_text("".join(open(topics).readlines()[:10]))
    theirs = pyserini_run(runner, "search.faiss", fixture_index, str(some), tmp_path / "run.txt")
    ours = cq_run(runner, "".join(questions_text.splitlines(keepends=True)[:10]), fixture_index, "dense")
    _compare_dense(theirs, ours, atol=1.5e-6)


def test_search_faiss_with_dpr_equals_cq_retrieve(runner, dpr_index, topics, questions_text, tmp_path):
    """Pyserini's own DprQueryEncoder over our DPR index: the same passages, ranks and raw inner products."""
    theirs = pyserini_run(runner, "search.faiss", dpr_index, topics, tmp_path / "run.txt")
    _compare_dense(theirs, cq_run(runner, questions_text, dpr_index, "dense"), atol=1e-4)


def test_unknown_tool_is_a_one_line_error(runner):
    result = runner.invoke(cli, ["pyserini", "search.nothing"])
    assert result.exit_code == 1 and "pyserini has no module pyserini.search.nothing" in result.stderr


@pytest.mark.slow
def test_console_script_runs_pyserini_in_a_fresh_process(fixture_index, topics, tmp_path):
    """The `cq` executable (its own JVM, nothing set up by the test session) runs search.lucene."""
    cq = os.path.join(os.path.dirname(sys.executable), "cq")
    out = tmp_path / "run.txt"
    done = subprocess.run([cq, "pyserini", "search.lucene", "--index", fixture_index, "--topics", topics,
                           "--output", str(out), "--hits", "3"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert len(out.read_text().splitlines()) == 30 * 3
