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
    assert retrieve(runner, fixture_index, questions_text, "--resume", str(out)).exit_code == 0
    assert out.read_text() == full
    out.write_text("".join(lines[:10]) + lines[10][:50])  # killed in the middle of line 11
    result = retrieve(runner, fixture_index, questions_text, "--resume", str(out))
    assert result.exit_code == 0 and result.stdout == ""
    assert out.read_text() == full
    record = orjson.loads((tmp_path / "out.jsonl.cq.json").read_bytes())
    assert record["complete"] and record["input_records"] == record["records_written"] == len(lines)


def test_resume_refuses_another_configuration(runner, fixture_index, questions, tmp_path):
    out = tmp_path / "out.jsonl"
    text = jsonl(questions[:4])
    assert retrieve(runner, fixture_index, jsonl(questions[:2]), "--resume", str(out)).exit_code == 0
    before = out.read_bytes()
    result = retrieve(runner, fixture_index, text, "--resume", str(out), "--method", "dense")
    # the run record holds the models' fingerprints, so the encoder is resolved (and, the first time in a
    # process, announced on an info line) before the record is compared: one error line, the last
    errors = [line for line in result.stderr.splitlines() if not line.startswith("cq: model ")]
    assert result.exit_code == 1 and len(errors) == 1 and result.stderr.endswith(errors[0] + "\n"), result.stderr
    assert "--method: 'bm25' != 'dense'" in errors[0] and "--force-resume" in errors[0]
    assert out.read_bytes() == before
    forced = retrieve(runner, fixture_index, text, "--resume", str(out), "--method", "dense", "--force-resume")
    assert forced.exit_code == 0, forced.stderr
    assert [r["id"] for r in parse_jsonl(out.read_text())] == [q["id"] for q in questions[:4]]
    assert orjson.loads((tmp_path / "out.jsonl.cq.json").read_bytes())["forced_over"]["params"]["method"] == "bm25"


def test_resume_refuses_output_without_run_record(runner, fixture_index, questions, tmp_path):
    out = tmp_path / "out.jsonl"
    out.write_text(retrieve(runner, fixture_index, jsonl(questions[:2])).stdout + '{"id": "fx03", "que')
    before = out.read_bytes()
    result = retrieve(runner, fixture_index, jsonl(questions[:4]), "--resume", str(out))
    assert result.exit_code == 1 and "no run record" in result.stderr
    assert out.read_bytes() == before  # a refused resume changes nothing, not even a torn line
    assert retrieve(runner, fixture_index, jsonl(questions[:4]), "--resume", str(out),
                    "--force-resume").exit_code == 0
    assert [r["id"] for r in parse_jsonl(out.read_text())] == [q["id"] for q in questions[:4]]


def test_resume_is_by_position_duplicate_ids_kept(runner, fixture_index, questions, tmp_path):
    q = questions
    records = [dict(q[0], id="a"), dict(q[1], id="b"), dict(q[2], id="a"), dict(q[3], id="c")]
    full = retrieve(runner, fixture_index, jsonl(records)).stdout
    out = tmp_path / "out.jsonl"
    assert retrieve(runner, fixture_index, jsonl(records[:2]), "--resume", str(out)).exit_code == 0
    assert retrieve(runner, fixture_index, jsonl(records), "--resume", str(out)).exit_code == 0
    assert out.read_text() == full
    assert [r["id"] for r in parse_jsonl(full)] == ["a", "b", "a", "c"]


def test_resume_refuses_another_input(runner, fixture_index, questions, tmp_path):
    out = tmp_path / "out.jsonl"
    assert retrieve(runner, fixture_index, jsonl(questions[:2]), "--resume", str(out)).exit_code == 0
    result = retrieve(runner, fixture_index, jsonl(questions[1:5]), "--resume", str(out))
    assert result.exit_code == 1 and "another input" in result.stderr, result.stderr
    assert len(parse_jsonl(out.read_text())) == 2


def test_resume_into_a_new_directory(runner, fixture_index, questions, tmp_path):
    out = tmp_path / "not" / "yet" / "out.jsonl"
    result = retrieve(runner, fixture_index, jsonl(questions[:2]), "--resume", str(out))
    assert result.exit_code == 0, result.stderr
    assert len(parse_jsonl(out.read_text())) == 2


@pytest.mark.parametrize("field, value, what", [
    ("question", None, "'question' must be a string, got null"),
    ("question", 7, "'question' must be a string, got a number"),
    ("passages", "p1", "'passages' must be a list of objects, got a string"),
])
def test_bad_record_types(runner, fixture_index, questions, field, value, what):
    records = [questions[0], dict(questions[1], **{field: value}), questions[2]]
    failed = retrieve(runner, fixture_index, jsonl(records))
    assert failed.exit_code == 1 and failed.stderr.count("\n") == 1, failed.stderr
    assert what in failed.stderr and "line 2" in failed.stderr and questions[1]["id"] in failed.stderr
    assert [r["id"] for r in parse_jsonl(failed.stdout)] == [questions[0]["id"]]
    skipped = retrieve(runner, fixture_index, jsonl(records), "--on-error", "skip", "--batch-size", "3")
    assert skipped.exit_code == 0, skipped.stderr
    out = parse_jsonl(skipped.stdout)
    assert [r["id"] for r in out] == [r["id"] for r in records]  # one record out per record in
    assert out[1]["errors"]["retrieve"].startswith(what) and "passages" not in out[1] or field == "passages"
    assert out[0]["passages"] and out[2]["passages"] and "errors" not in out[0]


def test_missing_index_is_one_line(runner, tmp_path):
    result = runner.invoke(cli, ["retrieve", "--index", str(tmp_path / "nope")], input='{"question": "q"}\n')
    assert result.exit_code == 1
    assert "not found" in result.stderr and "cq index" in result.stderr
    assert "Traceback" not in result.stderr


def test_streams_before_input_ends(fixture_index):
    """Output for the first record appears while stdin is still open: nothing buffers the input (cq retrieve
    reads a batch ahead for its search only when the input is all there; from a pipe that held record 1's
    output until record 2 came, and this test waited forever: now the process is killed after 60 s)."""
    import threading

    proc = subprocess.Popen(CQ + ["retrieve", "--index", fixture_index, "--batch-size", "1", "--hits", "1"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=ROOT)
    timer = threading.Timer(60, proc.kill)
    timer.start()
    try:
        proc.stdin.write(b'{"id": "a", "question": "Who wrote The Hobbit?"}\n')
        proc.stdin.flush()
        first = proc.stdout.readline()
        assert orjson.loads(first)["id"] == "a"
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0
    finally:
        timer.cancel()
        proc.kill()


def test_closed_pipe_ends_quietly(fixture_index):
    cmd = (f"{sys.executable} -m cqtools retrieve --index {fixture_index} --hits 20 "
           f"< fixtures/questions.jsonl | head -1")
    out = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], capture_output=True, text=True, cwd=ROOT,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert out.stdout.count("\n") == 1
    assert out.returncode == 0, out.stderr  # with pipefail: a closed pipe is no failure (docs/schema.md)
    assert "Traceback" not in out.stderr and "BrokenPipe" not in out.stderr, out.stderr


def test_a_skipped_record_is_scored_as_missing(runner, questions):
    """docs/schema.md: a record written through under --on-error skip scores 0, it is not dropped."""
    records = questions[:3] + [dict(questions[3], question=None)]
    detected = runner.invoke(cli, ["detect", "--method", "always", "--on-error", "skip"], input=jsonl(records))
    assert detected.exit_code == 0 and len(parse_jsonl(detected.stdout)) == 4
    summary = orjson.loads(runner.invoke(cli, ["score", "--task", "detect"], input=detected.stdout).stdout)
    assert summary["n"] == 4 and summary["missing"] == 1


def test_resume_sees_options_applied_by_callbacks(runner, questions, tmp_path):
    """--max-input-tokens is applied through a callback, not passed to the command: the run
    record must still see it."""
    out = tmp_path / "out.jsonl"
    args = ["detect", "--method", "always", "--resume", str(out)]
    assert runner.invoke(cli, args, input=jsonl(questions[:2])).exit_code == 0
    record = orjson.loads((tmp_path / "out.jsonl.cq.json").read_bytes())
    assert record["params"]["max_input_tokens"] is None
    result = runner.invoke(cli, args + ["--max-input-tokens", "64"], input=jsonl(questions[:3]))
    assert result.exit_code == 1 and "--max-input-tokens: None != 64" in result.stderr, result.stderr
