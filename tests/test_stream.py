"""Stream discipline, tested through a real stage (BM25 retrieval on the fixture index)."""
import os
import subprocess
import sys

import orjson
import pytest

from cqtools.cli import cli

from .conftest import ROOT, jsonl, parse_jsonl

CQ = [sys.executable, "-m", "cqtools"]


def retrieve(runner, index, text, *args):
    return runner.invoke(cli, ["retrieve", "--index", index, "--hits", "3", *args], input=text)


def test_one_record_out_per_record_in_keys_untouched(runner, fixture_index, questions):
    records = [dict(q, extra={"nested": [1, 2]}, zz="kept") for q in questions]
    result = retrieve(runner, fixture_index, jsonl(records), "--batch-size", "7")
    assert result.exit_code == 0, result.stderr
    out = parse_jsonl(result.stdout)
    assert [r["id"] for r in out] == [r["id"] for r in records]
    for before, after in zip(records, out):
        assert {k: after[k] for k in before} == before
        assert set(after) - set(before) == {"passages", "meta"}


def test_stdout_is_only_jsonl(runner, fixture_index, questions_text):
    result = retrieve(runner, fixture_index, questions_text)
    assert result.exit_code == 0
    for line in result.stdout.splitlines():
        assert isinstance(orjson.loads(line), dict)


def test_empty_input(runner, fixture_index):
    result = retrieve(runner, fixture_index, "")
    assert result.exit_code == 0 and result.stdout == ""


@pytest.mark.parametrize("bad, what", [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "expected a JSON object"),
    ('{"id": "x9"}', "missing required key 'question' (record x9)"),
])
def test_malformed_line_names_the_line_and_keeps_earlier_output(runner, fixture_index, questions, bad, what):
    text = jsonl(questions[:2]) + bad + "\n" + jsonl(questions[2:4])
    result = retrieve(runner, fixture_index, text, "--query-field", "question")
    assert result.exit_code == 1
    assert result.stderr.strip().count("\n") == 0, result.stderr
    assert "line 3" in result.stderr and what in result.stderr
    assert [r["id"] for r in parse_jsonl(result.stdout)] == ["fx01", "fx02"]


def test_on_error_skip_counts(runner, fixture_index, questions):
    text = jsonl(questions[:2]) + "{oops\n" + jsonl(questions[2:4])
    result = retrieve(runner, fixture_index, text, "--on-error", "skip")
    assert result.exit_code == 0
    assert len(parse_jsonl(result.stdout)) == 4
    assert "line 3" in result.stderr and "skipped 1 malformed line" in result.stderr


def test_records_without_id_get_their_line_number(runner, fixture_index):
    result = retrieve(runner, fixture_index, '{"question": "Who wrote The Hobbit?"}\n')
    assert parse_jsonl(result.stdout)[0]["id"] == "1"


def test_shards_partition_the_input(runner, fixture_index, questions_text, questions):
    parts = [parse_jsonl(retrieve(runner, fixture_index, questions_text, "--shard", f"{i}/3").stdout)
             for i in range(3)]
    assert sorted(r["id"] for p in parts for r in p) == sorted(q["id"] for q in questions)
    assert [r["id"] for r in parts[1]] == [q["id"] for q in questions[1::3]]
    bad = retrieve(runner, fixture_index, questions_text, "--shard", "3/3")
    assert bad.exit_code == 2 and "I must be in 0..N-1" in bad.stderr


def test_resume_appends_only_missing_and_repairs_a_torn_line(runner, fixture_index, questions_text, tmp_path):
    full = retrieve(runner, fixture_index, questions_text).stdout
    lines = full.splitlines(keepends=True)
    out = tmp_path / "out.jsonl"
    out.write_text("".join(lines[:10]) + lines[10][:50])  # killed in the middle of line 11
    result = retrieve(runner, fixture_index, questions_text, "--resume", str(out))
    assert result.exit_code == 0 and result.stdout == ""
    assert out.read_text() == full


def test_missing_index_is_one_line(runner, tmp_path):
    result = runner.invoke(cli, ["retrieve", "--index", str(tmp_path / "nope")], input='{"question": "q"}\n')
    assert result.exit_code == 1
    assert "not found" in result.stderr and "cq index" in result.stderr
    assert "Traceback" not in result.stderr


def test_streams_before_input_ends(fixture_index):
    """Output for the first record appears while stdin is still open: nothing buffers the input."""
    proc = subprocess.Popen(CQ + ["retrieve", "--index", fixture_index, "--batch-size", "1", "--hits", "1"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=ROOT)
    try:
        proc.stdin.write(b'{"id": "a", "question": "Who wrote The Hobbit?"}\n')
        proc.stdin.flush()
        first = proc.stdout.readline()
        assert orjson.loads(first)["id"] == "a"
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0
    finally:
        proc.kill()


def test_closed_pipe_ends_quietly(fixture_index):
    cmd = (f"{sys.executable} -m cqtools retrieve --index {fixture_index} --hits 20 "
           f"< fixtures/questions.jsonl | head -1")
    out = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], capture_output=True, text=True, cwd=ROOT,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert out.stdout.count("\n") == 1
    assert "Traceback" not in out.stderr and "BrokenPipe" not in out.stderr, out.stderr
