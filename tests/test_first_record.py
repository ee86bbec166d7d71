"""Bad input is found before a model loads (issue 57 item 11): the first record is read and checked first.

Each case names a model that cannot load (a path that does not exist): a run that loaded its model before reading
its input would end with the model's error; the check ends with the input's. Pipes whose writer has not written a
line yet are not waited for (the model loads meanwhile), and every byte of the input still reaches the stage.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

CQ = [sys.executable, "-m", "cqtools"]
NO_MODEL = "/nonexistent/model-dir"


def run(args, stdin: bytes | None = None, shell_stdin: str | None = None, path: Path | None = None):
    env = {**os.environ, "CQ_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "CQ_MODEL_READER": NO_MODEL}
    if shell_stdin is not None:  # a real pipe: `... | cq ARGS`
        cmd = f"{shell_stdin} | {' '.join(CQ)} {' '.join(args)}"
        return subprocess.run(["bash", "-c", cmd], capture_output=True, env=env, timeout=300)
    if path is not None:
        with open(path, "rb") as fh:
            return subprocess.run(CQ + list(args), stdin=fh, capture_output=True, env=env, timeout=300)
    return subprocess.run(CQ + list(args), input=stdin, capture_output=True, env=env, timeout=300)


def one_line(proc) -> str:
    lines = proc.stderr.decode().strip().splitlines()
    assert proc.returncode != 0 and lines, proc.stderr.decode()
    assert "Traceback" not in proc.stderr.decode()
    return lines[-1]


@pytest.mark.parametrize("how", ["pipe", "file"])
def test_plain_text_is_refused_before_the_detector_loads(tmp_path, how):
    text = tmp_path / "q.txt"
    text.write_text("Who played the Joker?\n")
    kw = {"shell_stdin": f"cat {text}"} if how == "pipe" else {"path": text}
    line = one_line(run(["detect", "--model", NO_MODEL], **kw))
    assert "line 1: not valid JSON" in line and NO_MODEL not in line


@pytest.mark.parametrize("args", [["rerank", "--model", NO_MODEL], ["answer", "--model", NO_MODEL],
                                  ["gen-cq"]])
def test_a_record_without_passages_is_refused_before_the_model_loads(tmp_path, args):
    records = tmp_path / "r.jsonl"
    records.write_text('\n{"id": "q7", "question": "Who played the Joker?"}\n')
    # gen-cq's pred-answers loads its reader ($CQ_MODEL_READER: none here) on the first record needing answers
    line = one_line(run(args, path=records))
    assert "line 2" in line and "q7" in line and "'passages'" in line and "cq retrieve" in line


def test_file_arguments_are_checked_too(tmp_path):
    records = tmp_path / "r.jsonl"
    records.write_text('{"id": "q1", "question": "Who?"}\n')
    line = one_line(run(["rerank", "--model", NO_MODEL, str(records)]))
    assert f"line 1 of {records}" in line and "'passages'" in line


def test_skip_lets_a_bad_first_line_through(tmp_path):
    """Under --on-error skip a bad line is skipped, not fatal: the check does not end the run."""
    records = tmp_path / "r.jsonl"
    records.write_text('not json\n{"id": "q1", "question": "Who played the Joker?"}\n')
    proc = run(["detect", "--method", "always", "--on-error", "skip"], path=records)
    assert proc.returncode == 0, proc.stderr.decode()
    assert b'"q1"' in proc.stdout


def test_every_byte_reaches_the_stage_through_a_pipe(tmp_path):
    """A pipe read ahead (the first record checked) and one written late (not waited for) give the file's output."""
    lines = [f'{{"id": "q{n}", "question": "Question number {n}?"}}' for n in range(300)]
    records = tmp_path / "r.jsonl"
    records.write_text("\n".join(lines))  # no final newline: the last record is still a record
    want = run(["detect", "--method", "always"], path=records)
    assert want.returncode == 0 and want.stdout.count(b"\n") == 300
    for shell in (f"cat {records}", f"(sleep 0.5; cat {records})", f"(head -c 10 {records}; sleep 0.5; "
                                                                    f"tail -c +11 {records})"):
        got = run(["detect", "--method", "always"], shell_stdin=shell)
        assert got.returncode == 0, got.stderr.decode()
        assert got.stdout == want.stdout, shell
