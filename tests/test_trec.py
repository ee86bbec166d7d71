"""TREC runs (cq retrieve --run) and Anserini/Pyserini topics (cq convert topics)."""
import gzip

import pytest

from cqtools.cli import cli
from cqtools.data.formats import TrecRun

from .conftest import jsonl, parse_jsonl

ARGS = ["--hits", "3", "--threads", "1"]


def retrieve(runner, index, text, *args):
    return runner.invoke(cli, ["retrieve", "--index", index, *ARGS, *args], input=text)


def run_lines(path):
    data = path.read_bytes()
    return (gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data).decode().splitlines()


def expected_lines(records, tag="cq-bm25"):
    """The run a JSONL output stands for: its passages in order, its ranks, its scores."""
    return [f"{r['id']} Q0 {p['id']} {p['rank']} {p['score']!r} {tag}" for r in records for p in r["passages"]]


@pytest.mark.parametrize("name", ["run.trec", "run.trec.gz"])
def test_run_matches_the_jsonl(runner, fixture_index, questions_text, tmp_path, name):
    run = tmp_path / name
    result = retrieve(runner, fixture_index, questions_text, "--run", str(run))
    assert result.exit_code == 0, result.stderr
    records = parse_jsonl(result.stdout)
    lines = run_lines(run)
    assert len(lines) == 3 * len(records) == 90
    assert all(len(line.split()) == 6 for line in lines)
    assert lines == expected_lines(records)
    for line in lines:  # the scores are the JSONL's, digit for digit
        assert line.split()[4] in result.stdout


def test_ties_keep_the_jsonl_order(tmp_path):
    path = tmp_path / "run.trec"
    sink = TrecRun(str(path), "t")
    passages = [{"id": "z9", "score": 2.5, "rank": 1}, {"id": "a1", "score": 2.5, "rank": 2},
                {"id": "m5", "score": 1.0, "rank": 3}]
    sink.write([{"id": "q1", "passages": passages}, {"id": "q2", "passages": []}])
    sink.commit()
    assert path.read_text().splitlines() == ["q1 Q0 z9 1 2.5 t", "q1 Q0 a1 2 2.5 t", "q1 Q0 m5 3 1.0 t"]


def test_run_tag_and_a_record_set_aside(runner, fixture_index, questions, tmp_path):
    run = tmp_path / "run.trec"
    stale = [{"id": "p0001", "score": 1.0, "rank": 1}]
    text = jsonl([questions[0], {"id": "bad", "question": None, "passages": stale}, questions[1]])
    result = retrieve(runner, fixture_index, text, "--on-error", "skip", "--run", str(run), "--run-tag", "mine")
    assert result.exit_code == 0, result.stderr
    records = parse_jsonl(result.stdout)
    assert "errors" in records[1]
    assert run_lines(run) == expected_lines([records[0], records[2]], tag="mine")  # no stale lines for 'bad'


def test_no_run_file_from_a_failed_run(runner, fixture_index, questions, tmp_path):
    run = tmp_path / "run.trec"
    text = jsonl(questions[:3]) + "{broken\n"
    result = retrieve(runner, fixture_index, text, "--batch-size", "1", "--run", str(run))
    assert result.exit_code == 1 and "line 4" in result.stderr
    assert len(parse_jsonl(result.stdout)) == 3  # what was written stays written
    assert not run.exists() and not [p for p in tmp_path.iterdir() if ".tmp" in p.name]


def test_ids_with_spaces_are_a_one_line_error(runner, fixture_index, tmp_path):
    run = tmp_path / "run.trec"
    result = retrieve(runner, fixture_index, '{"id": "q 1", "question": "Joker"}\n', "--run", str(run))
    assert result.exit_code == 1 and "whitespace" in result.stderr and result.stderr.strip().count("\n") == 0
    assert not run.exists()
    bad_tag = retrieve(runner, fixture_index, "", "--run", str(run), "--run-tag", "a b")
    assert bad_tag.exit_code == 1 and "--run-tag" in bad_tag.stderr


def test_shard_runs_cat_into_the_full_run(runner, fixture_index, questions_text, tmp_path):
    full = tmp_path / "full.trec"
    retrieve(runner, fixture_index, questions_text, "--run", str(full))
    parts = []
    for i in range(3):
        part = tmp_path / f"run.{i}.trec"
        result = retrieve(runner, fixture_index, questions_text, "--shard", f"{i}/3", "--run", str(part))
        assert result.exit_code == 0, result.stderr
        parts += run_lines(part)
    assert sorted(parts) == sorted(run_lines(full))


def test_resume_rewrites_the_whole_run(runner, fixture_index, questions, questions_text, tmp_path):
    full = tmp_path / "full.trec"
    retrieve(runner, fixture_index, questions_text, "--run", str(full))
    out, run = tmp_path / "out.jsonl.gz", tmp_path / "run.trec"
    first = retrieve(runner, fixture_index, jsonl(questions[:12]), "--resume", str(out))  # as if killed at 12
    assert first.exit_code == 0 and not run.exists()
    rest = retrieve(runner, fixture_index, questions_text, "--resume", str(out), "--run", str(run))
    assert rest.exit_code == 0, rest.stderr
    assert run_lines(run) == run_lines(full)


# --- cq convert topics ---------------------------------------------------------------------------------

def test_topics_tsv(runner, tmp_path):
    path = tmp_path / "topics.dev.tsv"
    path.write_text("1\twho played the joker\n\n2\twhen was the eiffel tower built\textra\n3\ttaxi driver star\r\n")
    result = runner.invoke(cli, ["convert", "topics", str(path)])
    assert result.exit_code == 0, result.stderr
    assert parse_jsonl(result.stdout) == [{"id": "1", "question": "who played the joker"},
                                          {"id": "2", "question": "when was the eiffel tower built"},
                                          {"id": "3", "question": "taxi driver star"}]
    gz = tmp_path / "topics.dev.tsv.gz"
    gz.write_bytes(gzip.compress(path.read_bytes()))
    assert runner.invoke(cli, ["convert", "topics", str(gz)]).stdout == result.stdout


def test_topics_bad_line_is_one_line(runner, tmp_path):
    path = tmp_path / "topics.tsv"
    path.write_text("1\tfine\n2 no tab here\n")
    result = runner.invoke(cli, ["convert", "topics", str(path)])
    assert result.exit_code == 1 and "line 2" in result.stderr and "qid<TAB>query" in result.stderr
    assert result.stderr.strip().count("\n") == 0


def test_topics_then_retrieve_with_a_run(runner, fixture_index, tmp_path):
    topics = tmp_path / "topics.tsv"
    topics.write_text("t1\tWho played the Joker?\nt2\tWhen was the Eiffel Tower built?\n")
    questions = tmp_path / "q.jsonl.gz"
    assert runner.invoke(cli, ["convert", "topics", str(topics), "-o", str(questions)]).exit_code == 0
    run = tmp_path / "run.trec"
    result = runner.invoke(cli, ["retrieve", "--index", str(fixture_index), *ARGS, "--run", str(run)],
                           input=questions.read_bytes())
    assert result.exit_code == 0, result.stderr
    assert [line.split()[0] for line in run_lines(run)] == ["t1"] * 3 + ["t2"] * 3
