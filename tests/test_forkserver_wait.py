"""Issue 48 (nothing silently different): cq waited without end for a fork server that accepted its run and never
answered. It now waits CQ_SERVER_WAIT seconds for the server to take the run (its child's pid), then says so on
stderr in one line and runs the command in a process of its own; a child that comes later ends unrun."""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import types

import pytest

from cqtools.forkserver import server as fs

from .conftest import FIXTURES, ROOT
from .test_forkserver import CQ, _env, served  # noqa: F401 (served: the fixture)

DETECT = ["detect", "--method", "always"]
QUESTIONS = (FIXTURES / "questions.jsonl").read_bytes()


def _run(path, stdout=subprocess.PIPE, **env):
    """cq detect with CQ_SERVER=path; a subprocess timeout, so a client that waits without end fails the test."""
    return subprocess.run([*CQ, *DETECT], input=QUESTIONS, stdout=stdout, stderr=subprocess.PIPE,
                          env=_env(CQ_SERVER=path, **env), cwd=ROOT, timeout=90)


@pytest.fixture
def hung():
    """A socket of ours that accepts connections and never answers (a hung server): yields (path, connections)."""
    folder = tempfile.mkdtemp(prefix="cqfs")
    path = os.path.join(folder, "s.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(4)
    held: list = []

    def accept_all():
        while True:
            try:
                held.append(listener.accept())
            except OSError:
                return

    threading.Thread(target=accept_all, daemon=True).start()
    yield path, held
    listener.close()
    for conn, _ in held:
        conn.close()
    shutil.rmtree(folder, ignore_errors=True)


def _note(stderr: bytes, path: str) -> list[str]:
    return [line for line in stderr.decode().splitlines() if "did not take this run" in line and path in line]


def test_a_server_that_never_answers_leaves_the_run_to_a_process_of_its_own(hung):
    path, held = hung
    alone = subprocess.run([*CQ, *DETECT], input=QUESTIONS, capture_output=True, env=_env(), cwd=ROOT, timeout=90)
    started = time.monotonic()
    run = _run(path, CQ_SERVER_WAIT="2")
    assert held, "cq never connected to the socket"
    assert (run.returncode, run.stdout) == (0, alone.stdout) and alone.stdout
    note = _note(run.stderr, path)
    assert len(note) == 1 and "2s" in note[0] and "process of its own" in note[0], run.stderr.decode()
    assert run.stderr.decode().replace(note[0] + "\n", "") == alone.stderr.decode()
    assert time.monotonic() - started < 60


def test_a_bad_wait_is_a_one_line_error(hung):
    path, _ = hung
    run = _run(path, CQ_SERVER_WAIT="soon")
    lines = run.stderr.decode().splitlines()
    assert run.returncode == 1 and run.stdout == b""
    assert len(lines) == 1 and "CQ_SERVER_WAIT='soon'" in lines[0] and "Traceback" not in lines[0], lines


def test_a_stopped_server_that_wakes_later_does_not_run_it_again(served, tmp_path):
    """The server stopped (SIGSTOP) while cq waits: cq runs the command itself; the server, woken, finds the
    client it never greeted gone (it sent nothing of its run) and runs nothing: the records are written once."""
    path, log = served
    server = int(re.search(r"cq server (\d+): serving", log.read_text()).group(1))
    out = tmp_path / "out.jsonl"
    os.kill(server, signal.SIGSTOP)
    try:
        with open(out, "ab") as sink:
            run = _run(path, stdout=sink, CQ_SERVER_WAIT="2")
    finally:
        os.kill(server, signal.SIGCONT)
    assert run.returncode == 0 and len(_note(run.stderr, path)) == 1, run.stderr.decode()
    again = _run(path)  # served after the woken server has dealt with the request it never greeted
    assert again.returncode == 0 and not _note(again.stderr, path)
    assert log.read_text().count(": run ") == 1, log.read_text()  # that one only
    assert out.read_bytes() == again.stdout  # once, from cq itself


def test_a_child_runs_only_on_its_clients_word():
    """A child the server forks after its client gave up (the pid came too late) ends unrun: it runs only on
    the byte the client writes to the pipe it sent, once it holds the child's pid."""
    said: list = []
    server = types.SimpleNamespace(say=said.append)
    for word, taken in ((b"1", True), (b"", False)):
        conn, client = socket.socketpair()
        go_read, go = os.pipe()
        os.write(go, word)
        os.close(go)  # the client's end: closed with or without its byte
        assert fs.Server.taken(server, conn, go_read) is taken
        assert json.loads(client.recv(4096)[4:]) == {"pid": os.getpid()}
        conn.close()
        client.close()
    assert len(said) == 1 and "not run" in said[0]
