"""Issue 48, reliability round 4, plain runs (the fork server's cases: tests/test_forkserver_exact.py): a pipe or FIFO
as FILE, a FIFO or a damaged passage store in an index, a cut .gz on stdin, and chat's inputs. Each a one-line error
or the records, never a traceback or a wait forever; each test failed on b91c526."""
from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
import threading
import zlib

import pytest

from .conftest import FIXTURES, ROOT
from .conftest_models import bm25_index  # noqa: F401 - a fixture

CQ = [sys.executable, "-m", "cqtools"]
QUESTIONS = FIXTURES / "questions.jsonl"


def _cq(args, stdin=None, cwd=None, timeout=120, data=None):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("CQ_SERVER", None)
    return subprocess.run([*CQ, *args], stdin=stdin, input=data, capture_output=True, cwd=cwd or ROOT, env=env,
                          timeout=timeout)


def _one_line(run, code: int, *words: str) -> None:
    lines = run.stderr.decode().splitlines()
    assert run.returncode == code and len(lines) == 1 and all(w in lines[0] for w in words), run.stderr.decode()


def test_a_fifo_as_file_argument_is_read_once_for_its_records(tmp_path):
    """`cq detect <(...)` processed 0 records with exit 0 (the progress total read the pipe first)."""
    fifo = tmp_path / "in.jsonl"
    os.mkfifo(fifo)

    def feed():
        with open(fifo, "wb") as fh:
            fh.write(QUESTIONS.read_bytes())

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    run = _cq(["detect", "--method", "always", str(fifo)], timeout=60)
    writer.join(timeout=10)
    assert run.returncode == 0, run.stderr
    assert len(run.stdout.splitlines()) == len(QUESTIONS.read_text().splitlines()) == 30


def _cut_gz(tmp_path):
    data = gzip.compress(QUESTIONS.read_bytes() * 40, mtime=0)
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(data[:3000])
    return cut, zlib.decompressobj(31).decompress(data[:3000]).count(b"\n")  # the whole records before the cut


def test_a_cut_gz_on_stdin_processes_its_good_records(tmp_path):
    """Off a terminal the progress total counted the file first, met the cut, and processed none of it."""
    cut, whole = _cut_gz(tmp_path)
    with open(cut, "rb") as fh:
        run = _cq(["detect", "--method", "always"], stdin=fh)
    _one_line(run, 1, f"line {whole + 1}:", "cut short or damaged", "the records before it were processed")
    assert len(run.stdout.splitlines()) == whole > 10


def test_a_cut_gz_on_stdin_leaves_no_temp_file_beside_o(tmp_path):
    cut, _ = _cut_gz(tmp_path)
    out = tmp_path / "out" / "detected.jsonl"
    out.parent.mkdir()
    with open(cut, "rb") as fh:
        run = _cq(["detect", "--method", "always", "-o", str(out)], stdin=fh)
    _one_line(run, 1, "cut short or damaged")
    assert os.listdir(out.parent) == []  # no .detected.jsonl.tmpNNN left


@pytest.fixture
def index_copy(bm25_index, tmp_path):  # noqa: F811
    copy = tmp_path / "index"
    shutil.copytree(bm25_index, copy)
    return copy


def test_a_fifo_in_place_of_an_index_file_is_an_error_not_a_wait(index_copy):
    matrix = index_copy / "bm25_matrix.npz"
    assert matrix.is_file()
    matrix.unlink()
    os.mkfifo(matrix)
    with open(QUESTIONS, "rb") as fh:
        run = _cq(["retrieve", "--index", str(index_copy), "--method", "bm25"], stdin=fh, timeout=60)
    _one_line(run, 1, str(matrix), "not a regular file")


@pytest.mark.parametrize("damage", ["not a database", "cut"])
def test_a_damaged_passage_store_is_one_line(index_copy, damage):
    store = index_copy / "docstore.sqlite"
    if damage == "cut":
        store.write_bytes(store.read_bytes()[:8192])
    else:
        store.write_text("these words are not a database\n")
    with open(QUESTIONS, "rb") as fh:
        run = _cq(["retrieve", "--index", str(index_copy), "--method", "bm25"], stdin=fh)
    _one_line(run, 1, str(store), "the passage store is damaged", "cq index")


def _chat(index, script):
    return _cq(["chat", "--index", str(index), "--retrieve", "bm25", "--rerank-top", "0", "--detect", "never",
                "--script", str(script), "-q"], stdin=subprocess.DEVNULL, timeout=300)


def test_a_chat_script_that_is_not_utf8_is_one_line(bm25_index, tmp_path):  # noqa: F811
    script = tmp_path / "inputs.txt"
    script.write_bytes(b"Who played the Joker?\nWho \xff\xfe wrote it?\n")
    _one_line(_chat(bm25_index, script), 1, f"--script {script} line 2", "not UTF-8")


def test_a_chat_question_over_the_limit_is_refused_as_every_stage_refuses_it(bm25_index, tmp_path):  # noqa: F811
    """A question of 1,200 words (6,094 characters) made the reader's tokenizer raise (a traceback)."""
    script = tmp_path / "inputs.txt"
    script.write_text("Who " + " ".join(f"w{i}" for i in range(1200)) + "?\n")
    run = _chat(bm25_index, script)
    assert run.returncode == 1
    assert run.stderr.decode().splitlines()[-1].startswith(f"cq chat: error: --script {script} line 1: 'question' "
                                                           "has 6094 characters, over the limit of 4000")
    assert b"Traceback" not in run.stderr


@pytest.mark.parametrize("kept,problem", [((), "has no config.json"), (("config.json",), "has no tokenizer"),
                                          (("config.json", "tokenizer.json"), "has no weights")])
def test_cq_models_runs_the_checks_every_stage_runs(tmp_path, kept, problem):
    """`cq models --model DIR` said usable for a folder that `cq answer --model DIR` refuses before loading."""
    shipped = ROOT / "cqtools" / "shipped" / "reader"
    folder = tmp_path / "model"
    folder.mkdir()
    for name in kept:
        shutil.copy(shipped / name, folder / name)
    listed = _cq(["models", "--model", str(folder), "--json"])
    row = json.loads(listed.stdout)
    assert listed.returncode == 1 and row["usable"] is False and problem in row["problem"], listed.stdout
    record = b'{"id": "q", "question": "Who?", "passages": [{"id": "p", "title": "t", "text": "x"}]}\n'
    stage = _cq(["answer", "--model", str(folder)], data=record)
    assert stage.returncode == 1 and problem in stage.stderr.decode(), stage.stderr


def test_a_question_longer_than_the_readers_input_is_read_in_part_not_a_traceback():
    """700 words (3,500 characters, under the question limit) filled the shipped reader's whole input: the
    tokenizer raised "Truncation error" (a traceback). Now the reader reads the question's first half-input."""
    question = "Who " + " ".join(f"w{i}" for i in range(700)) + "?"
    record = {"id": "q", "question": question,
              "passages": [{"id": "p", "title": "The Dark Knight", "text": "Heath Ledger played the Joker."}]}
    run = _cq(["answer", "--mode", "multi"], data=(json.dumps(record) + "\n").encode())
    assert run.returncode == 0, run.stderr.decode()[-2000:]
    assert b"Traceback" not in run.stderr and b"reads the question's first" in run.stderr
    assert json.loads(run.stdout)["id"] == "q"
