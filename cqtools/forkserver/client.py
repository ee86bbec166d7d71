"""cq's side of the fork server (the package's docstring): offer this run to the server at $CQ_SERVER, or say
that it must run here. Imports nothing heavy: it runs before anything else in ``cq``."""
from __future__ import annotations

import os
import signal
import socket
import sys
import time

from ..config import child_environment, env
from . import FORWARDED, identity, recv, send, streams

SERVED = False  # True in a server's child: it is the run, and never offers itself to the server again


def delegate(argv: list[str]) -> int | None:
    """Run ``cq argv`` in the server at $CQ_SERVER and return its exit status (a negative number: killed by
    that signal); None when no server takes it (run it here, as without CQ_SERVER)."""
    path = env("CQ_SERVER")
    if not path or SERVED or env("CQ_DEBUG") or _tty(0):
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
        request = {**identity(), "argv": list(argv), "cwd": os.getcwd(), "env": child_environment(),
                   "umask": _umask(), "streams": streams(), "path": list(sys.path), "executable": sys.executable}
        send(sock, request, fds=(0, 1, 2))
        answer = recv(sock)
    except OSError:
        sock.close()
        return None
    if not answer or "pid" not in answer:  # refused (the reason is in the server's log), or no answer
        sock.close()
        return None
    return _wait(sock, int(answer["pid"]))


def _tty(fd: int) -> bool:
    try:
        return os.isatty(fd)
    except OSError:
        return False


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _wait(sock: socket.socket, pid: int) -> int:
    """The child's status, with our signals forwarded to it meanwhile. If the server goes away first, wait
    for the child itself (it still writes to our stdout) and report a failure."""
    previous = {sig: signal.signal(sig, lambda signum, frame: _forward(pid, signum)) for sig in FORWARDED}
    try:
        answer = recv(sock)
    except OSError:
        answer = None
    finally:
        sock.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if answer and "status" in answer:
        return int(answer["status"])
    while _alive(pid):
        time.sleep(0.1)
    sys.stderr.write(f"cq: error: the cq server at {env('CQ_SERVER')} ended during this run; "
                     "run it again (without CQ_SERVER to run it in a process of its own)\n")
    return 1


def _forward(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # pragma: no cover (another user's process took the number)
        return False
    return True


def exit_with(status: int) -> None:
    """End this process as the child ended: with its exit code, or killed by the same signal."""
    sys.stdout.flush()
    if status < 0:
        signal.signal(-status, signal.SIG_DFL)
        os.kill(os.getpid(), -status)
        time.sleep(1)  # pragma: no cover (the signal ends us first)
    sys.exit(status if status >= 0 else 128 - status)
