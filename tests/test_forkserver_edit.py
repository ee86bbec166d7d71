"""Issue 48 (a fork server after a source edit): a server serves the cqtools it imported; once one of those source
files changes, a run must get what a process of its own gets now (its exit status, its records, its stderr), so
the server refuses it (its log says which file changed) and stops. End to end: a copy of cqtools in tmp_path, a
real server started from it, runs before and after each kind of edit, each compared with a run without
CQ_SERVER."""
import compileall
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from .conftest import FIXTURES, ROOT
from .test_forkserver import CQ, _env, _untimed

pytestmark = pytest.mark.heavy(reason="a fork server per case, from a copy of cqtools (2-4 s a case, 20-35 s in all); "
                               "test_forkserver.py's unit test of the file stamps stays in the fast tier")

QUESTIONS = (FIXTURES / "questions.jsonl").read_bytes()
DETECT = ["detect", "--method", "always"]
# The module that makes `cq detect --method always`'s scores (imported by the server: the plugins' registration),
# and one it imports while registering them (removing it breaks that registration).
SCORES = Path("cqtools/stages/detect/__init__.py")
REGISTERED = Path("cqtools/stages/detect/diverse.py")


def _edited(text: str) -> str:
    """The scores module with another score for `always` (0.75, still above its 0.5 threshold): the records
    change, so a stale server's run shows in its bytes. The file's size changes too: Python's own .pyc check
    (size and whole seconds of mtime) sees the edit whatever the clock."""
    assert "value = 1.0 if" in text
    return text.replace("value = 1.0 if", "value = 0.75 if")


class Copy:
    """cqtools copied to ``root`` (its shipped models a link), served by a server of its own."""

    def __init__(self, root: Path):
        self.root = root
        shutil.copytree(ROOT / "cqtools", root / "cqtools", ignore=shutil.ignore_patterns("__pycache__", "shipped"))
        (root / "cqtools" / "shipped").symlink_to(ROOT / "cqtools" / "shipped")
        self.env = _env()
        self.env["PYTHONPATH"] = str(root)  # this copy, not the worktree (nor the venv's editable install)
        self.folder = tempfile.mkdtemp(prefix="cqfs")  # a socket's path is at most about 100 bytes
        self.path, self.log = os.path.join(self.folder, "s.sock"), root / "server.log"
        self.server = None

    def start(self, preload: str = "") -> None:
        self.launch(preload)
        self.listening()

    def launch(self, preload: str = "") -> None:
        with open(self.log, "w") as err:
            self.server = subprocess.Popen([*CQ[:1], "-m", "cqtools.forkserver", self.path, "--idle", "60",
                                            "--preload", preload], env=self.env, cwd=self.root,
                                           stdin=subprocess.DEVNULL, stdout=err, stderr=err)

    def listening(self) -> None:
        deadline = time.time() + 120
        while not os.path.exists(self.path) and self.server.poll() is None and time.time() < deadline:
            time.sleep(0.1)
        assert os.path.exists(self.path), self.log.read_text()

    def stop(self) -> None:
        if self.server is not None and self.server.poll() is None:
            self.server.send_signal(signal.SIGTERM)
            try:
                self.server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.server.kill()
                self.server.wait(timeout=30)
        shutil.rmtree(self.folder, ignore_errors=True)

    def command(self, served: bool, args=DETECT) -> tuple[list[str], dict]:
        return [*CQ, *args], {**self.env, **({"CQ_SERVER": self.path} if served else {})}

    def cq(self, served: bool, args=DETECT, stdin: bytes = QUESTIONS) -> tuple[int, bytes, bytes]:
        """One run (cq detect on the fixture's questions): (exit status, stdout, stderr with its clock masked)."""
        args, env = self.command(served, args)
        run = subprocess.run(args, input=stdin, capture_output=True, env=env, cwd=self.root, timeout=120)
        return run.returncode, run.stdout, _untimed(run.stderr)

    def runs(self) -> int:
        return self.log.read_text().count(": run ")


@pytest.fixture
def copy(tmp_path):
    copied = Copy(tmp_path / "src")
    yield copied
    copied.stop()


def _touch(path: Path) -> None:
    os.utime(path)  # `touch`: now


def _rewrite(path: Path) -> None:
    path.write_text(_edited(path.read_text()))


def _rewrite_keeping_mtime(path: Path) -> None:
    """An edit that leaves the modification time as it was (``touch -r``, ``cp -p``, ``rsync -a`` from a copy
    with that time): only the change time and the size tell."""
    before = path.stat()
    path.write_text(_edited(path.read_text()))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def _replace(path: Path) -> None:
    """An editor's save: a new file written beside it, renamed over it."""
    new = path.with_name(path.name + ".new")
    new.write_text(_edited(path.read_text()))
    os.replace(new, path)


def _drop_pycache(path: Path) -> None:
    shutil.rmtree(path.parent / "__pycache__")


def _remove(path: Path) -> None:
    """A `git checkout` of a branch without that module."""
    path.unlink()


EDITS = {  # name: (how, the file, does its source change)
    "touch": (_touch, SCORES, True),
    "content edit": (_rewrite, SCORES, True),
    "content edit keeping mtime": (_rewrite_keeping_mtime, SCORES, True),
    "atomic replace": (_replace, SCORES, True),
    "pycache removed": (_drop_pycache, SCORES, False),
    "module removed": (_remove, REGISTERED, True),
}


def _refused_for(copy: Copy, path: Path) -> None:
    log = copy.log.read_text()
    assert f"refused: {copy.root / path} changed since the server imported it" in log, log
    copy.server.wait(timeout=30)  # a stale server stops (no run in flight)
    assert not os.path.exists(copy.path), log
    assert "stopped: " in copy.log.read_text()


@pytest.mark.parametrize("edit", EDITS)
def test_after_an_edit_a_run_gets_what_its_own_process_gets(copy, edit):
    how, path, changes = EDITS[edit]
    if how is _drop_pycache:  # compiled now, as cq writes them where bytecode is written (these tests' may not be)
        compileall.compile_dir(copy.root / path.parent, quiet=1)
        assert (copy.root / path.parent / "__pycache__").is_dir()
    copy.start()
    before = copy.cq(served=False)
    assert before[0] == 0 and before[1], before[2]
    assert copy.cq(served=True) == before and copy.runs() == 1
    how(copy.root / path)
    plain = copy.cq(served=False)
    if edit in ("content edit", "content edit keeping mtime", "atomic replace"):
        assert plain[:2] == (0, before[1].replace(b'"score":1.0', b'"score":0.75')) and plain[1] != before[1]
    if edit == "module removed":
        assert plain[0] != 0, "removing the module should break the plain run too"
    assert copy.cq(served=True) == plain  # the first run after the edit
    assert copy.cq(served=True) == plain  # and the next (the server has stopped by now)
    if changes:
        assert copy.runs() == 1  # neither ran in the stale server
        _refused_for(copy, path)
    else:
        assert "refused" not in copy.log.read_text() and copy.runs() == 3  # no source changed: served


def test_an_edit_during_a_served_run(copy):
    """A run in flight when the file changes finishes as it started (the old code, as a process started then);
    a run offered meanwhile is refused and gets the new code; the server stops once its run has ended."""
    copy.start()
    before = copy.cq(served=False)
    args, env = copy.command(served=True)
    flying = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                              cwd=copy.root)
    try:
        flying.stdin.write(QUESTIONS[:200])  # part of a record: the run waits for the rest
        flying.stdin.flush()
        deadline = time.time() + 60
        while copy.runs() < 1 and flying.poll() is None and time.time() < deadline:
            time.sleep(0.1)
        assert copy.runs() == 1, copy.log.read_text()
        _rewrite(copy.root / SCORES)
        plain = copy.cq(served=False)
        assert plain[1] != before[1]
        assert copy.cq(served=True) == plain  # refused while the other run is in flight
        assert copy.server.poll() is None  # the server waits for its run
        out, err = flying.communicate(QUESTIONS[200:], timeout=120)
    finally:
        if flying.poll() is None:
            flying.kill()
            flying.wait()
    assert (flying.returncode, out, _untimed(err)) == before
    assert copy.cq(served=True) == plain
    assert copy.runs() == 1
    _refused_for(copy, SCORES)


PAUSE = """import os, time
here = os.path.dirname(os.path.abspath(__file__))
open(os.path.join(here, "paused"), "w").close()
deadline = time.monotonic() + 60
while not os.path.exists(os.path.join(here, "go")) and time.monotonic() < deadline:
    time.sleep(0.05)
"""


def _edit_while_imported(copy: Copy, edit) -> None:
    """Start the server; once it has imported cq's commands (the modules of all stages), ``edit``; then let it
    look at what it imported and serve."""
    (copy.root / "cq_test_pause.py").write_text(PAUSE)  # a preload that waits for the word "go"
    copy.launch(preload="cqtools.cli.detect,cqtools.cli.score,cq_test_pause")
    deadline = time.time() + 120
    while not (copy.root / "paused").exists() and copy.server.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    assert (copy.root / "paused").exists(), copy.log.read_text()
    edit()
    (copy.root / "go").touch()
    copy.listening()


def test_an_edit_while_the_server_imports(copy):
    """The file changes after the server imported it and before it looked at the files it imported (its
    preloads take seconds: torch, transformers): it holds the old code, so it must refuse the runs."""
    before = copy.cq(served=False)
    _edit_while_imported(copy, lambda: _rewrite(copy.root / SCORES))
    plain = copy.cq(served=False)
    assert plain[1] != before[1]
    assert copy.cq(served=True) == plain
    assert copy.cq(served=True) == plain
    assert copy.runs() == 0
    _refused_for(copy, SCORES)


BASE, CI = Path("cqtools/score/base.py"), Path("cqtools/score/ci.py")  # imported by the server; not


def _refactor(copy: Copy, how) -> None:
    """A change across two modules: a name added to one the server imported (``how``: a write) and imported by
    one only `cq score --ci` imports, when it runs."""
    how(copy.root / BASE, (copy.root / BASE).read_text() + "\nEDITED = 1\n")
    text = (copy.root / CI).read_text()
    assert "\nfrom .base import Task\n" in text
    (copy.root / CI).write_text(text.replace("\nfrom .base import Task\n",
                                             "\nfrom .base import EDITED, Task  # noqa: F401\n", 1))


def _write(path: Path, text: str) -> None:
    path.write_text(text)


def _write_keeping_mtime(path: Path, text: str) -> None:
    before = path.stat()
    path.write_text(text)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


@pytest.mark.parametrize("when", ["keeping mtime", "while the server imports"])
def test_an_unseen_change_made_the_run_fail_where_its_own_process_works(copy, when):
    """Issue 48's report ("refused, then rc 1"): a server that missed a change runs the old module beside the
    new one its run imports: ImportError, exit 1, where a process of its own has both new ones and exits 0."""
    score = ["score", "--task", "detect", "--ci"]
    detected = copy.cq(served=False)[1]
    if when == "keeping mtime":
        copy.start()
        _refactor(copy, _write_keeping_mtime)
    else:
        _edit_while_imported(copy, lambda: _refactor(copy, _write))
    plain = copy.cq(served=False, args=score, stdin=detected)
    assert plain[0] == 0 and b'"ci":' in plain[1], plain[2]
    assert copy.cq(served=True, args=score, stdin=detected) == plain
    assert copy.cq(served=True, args=score, stdin=detected) == plain
    assert copy.runs() == 0
    _refused_for(copy, BASE)
