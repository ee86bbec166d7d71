"""The fork server (the package's docstring): import once, then fork a child per ``cq`` run a client offers.

One thread, one ``select`` loop: accept a request, check it, fork; reap children and send each client its
child's status; a client that went away gets its child ended (SIGTERM, as ``kill`` would)."""
from __future__ import annotations

import importlib
import io
import os
import select
import signal
import socket
import sys
import threading
import time
import traceback

from .. import plugins
from ..config import child_environment
from . import FORWARDED, PRELOAD, client, free, identity, process, recv, send

_REPLACED: list = []
MAX_RUNS = 32  # more runs at once than any make -jN of the grid: a safety valve, not a queue


class Server:
    def __init__(self, path: str, idle: float = 600.0, preload=PRELOAD, log=None):
        self.path, self.idle, self.log = path, idle, log or sys.stderr
        self.environ = child_environment()  # before cq's own defaults: what a client's environment must equal
        self.identity = identity()
        self.runs: dict[int, socket.socket] = {}  # child pid -> its client's connection (None: client gone)
        self.clients: dict[socket.socket, int] = {}
        self.stale = ""
        seen = _stamps()  # before the imports: a file edited while they run is one the server may hold old
        for name in [*preload, *client.command_line().ahead()]:  # ahead: cq's environment defaults first
            try:
                importlib.import_module(name)
            except Exception as err:  # an optional package missing or broken: the child imports it (or not)
                self.say(f"not preloaded: {name} ({type(err).__name__})")
        self.sources = {path: seen.get(path) for path in _sources()}
        self.plugins = process.plugins()

    def say(self, text: str) -> None:
        print(f"cq server {os.getpid()}: {text}", file=self.log, flush=True)

    def serve(self) -> None:
        """Listen at ``path`` (bound aside and renamed: a client never finds a socket not yet listening)
        until idle for ``idle`` seconds with nothing running, or told to stop (SIGTERM, SIGHUP, SIGINT: the
        runs in flight end first); remove it then."""
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        aside = f"{self.path}.{os.getpid()}"
        listener.bind(aside)
        listener.listen(16)
        os.rename(aside, self.path)
        self.inode = os.stat(self.path).st_ino
        self.say(f"serving at {self.path}")
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):  # stop taking runs; end when they have
            signal.signal(sig, lambda signum, frame: setattr(self, "stale", f"signal {signum}"))
        last = time.monotonic()
        try:
            while self.runs or (time.monotonic() - last < self.idle and not self.stale):
                ready, _, _ = select.select([listener, *self.clients], [], [], 0.2)
                for sock in ready:
                    if sock is listener:
                        last = time.monotonic()
                        self.accept(listener)
                    else:
                        self.client_gone(sock)
                self.reap()
        finally:
            if _inode(self.path) == self.inode:  # still ours (not a newer server's)
                os.unlink(self.path)
            _drop_pid_file(f"{self.path}.pid")
            listener.close()
            self.say("stopped" + (f": {self.stale}" if self.stale else ""))

    def accept(self, listener: socket.socket) -> None:
        conn, _ = listener.accept()
        conn.settimeout(10)  # a client that connects and says nothing must not hold the loop
        try:
            send(conn, {"hello": os.getpid()})  # only now does the client send its streams (a hung server gets none)
            request, fds = recv(conn, with_fds=True)
            conn.settimeout(None)
        except (OSError, ValueError):
            conn.close()
            return
        reason = self.refusal(conn, request, fds)
        if reason:
            self.say(f"refused: {reason}")
            for fd in fds:
                os.close(fd)
            _try_send(conn, {"refused": reason})
            conn.close()
            return
        pid = os.fork()
        if pid == 0:
            self.child(listener, conn, request, fds)  # never returns
        for fd in fds:
            os.close(fd)  # the child has them: holding a pipe's end here would keep its reader waiting
        self.runs[pid], self.clients[conn] = conn, pid  # the child sends the client its pid itself
        self.say(f"run {pid}: cq {' '.join(request['argv'][1:3])}")

    def refusal(self, conn: socket.socket, request, fds) -> str:
        """Why this request cannot run here exactly as in a process of its own ('' when it can). A changed source
        file first: whatever else this request has, the server stops (a newer client's request may be one it
        cannot read)."""
        changed = _changed(self.sources)
        if changed:
            self.stale = f"{changed} changed since the server imported it"
            return self.stale
        if request is None or len(fds) != 4:
            return "an incomplete request"
        if len(self.runs) >= MAX_RUNS:
            return f"{len(self.runs)} runs in flight already"
        uid = os.getuid()
        peer = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)
        if int.from_bytes(peer[4:8], sys.byteorder) != uid:
            return "another user"
        if any(request.get(key) != value for key, value in self.identity.items()):
            return f"another Python or cqtools ({request.get('python')}, {request.get('cqtools')})"
        differ = sorted(name for name in set(self.environ) | set(request.get("env", {}))
                        if not free(name)
                        and self.environ.get(name) != request["env"].get(name))
        if differ:
            return f"its environment differs in {', '.join(differ[:5])}"
        if threading.active_count() > 1:  # a fork keeps only this thread: what another held stays held
            return f"the server runs {threading.active_count()} Python threads (an import started one)"
        if request.get("plugins") != self.plugins:
            return "its installed plugins differ from those the server loaded"
        if plugins.BROKEN:  # a plain run warns about it on its own stderr
            return f"a plugin failed to load here ({plugins.BROKEN[0].plugin})"
        inherited = process.refusal(request)
        if inherited:
            return inherited
        return ""

    def child(self, listener, conn, request: dict, fds: list[int]) -> None:
        """In the forked child: become the client's cq process, run it, exit with its status."""
        code = 1
        try:
            listener.close()
            for other in self.clients:
                other.close()
            if not self.taken(conn, fds.pop()):
                return
            _become(request, fds)
            process.apply(request)
            client.SERVED = True
            code = _run_cq(request["argv"])
            for sig in FORWARDED:  # the run is over: the server's SIGTERM for a client gone now ends nothing
                signal.signal(sig, signal.SIG_IGN)  # (ignored, not blocked: a mask is one thread's, torch has more)
            send(conn, {"status": code})  # the client has it even if the server is gone by now
        except BaseException:  # noqa: BLE001 - a child must never return into the server's loop
            traceback.print_exc()
        finally:
            os._exit(code)

    def taken(self, conn: socket.socket, go: int) -> bool:
        """In the child: send the client this child's pid (before anything is read: a client without it runs the
        cq itself), then wait for its word on the pipe ``go``, the last descriptor it sent: a byte when it waits
        for this run, end of file when it stopped waiting (CQ_SERVER_WAIT) and runs the cq itself."""
        try:
            send(conn, {"pid": os.getpid()})
            taken = os.read(go, 1) == b"1"
        except OSError:  # the client is gone
            taken = False
        os.close(go)
        if not taken:
            self.say(f"run {os.getpid()}: not run: its client stopped waiting for it and runs the cq itself")
        return taken

    def reap(self) -> None:
        while self.runs:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            conn = self.runs.pop(pid, None)
            if conn is not None:
                self.clients.pop(conn, None)
                _try_send(conn, {"status": os.waitstatus_to_exitcode(status)})
                conn.close()

    def client_gone(self, conn: socket.socket) -> None:
        """A client's connection became readable: it ended (killed) before its child; end the child too."""
        pid = self.clients.pop(conn)
        self.runs[pid] = None
        conn.close()
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass


def _become(request: dict, fds: list[int]) -> None:
    """This process takes the client's streams, directory, environment, umask and argv (its limits, priority
    and signals: process.apply)."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.umask(int(request["umask"]))
    os.environ.clear()
    os.environ.update(request["env"])
    sys.argv = list(request["argv"])
    sys.path[:] = request["path"]  # the same directories in the client's spelling (its script's, its venv's)
    sys.executable = request["executable"]
    _REPLACED.extend([sys.stdin, sys.stdout, sys.stderr])  # kept: freeing one would close the fd it held
    (enc_in, err_in, _), (enc_out, err_out, line_out), (enc_err, err_err, _) = request["streams"]
    sys.stdin = sys.__stdin__ = _stream(0, "r", enc_in, err_in, False)
    sys.stdout = sys.__stdout__ = _stream(1, "w", enc_out, err_out, line_out)
    sys.stderr = sys.__stderr__ = _stream(2, "w", enc_err, err_err, True)


def _stream(fd: int, mode: str, encoding, errors, line_buffering: bool):
    raw = io.FileIO(fd, mode, closefd=False)
    buffered = io.BufferedReader(raw) if mode == "r" else io.BufferedWriter(raw)
    return io.TextIOWrapper(buffered, encoding=encoding or "utf-8", errors=errors or "strict",
                            line_buffering=line_buffering)


def _run_cq(argv: list[str]) -> int:
    """``cq`` as its console script runs it; the exit code a new process would end with."""
    import atexit

    try:
        client.command_line().main()
        code = 0
    except SystemExit as end:
        code = _exit_code(end.code)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            code = code or 120  # what Python does when the final flush of stdout fails
    return code


def _exit_code(code) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # cqtools


def _sources() -> list[str]:
    """cqtools' imported source files (normalized, as ROOT and the stamps' paths are)."""
    paths = (os.path.abspath(getattr(module, "__file__", None) or "/") for module in list(sys.modules.values()))
    return sorted({path for path in paths if path.startswith(ROOT + os.sep)})


def _stamps() -> dict[str, tuple]:
    """Every file of cqtools (its compiled caches and links aside) and its stamp."""
    out = {}
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [name for name in dirs if name != "__pycache__"]
        for name in files:
            path = os.path.join(folder, name)
            try:
                out[path] = stamp(path)
            except OSError:
                continue
    return out


def stamp(path: str) -> tuple:
    """What tells that a file changed: its modification time, and what an edit that puts that time back
    (``touch -r``, ``cp -p``, ``rsync -a``) still changes: its change time (no call sets it), size and inode (an
    editor's save renames a new file over it)."""
    info = os.stat(path)
    return info.st_mtime_ns, info.st_ctime_ns, info.st_size, info.st_ino, info.st_dev


def _changed(sources: dict[str, tuple | None]) -> str:
    """The first of ``sources`` whose stamp is no longer the one seen (None: seen only once imported, so
    perhaps changed meanwhile), or ''."""
    for path, seen in sources.items():
        try:
            if stamp(path) != seen:
                return path
        except OSError:
            return path
    return ""


def _drop_pid_file(path: str) -> None:
    """The pid file its starter wrote (cqtools/forkserver/start.py), when it names this process."""
    try:
        with open(path) as fh:
            if fh.read().strip() == str(os.getpid()):
                os.unlink(path)
    except OSError:
        pass


def _inode(path: str) -> int | None:
    try:
        return os.stat(path).st_ino
    except OSError:
        return None


def _try_send(conn: socket.socket, message: dict) -> None:
    try:
        send(conn, message)
    except OSError:
        pass


def main(argv=None) -> None:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m cqtools.forkserver", description=__doc__.splitlines()[0])
    ap.add_argument("path", help="the Unix socket to listen at (clients: CQ_SERVER=PATH)")
    ap.add_argument("--idle", type=float, default=600.0, help="stop after this many seconds with nothing to do")
    ap.add_argument("--preload", default=",".join(PRELOAD),
                    help="modules to import before serving, comma-separated (default: torch, transformers ...)")
    args = ap.parse_args(argv)
    Server(args.path, args.idle, [name for name in args.preload.split(",") if name]).serve()
