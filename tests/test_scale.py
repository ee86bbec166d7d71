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
    assert wrong.exit_code == 1 and "out of order" in wrong.stderr
