"""Issue 48, reliability round 4: the fork server is not the process it stands in for. Each case of the sweep that
drove cq through CQ_SERVER beside plain runs: the served run must be the plain one (its descriptors, limits,
priority, signals, plugins), or be handed back to a process of its own; the client never reports success without
the run's real exit status. Each test failed on b91c526, but for two guards of what already worked (named so
in their docstrings)."""
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from .conftest import FIXTURES, ROOT
from .test_forkserver import CQ, _cq, _env, _runs, _untimed, served  # noqa: F401 - served is a fixture

QUESTIONS = FIXTURES / "questions.jsonl"
DETECT = "detect --method always"


def _bash(script: str, path=None, cwd=None, env=None, **kw):
    """``script`` in bash, with $CQ the cq command (served when ``path``), in ``cwd``."""
    extra = {"CQ_SERVER": path} if path else {}
    full = {**(env or _env()), **extra, "CQ": " ".join(CQ)}
    return subprocess.run(["bash", "-c", script], capture_output=True, env=full, cwd=cwd or ROOT, timeout=60, **kw)


def _plain_records() -> bytes:
    out = _cq(DETECT.split(), stdin=QUESTIONS.read_bytes())
    assert out.returncode == 0
    return out.stdout


@pytest.mark.parametrize("script", [
    f"$CQ {DETECT} -o /dev/fd/3 3> out.jsonl < {QUESTIONS}",  # the sweep's --run /dev/fd/3 and -o /dev/fd/3
    f"$CQ {DETECT} --output=/dev/fd/3 3> out.jsonl < {QUESTIONS}",
    f"$CQ {DETECT} -o/dev/fd/3 3> out.jsonl < {QUESTIONS}",  # a short option's value written on to it
    f"ln -s /dev/fd/3 link; $CQ {DETECT} -qolink 3> out.jsonl < {QUESTIONS}",
    f"ln -s /dev/fd/3 link; $CQ {DETECT} -o link 3> out.jsonl < {QUESTIONS}",
    f"$CQ {DETECT} /dev/fd/3 3< {QUESTIONS} > out.jsonl",
    f"$CQ {DETECT} /proc/self/fd/3 3< {QUESTIONS} > out.jsonl",
    f"$CQ {DETECT} <(cat {QUESTIONS}) > out.jsonl",  # process substitution: /dev/fd/63, a pipe
])
def test_arguments_naming_the_clients_descriptors_get_the_clients_descriptors(served, tmp_path, script):
    """/dev/fd/3 in a server's child was the child's own fd 3 (an index's docstore.sqlite in the sweep)."""
    path, log = served
    run = _bash(script, path, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "out.jsonl").read_bytes() == _plain_records()
    assert _runs(log) == 0  # handed back: the client's own process ran it


@pytest.mark.parametrize("closed,code,message", [
    ("<&-", 1, "standard input is closed (<&-)"), (">&-", 2, "standard output is closed (>&-)")])
@pytest.mark.parametrize("where", ["served", "plain"])
def test_a_closed_standard_stream_is_one_line(served, closed, code, message, where):
    """Served, stdin closed hung (the client's socket took descriptor 0 and was sent as the run's stdin);
    plain, it was an AttributeError traceback."""
    path, _ = served
    run = _bash(f"$CQ {DETECT} {closed}" + (f" < {QUESTIONS}" if closed == ">&-" else ""),
                path if where == "served" else None)
    lines = run.stderr.decode().splitlines()
    assert run.returncode == code and len(lines) == 1 and message in lines[0], run.stderr.decode()


@pytest.mark.parametrize("where", ["served", "plain"])
def test_a_closed_standard_error_still_gives_the_records(served, where):
    """`2>&-`: the progress line asked None whether it was a terminal; 0 records, exit 1, and no word of why
    (plain; the served variant is a guard: it passed on b91c526)."""
    path, _ = served
    run = _bash(f"$CQ {DETECT} < {QUESTIONS} 2>&-", path if where == "served" else None)
    assert run.returncode == 0 and run.stdout == _plain_records()


def test_a_closed_standard_input_is_no_error_for_a_file_argument():
    """A guard (it passed on b91c526): a closed stdin is an error only for a stage that reads it."""
    run = _bash(f"$CQ {DETECT} {QUESTIONS} <&-")
    assert run.returncode == 0 and run.stdout == _plain_records(), run.stderr


def test_a_file_size_limit_stops_the_served_run_as_the_plain_one(served, tmp_path):
    """Under `ulimit -f 4` a plain run stops with cq's one line; the served one wrote 21 KB (the server's limit)."""
    path, log = served
    script = f"ulimit -f 4; $CQ {DETECT} < {QUESTIONS} > out.jsonl"
    plain = _bash(script, cwd=tmp_path)
    plain_size = (tmp_path / "out.jsonl").stat().st_size
    there = _bash(script, path, cwd=tmp_path)
    assert (there.returncode, there.stderr) == (plain.returncode, plain.stderr) and plain.returncode == 1
    assert (tmp_path / "out.jsonl").stat().st_size == plain_size <= 4096
    assert _runs(log) == 1  # a lower limit is passed to the child, not refused


def _proc_fields(pid: int) -> dict:
    status = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
    stat_fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    limits = [line for line in Path(f"/proc/{pid}/limits").read_text().splitlines() if "file size" in line]
    return {"nice": stat_fields[16], "ignored": status["SigIgn"].strip(), "blocked": status["SigBlk"].strip(),
            "file size": limits}


def test_priority_ignored_signals_and_limits_are_the_clients(served):
    """`nice`, a SIGINT the parent ignores (`cq &` in a script) and `ulimit -f`: the served run had the server's;
    a SIGINT then ended it after 1 of 6 records ("Aborted!")."""
    path, log = served

    def ignore_sigint():
        signal.signal(signal.SIGINT, signal.SIG_IGN)

    proc = subprocess.Popen(["bash", "-c", "ulimit -f 100000; exec nice -n 3 \"$@\"", "cq", *CQ, *DETECT.split()],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=_env(CQ_SERVER=path), cwd=ROOT, preexec_fn=ignore_sigint)
    data = QUESTIONS.read_bytes()
    proc.stdin.write(data[:200])  # part of a record: the run waits for more
    proc.stdin.flush()
    deadline = time.time() + 60
    while _runs(log) < 1 and time.time() < deadline:
        time.sleep(0.1)
    time.sleep(1)
    child = int(log.read_text().split(": run ")[1].split(":")[0])
    assert _proc_fields(child) == _proc_fields(proc.pid)
    proc.send_signal(signal.SIGINT)  # ignored by cq, as by a plain process that was started ignoring it
    time.sleep(1)
    out, err = proc.communicate(data[200:], timeout=60)
    assert proc.returncode == 0 and out == _plain_records(), err.decode()


def test_a_server_killed_between_the_fork_and_its_answer(tmp_path):
    """The client ran the cq itself beside the server's child: both read the pipe; 0 of 2,000 records, exit 0.
    Now the child sends its pid and status itself: every record, and the child's exit status."""
    folder = tempfile.mkdtemp(prefix="cqfs")
    path = os.path.join(folder, "s.sock")
    dying = ("import os, signal, sys\nfrom cqtools.forkserver import server\nfork = os.fork\n"
             "def killed_after_fork():\n    pid = fork()\n    if pid:\n        os.kill(os.getpid(), signal.SIGKILL)\n"
             "    return pid\nserver.os.fork = killed_after_fork\n"
             "server.main([sys.argv[1], '--idle', '60', '--preload', ''])\n")
    proc = subprocess.Popen([sys.executable, "-c", dying, path], env=_env(), cwd=ROOT, stdin=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 120
        while not os.path.exists(path) and time.time() < deadline:
            time.sleep(0.1)
        lines = QUESTIONS.read_text().splitlines()
        many = "".join(line.replace('"id":"', f'"id":"{k}-', 1) + "\n" for k in range(70) for line in lines)
        (tmp_path / "questions.jsonl").write_text(many)
        out = tmp_path / "out.jsonl"
        run = _bash(f"cat questions.jsonl | $CQ {DETECT} -o {out}", path, cwd=tmp_path)
        assert proc.wait(timeout=60) == -signal.SIGKILL  # the server did die after its fork
        assert run.returncode == 0, run.stderr
        assert len(out.read_text().splitlines()) == len(many.splitlines()) == 2100
    finally:
        if proc.poll() is None:
            proc.kill()
        subprocess.run(["rm", "-rf", folder])


def _fake_plugin(site: Path) -> None:
    dist = site / "cq_broken_plugin-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: cq-broken-plugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[cqtools.plugins]\nbroken = cq_no_such_module_48\n")


@pytest.mark.parametrize("installed", ["before the server started", "after the server started"])
def test_a_broken_plugin_warns_on_the_runs_stderr(tmp_path, installed):
    """The server's plugins were the run's: a plugin installed after it started was not seen, and a broken
    one's warning went to the server's log, not the run's stderr."""
    site = tmp_path / "site"
    site.mkdir()
    if installed.startswith("before"):
        _fake_plugin(site)
    env = _env(PYTHONPATH=os.pathsep.join([str(ROOT), str(site)]))
    folder = tempfile.mkdtemp(prefix="cqfs")
    path, log = os.path.join(folder, "s.sock"), tmp_path / "server.log"
    with open(log, "w") as err:
        server = subprocess.Popen([sys.executable, "-m", "cqtools.forkserver", path, "--idle", "60", "--preload", ""],
                                  env=env, stdin=subprocess.DEVNULL, stdout=err, stderr=err, cwd=ROOT)
    try:
        deadline = time.time() + 120
        while not os.path.exists(path) and time.time() < deadline:
            time.sleep(0.1)
        if installed.startswith("after"):
            _fake_plugin(site)
        plain = _bash(f"$CQ {DETECT} < {QUESTIONS}", env=env)
        there = _bash(f"$CQ {DETECT} < {QUESTIONS}", path, env=env)
        assert b"cq_no_such_module_48" in plain.stderr
        assert (there.returncode, there.stdout, _untimed(there.stderr)) == (plain.returncode, plain.stdout,
                                                                           _untimed(plain.stderr))
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
        subprocess.run(["rm", "-rf", folder])


@pytest.mark.parametrize("squatted", ["a file", "a folder others may enter"])
def test_a_grid_cell_runs_plainly_when_the_server_folder_is_not_ours(tmp_path, monkeypatch, capsys, squatted):
    """Another local user who makes /tmp/cq-server-<uid> first (as root here: a file, or a folder of mode 755)
    made every served grid cell fail with a traceback. Now: one line, the cell in its own process."""
    sys.path.insert(0, str(ROOT))
    from bench.grid import cell as grid

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    folder = tmp_path / f"cq-server-{os.getuid()}"
    if squatted == "a file":
        folder.write_text("")
    else:
        folder.mkdir(mode=0o755)
        folder.chmod(0o755)
    env = {"CQ_GRID_SERVE": "1", "PATH": os.environ["PATH"]}
    assert grid.served(env) == env  # no CQ_SERVER: the cell runs as without the server
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and str(folder) in err[0], err


@pytest.mark.skipif(os.getuid() != 0, reason="handing a socket to another user needs root")
def test_a_socket_another_user_owns_gets_nothing_of_the_run(tmp_path):
    """The client sent its argv, environment and descriptors to whatever listened at CQ_SERVER; a socket that
    is not this user's now gets no connection, and the run is a process of its own."""
    import socket

    path = str(tmp_path / "s.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(4)
    os.chown(path, 4242, -1)
    run = _cq(DETECT.split(), path, stdin=QUESTIONS.read_bytes())
    listener.setblocking(False)
    with pytest.raises(BlockingIOError):
        listener.accept()  # nobody connected
    listener.close()
    assert run.returncode == 0 and run.stdout == _plain_records(), run.stderr
