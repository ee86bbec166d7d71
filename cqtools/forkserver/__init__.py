"""An opt-in fork server for many short ``cq`` runs (make compare's cells): import torch, transformers and
cqtools once, then run each ``cq`` invocation in a forked child of that process.

Most of a small model cell is a process importing torch and transformers (3-6 s of a 6-10 s cell on 2 busy
cores, docs/benchmarks/smoke.md); a forked child starts with them imported. With ``CQ_SERVER=PATH`` set, ``cq``
(cqtools/forkserver/client.py, the console entry) first offers its run to the server listening on the Unix socket PATH, once it greets: its argv, working
directory, environment, umask and standard streams (the file descriptors themselves, passed over the socket),
its resource limits, priority, ignored signals and blocked mask (process.py), and waits for the child's exit
status, forwarding SIGINT, SIGTERM, SIGHUP and SIGQUIT (those it does not ignore) to it. The child sends the
client its pid before it reads anything and its exit status when done (the server sends the status too, and
the signal that killed it), and runs only once the client, holding the pid, says so on a pipe it sent with its
streams: a client with no greeting or no pid within ``CQ_SERVER_WAIT`` seconds (30; a hung server) says so on
stderr and runs the cq itself (its child, if one comes, then ends unrun), one without a status fails. The child
runs ``cqtools.cli.main`` as a new process would, so its records are byte for byte those of a separate process
(tests/test_forkserver.py, tests/test_forkserver_exact.py). Whenever the server cannot take a run exactly as a
new process would, ``cq`` runs in its own process, as without ``CQ_SERVER``: no server at PATH (or one still
importing, or a socket not this user's), another Python or another cqtools, an environment that differs from
the server's in anything read at import time (only ``CQ_*`` variables, read when a command runs, and the
shell's own PWD, OLDPWD, SHLVL and _ may differ), a terminal on stdin, a standard stream closed, an argument
naming one of its descriptors (/dev/fd/N, /proc/self/fd/N, ``<(...)``) or a pipe, limits or a priority the
child cannot take on, other plugins installed (or one the server could not load: its warning is the run's),
or a cqtools source file changed since the server started importing it (its modification or change time, size or
inode: an edit that puts the time back, or one made while the server imports, counts; the server then exits).

    python -m cqtools.forkserver PATH [--idle SECONDS]

serves until it has had no run in flight and no request for SECONDS (default 600), then removes PATH; its
log (what it refused and why) goes to its stderr. bench/grid/cell.py starts one per ``make compare`` run
(experiments.mk's SERVE). client.py is cq's side, server.py the server's."""
from __future__ import annotations

import json
import os
import signal
import socket
import struct
import sys

# Variables a child may see with other values than the server: cq reads CQ_* when a command runs (config.py),
# and a shell sets these four for each command it starts. Any other difference: a process of its own.
FREE = ("PWD", "OLDPWD", "SHLVL", "_")


def free(name: str) -> bool:
    """May this variable differ between the server and a run it takes? (cq's own, CQ_*, or the shell's.)"""
    return name.split("_", 1)[0] == "CQ" or name in FREE


FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
# Imported before serving: what the model stages import (the rest is imported by the child, as usual). Not
# onnxruntime: importing it starts a native thread, and a fork keeps only the forking one (0.05 s to import
# anyway). NumPy's OpenBLAS starts its pool's threads at import too, but stops them before a fork and starts
# them again in the child (pthread_atfork), as torch's OpenMP pool, never started here, needs no care.
PRELOAD = ("numpy", "click", "torch", "transformers", "transformers.modeling_utils", "transformers.activations",
           "transformers.masking_utils", "transformers.modeling_layers", "transformers.generation",
           "transformers.models.bert.modeling_bert", "transformers.models.llama.modeling_llama",
           "transformers.tokenization_utils_tokenizers", "tokenizers")


def send(sock: socket.socket, message: dict, fds=()) -> None:
    data = json.dumps(message).encode()
    payload = struct.pack("!I", len(data)) + data
    if fds:
        socket.send_fds(sock, [payload], list(fds))
    else:
        sock.sendall(payload)


def recv(sock: socket.socket, with_fds: bool = False):
    """One message, with the descriptors sent with it when ``with_fds``; None (and no descriptors) when the
    other side closed before a whole message came."""
    fds: list[int] = []
    if with_fds:
        data, fds, _flags, _addr = socket.recv_fds(sock, 65536, 4)
    else:
        data = sock.recv(65536)
    size = struct.unpack("!I", data[:4])[0] if len(data) >= 4 else None
    while data and size is not None and len(data) < 4 + size:
        more = sock.recv(65536)
        if not more:
            break
        data += more
    if size is None or len(data) < 4 + size:
        for fd in fds:
            os.close(fd)
        return (None, []) if with_fds else None
    message = json.loads(data[4:4 + size])
    return (message, fds) if with_fds else message


def read(stream) -> dict | None:
    """The next message from ``stream`` (a socket's ``makefile("rb")``): None when it ends first. Unlike
    ``recv``, it keeps what follows the message for the next call (the child and the server both write)."""
    head = stream.read(4)
    if len(head) < 4:
        return None
    size = struct.unpack("!I", head)[0]
    data = stream.read(size)
    return json.loads(data) if len(data) == size else None


def identity() -> dict:
    """What a server and a client must share: the Python (its environment and version) and the cqtools it
    imports (real paths: a venv reached through a symlink is the same venv)."""
    import cqtools

    return {"python": [os.path.realpath(sys.prefix), sys.version],
            "cqtools": os.path.realpath(os.path.dirname(os.path.abspath(cqtools.__file__)))}


def streams() -> list:
    """How this process's std streams are set up (encoding, errors, line buffering), for the child to copy."""
    out = []
    for stream in (sys.stdin, sys.stdout, sys.stderr):
        out.append([getattr(stream, "encoding", None), getattr(stream, "errors", None),
                    bool(getattr(stream, "line_buffering", False))])
    return out
