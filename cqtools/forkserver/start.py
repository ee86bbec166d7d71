"""Starting and stopping a fork server for a run of many ``cq`` commands (bench/grid/cell.py: make compare's cells).

One server per interpreter, cqtools and environment: its socket's name is a digest of them (the ``CQ_*``
variables and the shell's own left out, as the server's check leaves them out), so a run with another
environment gets a server of its own rather than one that refuses it."""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import signal
import stat
import subprocess
import sys
import tempfile

from . import free, identity


class NotOurs(OSError):
    """The servers' folder is not this user's alone: no server there (runs go to their own processes)."""


def socket_for(environ: dict, root: str | None = None) -> str:
    """The socket of the server for ``environ``: short enough for a Unix socket (about 100 bytes), in a
    directory only this user can enter (NotOurs when that folder exists and is not such a one)."""
    kept = {k: v for k, v in environ.items() if not free(k)}
    digest = hashlib.sha256(json.dumps([identity(), sorted(kept.items())]).encode()).hexdigest()[:16]
    folder = root or os.path.join(tempfile.gettempdir(), f"cq-server-{os.getuid()}")
    try:
        os.mkdir(folder, mode=0o700)
    except FileExistsError:
        pass
    except OSError as err:
        raise NotOurs(f"{folder}: {err.strerror}") from None
    info = os.lstat(folder)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise NotOurs(f"{folder} is not a folder of this user's alone (mode 700): another user may have made it")
    return os.path.join(folder, f"{digest}.sock")


def ensure(path: str, log: str, idle: float = 120.0, environ: dict | None = None) -> bool:
    """Start a server at ``path`` unless one is running or starting there (its pid file names a live process);
    True when this call started it. It does not wait: runs go to their own processes until it listens."""
    with open(f"{path}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _running(path):
            return False
        environ = {k: v for k, v in (os.environ if environ is None else environ).items() if k != "CQ_SERVER"}
        with open(log, "a") as err, open(os.devnull) as null:
            proc = subprocess.Popen([sys.executable, "-m", "cqtools.forkserver", path, "--idle", str(idle)],
                                    stdin=null, stdout=err, stderr=err, env=environ, start_new_session=True)
        with open(f"{path}.pid", "w") as fh:
            fh.write(f"{proc.pid}\n")
        return True


def stop(path: str) -> bool:
    """Ask the server at ``path`` to stop (it ends when its runs in flight have); True if one was running."""
    pid = _running(path)
    if pid:
        os.kill(pid, signal.SIGTERM)
    return bool(pid)


def _running(path: str) -> int:
    try:
        with open(f"{path}.pid") as fh:
            pid = int(fh.read().strip() or 0)
    except (OSError, ValueError):
        return 0
    if pid <= 0:
        return 0
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return 0
    except PermissionError:
        return 0
    try:  # a live process with that number, but is it a server (numbers are reused)?
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            if b"cqtools.forkserver" not in fh.read():
                return 0
    except OSError:
        pass
    return pid
