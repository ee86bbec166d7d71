"""The lock on a ``--resume OUT`` output: one cq process writes it at a time (``OUT.cq.lock``, beside the run record
of cqtools/runrecord.py); a process told to stop marks its locks ``ending`` so that a job requeued at once waits for
it instead of failing (cqtools/cli's signal handler calls :func:`mark_ending`)."""
from __future__ import annotations

import logging
import os

from .errors import InputError

log = logging.getLogger("cqtools")


ENDING_WAIT = 60.0  # s a lock held by a process that is ending may take to be freed (SLURM's KillWait: 30 s)
STARTING_GRACE = 2.0  # s to see a holder that got a signal mark its lock "ending" (it may be inside a long call)
_HELD: dict[int, str] = {}  # this process's --resume locks: fd -> lock file


def lock(out: str) -> int:
    """An exclusive lock on ``--resume OUT`` for this process: ``OUT.cq.lock`` (flock; the kernel
    releases it when the process ends, however it ends). It holds the holder's pid, and ``ending``
    once the holder was told to stop (:func:`mark_ending`). A second process on the same OUT gets a
    one-line error instead of appending the same records again, unless the holder is ending: then it
    waits (up to :data:`ENDING_WAIT`) for the lock. Why: a job restarted at once after a kill (a
    scheduler's requeue told to start now, a person) may start while the killed run is still cleaning
    up; a stand-in job under SLURM was relaunched 1.9 s after the kill, alive 2 s longer. (The requeue
    test's one FAILED, once blamed on this, was SLURM refusing a launch in the kill's second: see
    tests/test_cluster.py; in 40 runs cq never met a held lock there.) OUT
    itself, when it exists, is locked too, so a hard link to it is the same OUT (:func:`_lock_itself`)."""
    import fcntl
    import time

    path = os.path.realpath(out) + ".cq.lock"  # the file's lock, whichever name (a symlink) it is reached by
    try:
        os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as err:
        raise InputError(f"--resume {out}: cannot create its lock file {path} ({err.strerror})") from None
    start, waiting = time.monotonic(), False
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").split() or ["unknown"]
            waited = time.monotonic() - start
            ending = holder[1:2] == ["ending"]
            if waited < (ENDING_WAIT if ending else STARTING_GRACE):
                if ending and not waiting:
                    log.warning("--resume %s: waiting for the cq process that is ending (pid %s) to release "
                                "it", out, holder[0])
                    waiting = True
                time.sleep(0.1)
                continue
            os.close(fd)
            if ending:
                raise InputError(f"--resume {out} is held by a cq process that is ending (pid {holder[0]}) and "
                                 f"still holds it after {ENDING_WAIT:.0f} s; stop it, or write to another "
                                 f"file") from None
            raise InputError(f"--resume {out} is being written by another cq process (pid {holder[0]}); wait "
                             f"for it to end (or stop it), or write to another file") from None
    try:
        itself = _lock_itself(out)
    except BaseException:
        os.close(fd)
        raise
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    _HELD[fd] = path
    if itself is not None:
        _ITSELF[fd] = itself
    return fd


_ITSELF: dict[int, int] = {}  # lock fd -> an fd of OUT itself, flocked too (see _lock_itself)


def _lock_itself(out: str) -> int | None:
    """OUT itself locked too (flock on its own open file), when it is already a regular file: the lock
    file is found by OUT's name (a symlink resolved), and another name of the same file, a hard link,
    would find another one. None when OUT does not exist yet (no other name can reach it)."""
    import fcntl
    import stat
    import time

    try:
        fd = os.open(out, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None  # not written yet, or not readable: the lock file alone stands
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    start = time.monotonic()
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() - start < STARTING_GRACE:  # a holder that is exiting frees both locks
                time.sleep(0.1)
                continue
            os.close(fd)
            raise InputError(f"--resume {out} is being written by another cq process under another name (a hard "
                             f"link to the same file); wait for it to end (or stop it), or write to another "
                             f"file") from None


def unlock(fd: int) -> None:
    """Release a lock from :func:`lock` (closing its files)."""
    _HELD.pop(fd, None)
    itself = _ITSELF.pop(fd, None)
    if itself is not None:
        os.close(itself)
    os.close(fd)


def mark_ending() -> None:
    """Mark every lock this process holds ``ending`` (it was told to stop and is cleaning up), so a
    run started on the same output meanwhile waits for it instead of failing (see :func:`lock`)."""
    for fd in list(_HELD):
        try:
            os.pwrite(fd, f"{os.getpid()} ending\n".encode(), 0)
        except OSError:
            pass
