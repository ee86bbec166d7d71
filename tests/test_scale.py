"""Scale-out: a killed stage resumes to exactly the uninterrupted output; shards merge back."""
import os
import signal
import subprocess
import sys
import time

import orjson
import pytest

from cqtools.cli import cli

from .conftest import ROOT, jsonl, parse_jsonl


@pytest.fixture(scope="module")
def many(questions):
    """600 records (the fixtures twenty times, unique ids): enough to kill a run midway."""
    return jsonl({**q, "id": f"{q['id']}-{n}"} for n in range(20) for q in questions)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_kill_then_resume_equals_uninterrupted(fixture_index, many, tmp_path, runner, sig):
    args = ["retrieve", "--index", fixture_index, "--hits", "3", "--batch-size", "1", "--threads", "1"]
    full = runner.invoke(cli, args, input=many).stdout
    src = tmp_path / "in.jsonl"
    src.write_text(many)
    out = tmp_path / "out.jsonl"
    cmd = [sys.executable, "-m", "cqtools", *args, "--resume", str(out)]
    with open(src, "rb") as fin:
        proc = subprocess.Popen(cmd, stdin=fin, stderr=subprocess.DEVNULL, cwd=ROOT)
        deadline = time.time() + 120
        while time.time() < deadline and (not out.exists() or out.read_bytes().count(b"\n") < 40):
            time.sleep(0.05)
        proc.send_signal(sig)
        proc.wait(timeout=60)
    partial = out.read_bytes().count(b"\n")
    assert 40 <= partial < 600, "the run was not interrupted midway"
    with open(src, "rb") as fin:
        done = subprocess.run(cmd, stdin=fin, capture_output=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr.decode()
    assert out.read_text() == full
    ids = [r["id"] for r in parse_jsonl(out.read_text())]
    assert len(ids) == len(set(ids)) == 600


def test_shards_merge_back_in_order(fixture_index, questions_text, tmp_path, runner):
    args = ["retrieve", "--index", fixture_index, "--hits", "2"]
    full = runner.invoke(cli, args, input=questions_text).stdout
    paths = []
    for i in range(4):
        path = tmp_path / f"out.{i}.jsonl"
        path.write_text(runner.invoke(cli, args + ["--shard", f"{i}/4"], input=questions_text).stdout)
        paths.append(str(path))
    merged = runner.invoke(cli, ["merge", *paths])
    assert merged.exit_code == 0 and merged.stdout == full
    src = tmp_path / "in.jsonl"
    src.write_text(questions_text)
    by_order = runner.invoke(cli, ["merge", *reversed(paths), "--order", str(src)])
    assert by_order.stdout == full
    wrong = runner.invoke(cli, ["merge", paths[3], paths[0]])
    assert wrong.exit_code == 1 and "in order 0..N-1" in wrong.stderr
    assert "no run record" in merged.stderr  # written by a redirect: merge says what it cannot check


def _shard_outputs(runner, fixture_index, text, tmp_path, n=2, extra=()):
    args = ["retrieve", "--index", fixture_index, "--hits", "2"]
    paths = [str(tmp_path / f"out.{i}.jsonl") for i in range(n)]
    for i, path in enumerate(paths):
        result = runner.invoke(cli, args + ["--shard", f"{i}/{n}", "--resume", path, *extra], input=text)
        assert result.exit_code == 0, result.stderr
    return args, paths


def test_merge_checks_run_records(fixture_index, questions_text, tmp_path, runner):
    args, paths = _shard_outputs(runner, fixture_index, questions_text, tmp_path)
    full = runner.invoke(cli, args, input=questions_text).stdout
    merged = runner.invoke(cli, ["merge", *paths])
    assert merged.exit_code == 0 and merged.stdout == full and "no run record" not in merged.stderr
    swapped = runner.invoke(cli, ["merge", paths[1], paths[0]])
    assert swapped.exit_code == 1 and "--shard 1/2, but is shard 0/2" in swapped.stderr
    other = runner.invoke(cli, args + ["--shard", "1/2", "--resume", str(tmp_path / "h.jsonl"), "--hits", "3"],
                          input=questions_text)
    assert other.exit_code == 0
    mixed = runner.invoke(cli, ["merge", paths[0], str(tmp_path / "h.jsonl")])
    assert mixed.exit_code == 1 and "different configuration" in mixed.stderr and "--hits: 2 != 3" in mixed.stderr


def test_merge_refuses_an_incomplete_shard(fixture_index, questions, tmp_path, runner):
    text = jsonl(questions[:10])
    args, paths = _shard_outputs(runner, fixture_index, text, tmp_path)
    lines = open(paths[1]).read().splitlines(keepends=True)
    open(paths[1], "w").write("".join(lines[:-1]))  # lost its last record: sizes 5, 4 still fit a 2-way split
    short = runner.invoke(cli, ["merge", *paths])
    assert short.exit_code == 1 and "its share of the 10 input records is 5" in short.stderr, short.stderr
    record = tmp_path / "out.1.jsonl.cq.json"
    record.write_bytes(record.read_bytes().replace(b'"complete": true', b'"complete": false'))
    killed = runner.invoke(cli, ["merge", *paths])
    assert killed.exit_code == 1 and "did not finish" in killed.stderr
    record.unlink()
    open(paths[1], "w").write("".join(lines[:-2]))  # no run record: sizes 5, 3 cannot be a 2-way split
    cut = runner.invoke(cli, ["merge", *paths])
    assert cut.exit_code == 1 and "at least two more records" in cut.stderr and cut.stdout.count("\n") == 7


def test_merge_names_the_shard_with_a_bad_line(fixture_index, questions, tmp_path, runner):
    args, paths = _shard_outputs(runner, fixture_index, jsonl(questions[:4]), tmp_path)
    with open(paths[1], "a") as fh:
        fh.write("{broken\n")
    os.unlink(paths[1] + ".cq.json")
    result = runner.invoke(cli, ["merge", *paths])
    assert result.exit_code == 1 and f"{paths[1]} line 3" in result.stderr
