"""The --resume lock's rule for a holder that is ending (issue 38): SLURM restarts a requeued job while the
killed run may still be cleaning up (seen in tests/test_cluster.py: the restart 2 s after the kill, the old
process alive 2 s more). A holder told to stop marks its lock ``ending`` and a new run waits for it; a live
holder still gets the one-line error. Real processes hold the locks."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from cqtools import resume_lock
from cqtools.cli import _terminated
from cqtools.errors import InputError

HOLDER = """
import sys, time
from cqtools import resume_lock
fd = resume_lock.lock(sys.argv[1])
if sys.argv[2] == "ending":
    resume_lock.mark_ending()
print("locked", flush=True)
time.sleep(float(sys.argv[3]))
"""


def hold(out, how: str, seconds: float) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(out), how, str(seconds)], stdout=subprocess.PIPE,
                            text=True)
    assert proc.stdout.readline().strip() == "locked"
    return proc


def lock_file(out) -> str:
    return open(os.path.realpath(out) + ".cq.lock").read()


def test_a_run_started_while_the_holder_is_ending_waits_for_it(tmp_path):
    out = tmp_path / "out.jsonl"
    holder = hold(out, "ending", 1.5)
    try:
        assert lock_file(out) == f"{holder.pid} ending\n"
        start = time.monotonic()
        fd = resume_lock.lock(str(out))
        waited = time.monotonic() - start
        assert holder.poll() is not None, "the lock was taken while the holder was alive"
        assert 0.8 < waited < resume_lock.ENDING_WAIT, waited
        assert lock_file(out) == f"{os.getpid()}\n"
        resume_lock.unlock(fd)
    finally:
        holder.kill()
        holder.wait()


def test_a_live_holder_still_stops_a_second_run(tmp_path, monkeypatch):
    monkeypatch.setattr(resume_lock, "STARTING_GRACE", 0.3)
    out = tmp_path / "out.jsonl"
    holder = hold(out, "live", 30)
    try:
        with pytest.raises(InputError, match=rf"being written by another cq process \(pid {holder.pid}\)"):
            resume_lock.lock(str(out))
        assert holder.poll() is None
    finally:
        holder.kill()
        holder.wait()


def test_an_ending_holder_that_never_ends_is_an_error_after_the_wait(tmp_path, monkeypatch):
    monkeypatch.setattr(resume_lock, "ENDING_WAIT", 0.5)
    out = tmp_path / "out.jsonl"
    holder = hold(out, "ending", 30)
    try:
        start = time.monotonic()
        with pytest.raises(InputError, match=rf"ending \(pid {holder.pid}\) and still holds it after 0 s"):
            resume_lock.lock(str(out))
        assert time.monotonic() - start >= 0.5
    finally:
        holder.kill()
        holder.wait()


def test_sigterm_marks_the_held_lock_ending_and_a_released_one_never(tmp_path):
    out, other = tmp_path / "out.jsonl", tmp_path / "other.txt"
    fd = resume_lock.lock(str(out))
    try:
        with pytest.raises(SystemExit) as ended:
            _terminated(signal.SIGTERM, None)
        assert ended.value.code == 128 + signal.SIGTERM
        assert lock_file(out) == f"{os.getpid()} ending\n"
    finally:
        resume_lock.unlock(fd)
    reused = os.open(other, os.O_RDWR | os.O_CREAT)  # likely the released lock's fd number
    try:
        with pytest.raises(SystemExit):
            _terminated(signal.SIGHUP, None)
        assert os.pread(reused, 100, 0) == b"", "a released lock's fd was written"
    finally:
        os.close(reused)
