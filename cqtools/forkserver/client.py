"""cq's side of the fork server (the package's docstring): offer this run to the server at $CQ_SERVER, or say
that it must run here. Imports nothing heavy: it runs before anything else in ``cq``."""
from __future__ import annotations

import os
import signal
import socket
import stat
import sys
import time

from ..config import child_environment, env
from ..errors import InputError
from ..terminal import safe
from . import FORWARDED, identity, process, read, send, streams

SERVED = False  # True in a server's child: it is the run, and never offers itself to the server again


def delegate(argv: list[str]) -> int | None:
    """Run ``cq argv`` in the server at $CQ_SERVER and return its exit status (a negative number: killed by
    that signal); None when no server takes it (run it here, as without CQ_SERVER). The server has
    $CQ_SERVER_WAIT seconds (WAIT) to greet us (only then does it get our streams) and to take the run (answer
    with its child's pid); one that accepts and never answers (hung, stopped) gets a one-line note on stderr
    and the run is a process of its own. The wait for the run itself has no bound."""
    path = env("CQ_SERVER")
    if not path or SERVED or env("CQ_DEBUG") or process.plain_only(argv) or _tty(0) or not _ours(path):
        return None
    wait = handshake_wait()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    go_read, go = os.pipe()  # the child runs only on our byte here: end of file (we gave up) ends it unrun
    try:
        answers, answer = _offer(sock, argv, path, time.monotonic() + wait, go_read)
        if answer and "pid" in answer:
            os.write(go, b"1")
    except TimeoutError:
        sys.stderr.write(f"cq: the cq server at {path} did not take this run within {wait:g}s "
                         "(CQ_SERVER_WAIT); running it in a process of its own\n")
        answer = None
    except OSError:
        answer = None
    finally:
        os.close(go)
        os.close(go_read)
    if not answer or "pid" not in answer:  # refused (the reason is in the server's log), no child, or no word
        sock.close()
        return None
    return _wait(sock, answers, int(answer["pid"]))


def _offer(sock: socket.socket, argv: list[str], path: str, deadline: float, go_read: int):
    """Connect, wait for the server's greeting, send the request with our streams and ``go_read``, and read its
    answer (the child's pid, or a refusal): (the socket's reader, the answer). TimeoutError past ``deadline``."""
    sock.settimeout(max(deadline - time.monotonic(), 0.001))
    sock.connect(path)
    if _peer_uid(sock) != os.getuid():  # a socket another user put there: it gets nothing of ours
        raise OSError("another user's socket")
    answers = sock.makefile("rb")
    sock.settimeout(max(deadline - time.monotonic(), 0.001))
    if not (read(answers) or {}).get("hello"):  # a hung server never greets: it gets no descriptor of ours
        return answers, None
    request = {**identity(), "argv": list(argv), "cwd": os.getcwd(), "env": child_environment(),
               "umask": _umask(), "streams": streams(), "path": list(sys.path), "executable": sys.executable,
               **process.attributes(), "plugins": process.plugins()}
    sock.settimeout(max(deadline - time.monotonic(), 0.001))
    send(sock, request, fds=(0, 1, 2, go_read))
    sock.settimeout(max(deadline - time.monotonic(), 0.001))
    answer = read(answers)
    sock.settimeout(None)
    return answers, answer


WAIT = 30.0  # seconds: a server takes a run in well under one (a fork), several on a busy machine


def handshake_wait() -> float:
    """How long a client waits for the server to take its run: $CQ_SERVER_WAIT seconds, else WAIT."""
    text = env("CQ_SERVER_WAIT") or ""
    if not text.strip():
        return WAIT
    try:
        wait = float(text)
    except ValueError:
        wait = -1.0
    if not wait > 0:
        raise InputError(f"CQ_SERVER_WAIT={text!r} is not a number of seconds above 0; set it to one (default "
                         f"{WAIT:g}) or unset it")
    return wait


def _ours(path: str) -> bool:
    """Is ``path`` a socket of this user's (anything else: run here)?"""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISSOCK(info.st_mode) and info.st_uid == os.getuid()


def _peer_uid(sock: socket.socket) -> int:
    peer = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)
    return int.from_bytes(peer[4:8], sys.byteorder)


def _tty(fd: int) -> bool:
    try:
        return os.isatty(fd)
    except OSError:
        return False


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


# Signals cq's main handles whatever it inherited (cli.main: SIGTERM and SIGHUP clean up): forwarded even when
# ignored here, as a plain cq ends on them. Others (SIGINT, SIGQUIT) reach the run only when not ignored.
HANDLED = (signal.SIGTERM, signal.SIGHUP)


def _wait(sock: socket.socket, answers, pid: int) -> int:
    """The child's status, with our signals forwarded to it meanwhile (HANDLED, and those we do not ignore). The child
    itself sends its pid and its exit status; the server sends the status too (and the signal that killed
    it). Only when neither came (both ended without a word) is the run reported failed."""
    previous = {sig: signal.signal(sig, lambda signum, frame: _forward(pid, signum)) for sig in FORWARDED
                if sig in HANDLED or signal.getsignal(sig) != signal.SIG_IGN}
    answer = None
    try:
        while answer is None or "status" not in answer:
            answer = read(answers)
            if answer is None:
                break
    except OSError:
        answer = None
    finally:
        answers.close()
        sock.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if answer and "status" in answer:
        return int(answer["status"])
    sys.stderr.write(f"cq: error: the cq server at {env('CQ_SERVER')} and its run ended without the run's exit "
                     "status; its output may be incomplete: run it again (without CQ_SERVER to run it in a "
                     "process of its own)\n")
    return 1


def _forward(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass


def exit_with(status: int) -> None:
    """End this process as the child ended: with its exit code, or killed by the same signal."""
    sys.stdout.flush()
    if status < 0:
        signal.signal(-status, signal.SIG_DFL)
        os.kill(os.getpid(), -status)
        time.sleep(1)  # pragma: no cover (the signal ends us first)
    sys.exit(status if status >= 0 else 128 - status)


def cq() -> None:
    """The ``cq`` console entry point: with CQ_SERVER set, the run goes to that fork server when it takes it;
    else (or when it does not) cq runs in this process (``cqtools.cli.main``)."""
    if env("CQ_SERVER"):
        try:
            status = delegate(sys.argv)
        except InputError as err:  # CQ_SERVER_WAIT not a number of seconds
            sys.stderr.write(f"cq: error: {safe(err, one_line=True)}\n")
            sys.exit(err.exit_code)
        if status is not None:
            exit_with(status)
    command_line().main()


def command_line():
    """cqtools.cli, the fork server's one entry into it: ``main`` runs a cq, ``ahead`` prepares a server's imports.
    Imported late: a server notes its sources' stamps before it imports them."""
    from .. import cli

    return cli
