"""Issue 37, item 2 (the smoke run's speed): cq's opt-in fork server (cqtools/forkserver). A run it takes gives the
bytes, stderr and exit status of a process of its own; whatever it cannot take exactly runs in its own process;
pipes end when the run ends; signals reach the run."""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from cqtools.forkserver import server as fs
from cqtools.forkserver import start

from .conftest import FIXTURES, ROOT


PROGRESS_LINE = re.compile(  # progress.Lines.line: "DESC: N[/TOTAL] UNIT in T, R/s" and ", ~T left" or " (ended)"
    rb"^cq: [^\n]*: [0-9/]+ [a-z]+ in (\d+h)?(\d+m)?\d+s, [0-9.]+/s(, ~[^\n]* left| \(ended\))\n", re.MULTILINE)


def _untimed(stderr: bytes) -> bytes:
    """stderr less its progress lines (progress.Lines: "cq: answer: 8 records in 7s, 0.93/s (ended)", and
    "... 3/8 records in 30s, 0.10/s, ~50s left"): the one part of a run's output that is the clock's, not the
    run's. Whether one is written at all is the clock's too (a stage that ran 5 s or more ends with one), so the
    whole line goes: a served run with torch preloaded can finish under 5 s where its own process, on a loaded
    machine, does not (make test failed so twice at load 2)."""
    return PROGRESS_LINE.sub(b"", stderr)

CQ = [sys.executable, "-m", "cqtools"]


def _env(**extra) -> dict:
    # PYTEST_CURRENT_TEST changes between a fixture's setup and the test: left out (it would be refused)
    env = {k: v for k, v in os.environ.items() if k not in ("CQ_SERVER", "PYTEST_CURRENT_TEST")}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


@pytest.fixture
def served(tmp_path):
    """A server at a short socket path (nothing preloaded but cqtools' commands: quick to start); yields
    (socket, log file); stopped afterwards."""
    folder = tempfile.mkdtemp(prefix="cqfs")
    path, log = os.path.join(folder, "s.sock"), tmp_path / "server.log"
    with open(log, "w") as err:
        proc = subprocess.Popen([*CQ[:1], "-m", "cqtools.forkserver", path, "--idle", "60", "--preload", ""],
                                env=_env(), stdin=subprocess.DEVNULL, stdout=err, stderr=err, cwd=ROOT)
    deadline = time.time() + 120
    while not os.path.exists(path) and proc.poll() is None and time.time() < deadline:
        time.sleep(0.1)
    assert os.path.exists(path), log.read_text()
    yield path, log
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)
    assert not os.path.exists(path)  # it removes its socket
    shutil.rmtree(folder, ignore_errors=True)


def _cq(args, path=None, stdin=None, **env):
    extra = {"CQ_SERVER": path} if path else {}
    return subprocess.run([*CQ, *args], input=stdin, capture_output=True, env=_env(**extra, **env), cwd=ROOT,
                          timeout=120)


def _runs(log: Path) -> int:
    return log.read_text().count(": run ")


def test_a_served_run_writes_what_its_own_process_writes(served):
    path, log = served
    questions = (FIXTURES / "questions.jsonl").read_bytes()
    for args in (["detect", "--method", "always"], ["detect", "--method", "nonsense"], ["score", "--task", "detect"]):
        alone, there = _cq(args, stdin=questions), _cq(args, path, stdin=questions)
        assert (there.returncode, there.stdout, _untimed(there.stderr)) == (alone.returncode, alone.stdout,
                                                                           _untimed(alone.stderr))
    assert alone.returncode == 0 and alone.stdout
    assert _runs(log) == 3  # all three ran in the server (the failing one too)


def test_what_the_server_cannot_take_runs_in_its_own_process(served, tmp_path):
    path, log = served
    questions = (FIXTURES / "questions.jsonl").read_bytes()
    alone = _cq(["detect", "--method", "always"], stdin=questions)
    # an environment that differs in something read at import time: refused, run here, same records
    other = _cq(["detect", "--method", "always"], path, stdin=questions, OMP_NUM_THREADS="7")
    assert other.stdout == alone.stdout and other.returncode == 0
    assert "refused: its environment differs in OMP_NUM_THREADS" in log.read_text()
    # a CQ_* variable may differ (cq reads them when a command runs): served
    assert _cq(["detect", "--method", "always"], path, stdin=questions, CQ_SEED="3").stdout == alone.stdout
    # no server at that path: its own process
    gone = _cq(["detect", "--method", "always"], str(tmp_path / "none.sock"), stdin=questions)
    assert gone.stdout == alone.stdout and gone.returncode == 0
    assert _runs(log) == 1


def test_a_pipe_ends_when_the_served_run_ends(served):
    """The server hands the run's streams to its child and keeps no copy: a reader of the run's stdout sees
    the end as soon as the run ends (else `cq ... | next` would wait for the server)."""
    path, log = served
    proc = subprocess.Popen([*CQ, "detect", "--method", "never"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            env=_env(CQ_SERVER=path), cwd=ROOT)
    out, _ = proc.communicate((FIXTURES / "questions.jsonl").read_bytes(), timeout=60)
    assert proc.returncode == 0 and out.count(b"\n") == len((FIXTURES / "questions.jsonl").read_text().splitlines())
    assert _runs(log) == 1


def test_a_signal_to_cq_reaches_the_served_run(served):
    """SIGTERM to the cq that waits: the run cleans up and ends with 143, as a process of its own does."""
    path, log = served
    proc = subprocess.Popen([*CQ, "detect", "--method", "always"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=_env(CQ_SERVER=path), cwd=ROOT)
    proc.stdin.write((FIXTURES / "questions.jsonl").read_bytes()[:200])  # part of a record: it waits for more
    proc.stdin.flush()
    deadline = time.time() + 60
    while _runs(log) < 1 and time.time() < deadline:
        time.sleep(0.1)
    time.sleep(2)  # the child is in cq's main (its SIGTERM handler set) within milliseconds of the fork
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 143
    proc.stdin.close()


def test_a_changed_source_file_makes_the_server_refuse_and_stop(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("x = 1\n")
    seen = {str(source): fs.stamp(str(source))}
    assert fs._changed(seen) == ""
    os.utime(source, ns=(source.stat().st_atime_ns, source.stat().st_mtime_ns + 10**9))
    assert fs._changed(seen) == str(source)
    # an edit that puts the modification time back is seen too (its change time and size)
    seen = {str(source): fs.stamp(str(source))}
    mtime = source.stat().st_mtime_ns
    source.write_text("x = 22\n")
    os.utime(source, ns=(mtime, mtime))
    assert fs._changed(seen) == str(source)


def test_one_socket_per_environment_in_a_private_folder(tmp_path):
    root = str(tmp_path / "servers")
    base = {"PATH": "/usr/bin", "OMP_NUM_THREADS": "1"}
    one = start.socket_for(base, root)
    assert start.socket_for({**base, "CQ_GEN_CACHE": "/x", "SHLVL": "3"}, root) == one  # what may differ
    assert start.socket_for({**base, "OMP_NUM_THREADS": "2"}, root) != one
    assert len(one) < 100 and os.stat(root).st_mode & 0o777 == 0o700
    assert start._running(one) == 0  # no pid file: none running


def test_the_grid_starts_a_server_and_its_cells_run_there(tmp_path, capsys):
    """bench/grid/cell.py with CQ_GRID_SERVE: the first cell starts this environment's server (cq-server.log beside
    the run's log); a cell started once it listens runs in it; `grid.py stop` stops it."""
    sys.path.insert(0, str(ROOT))
    from bench.grid import cell as grid

    log = tmp_path / "exp" / "cells.log"
    env = _env(CQ_GRID_SERVE="1", CQ_GRID_LOG=str(log), CQ_GRID_START="1")
    questions = FIXTURES / "questions.jsonl"
    out = tmp_path / "exp" / "always.jsonl"
    command = f"{sys.executable} -m cqtools detect --method always < {questions} > {out}"
    path = start.socket_for(env)
    try:
        assert grid.run(str(out), command, env=env) == 0
        deadline = time.time() + 120
        while not os.path.exists(path) and time.time() < deadline:
            time.sleep(0.2)
        first = out.read_bytes()
        assert grid.run(str(out), command, env=env) == 0
        assert out.read_bytes() == first
        server_log = (tmp_path / "exp" / "cq-server.log").read_text()
        assert ": run " in server_log and "refused" not in server_log
    finally:
        assert start.stop(path)
    deadline = time.time() + 30
    while os.path.exists(path) and time.time() < deadline:
        time.sleep(0.2)
    assert not os.path.exists(path) and not os.path.exists(f"{path}.pid")  # socket and pid file gone


@pytest.mark.heavy(reason="a server that preloads torch and transformers; the shipped classifier and reader")
def test_model_stages_served_write_the_bytes_of_their_own_process(tmp_path):
    """The shipped classifier and extractive reader in a server's child (torch and transformers imported
    before the fork, as make compare's cells run them): the records of a process of its own, byte for byte."""
    folder = tempfile.mkdtemp(prefix="cqfs")
    path, log = os.path.join(folder, "s.sock"), tmp_path / "server.log"
    with open(log, "w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "cqtools.forkserver", path, "--idle", "120"], env=_env(),
                                stdin=subprocess.DEVNULL, stdout=err, stderr=err, cwd=ROOT)
    try:
        deadline = time.time() + 300
        while not os.path.exists(path) and time.time() < deadline:
            time.sleep(0.2)
        corpus = [json.loads(line) for line in (FIXTURES / "corpus.jsonl").read_text().splitlines()][:4]
        passages = [{**p, "score": float(10 - rank), "rank": rank + 1} for rank, p in enumerate(corpus)]
        questions = "".join(json.dumps({**json.loads(line), "passages": passages}) + "\n"
                            for line in (FIXTURES / "questions.jsonl").read_text().splitlines()).encode()
        shipped = ROOT / "cqtools" / "shipped"
        detect = ["detect", "--method", "classifier", "--model", str(shipped / "detect"), "--passages", "0"]
        detected = _cq(detect, stdin=questions)
        assert detected.returncode == 0, detected.stderr
        answer = ["answer", "--mode", "multi", "--model", str(shipped / "reader")]
        for args, records in ((detect, questions), (answer, detected.stdout)):
            alone, there = _cq(args, stdin=records), _cq(args, path, stdin=records)
            assert there.returncode == alone.returncode == 0, there.stderr
            assert there.stdout == alone.stdout and _untimed(there.stderr) == _untimed(alone.stderr)
        assert _runs(log) == 2, log.read_text()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        shutil.rmtree(folder, ignore_errors=True)
