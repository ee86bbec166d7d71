"""A pipe or FIFO is read as one (issue 57 item 10): `cq convert ambignq <(cat dev_light.json)` was refused as
"not valid JSON ... line 1 column 2" (the file was opened twice; the second read of a pipe is empty) and
`cq index --corpus <(...)` said "not found". Now cq convert reads it, and cq index/encode refuse a pipe as a pipe."""
import os
import subprocess
import sys
import threading

import pytest

from .conftest import FIXTURES


def fifo_of(tmp_path, data: bytes) -> str:
    path = str(tmp_path / "fifo")
    os.mkfifo(path)

    def feed():
        with open(path, "wb") as fh:
            fh.write(data)

    threading.Thread(target=feed, daemon=True).start()
    return path


@pytest.mark.parametrize("fmt, name", [("ambignq", "ambignq_light.json"), ("alce-asqa", None)])
def test_convert_reads_a_fifo_as_it_reads_the_file(tmp_path, fmt, name):
    if name is None:
        source = tmp_path / "alce.json"
        source.write_text('[{"sample_id": "q1", "question": "Who?", "qa_pairs": [{"question": "Who a?", '
                          '"short_answers": ["a"]}], "annotations": [{"long_answer": "A."}], "docs": []}]')
    else:
        source = FIXTURES / name
    cmd = [sys.executable, "-m", "cqtools", "convert", fmt]
    want = subprocess.run(cmd + [str(source)], capture_output=True, timeout=120)
    got = subprocess.run(cmd + [fifo_of(tmp_path, source.read_bytes())], capture_output=True, timeout=120)
    assert want.returncode == 0 and got.returncode == 0, got.stderr.decode()
    assert got.stdout == want.stdout and got.stdout


@pytest.mark.parametrize("command", ["index", "encode"])
def test_a_corpus_pipe_is_refused_as_a_pipe(tmp_path, command):
    fifo = str(tmp_path / "fifo")
    os.mkfifo(fifo)
    cmd = [sys.executable, "-m", "cqtools", command, "--corpus", fifo, "--out", str(tmp_path / "out")]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "is a pipe or FIFO" in done.stderr and done.stderr.count("\n") == 1, done.stderr
