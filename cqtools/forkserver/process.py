"""What a run inherits from the process that starts it, beyond argv, environment and streams: what the client
sends (``attributes``), what the server checks it can give a child exactly (``refusal``) and what the child
takes on (``apply``); and the runs a server can never take exactly (``plain_only``: the client runs them itself).

A plain ``cq`` inherits its parent's resource limits, priority, CPU affinity, ignored signals and blocked
signal mask, and every file descriptor it was given. A forked child of the server has the server's instead:
each is sent, compared and set here, or the run is handed back to a process of its own."""
from __future__ import annotations

import os
import resource
import signal
import stat

# Limits a child takes on with setrlimit (lowering or equal to the server's); any other limit that differs
# (memory, stack: the server's child already holds torch's pages) makes the run a process of its own.
PASSED_LIMITS = ("RLIMIT_FSIZE", "RLIMIT_CPU", "RLIMIT_CORE", "RLIMIT_NOFILE", "RLIMIT_NPROC", "RLIMIT_LOCKS")
# Paths that name this process's own descriptors: in a server's child they would name the child's own.
DESCRIPTOR_PATHS = ("/dev/fd", "/dev/stdin", "/dev/stdout", "/dev/stderr", "/proc/self", "/proc/thread-self")
UNCATCHABLE = (signal.SIGKILL, signal.SIGSTOP)


def _limits() -> dict[str, list[int]]:
    return {name: list(resource.getrlimit(getattr(resource, name)))
            for name in sorted(dir(resource)) if name.startswith("RLIMIT_")}


def _ignored() -> list[int]:
    out = []
    for sig in sorted(signal.valid_signals()):
        try:
            if signal.getsignal(sig) == signal.SIG_IGN:
                out.append(int(sig))
        except (OSError, ValueError):  # a number the C library keeps for itself
            continue
    return out


def attributes() -> dict:
    """This process's limits, priority, affinity, ignored signals and blocked mask, for a child to take on."""
    return {"limits": _limits(), "nice": os.getpriority(os.PRIO_PROCESS, 0),
            "affinity": sorted(os.sched_getaffinity(0)), "ignored": _ignored(),
            "blocked": sorted(int(s) for s in signal.pthread_sigmask(signal.SIG_BLOCK, []))}


def _above(mine: int, theirs: int) -> bool:
    """Is limit ``theirs`` above ``mine`` (RLIM_INFINITY is above everything)?"""
    if mine == resource.RLIM_INFINITY:
        return False
    return theirs == resource.RLIM_INFINITY or theirs > mine


def refusal(request: dict) -> str:
    """Why a child of this process cannot take on ``request``'s attributes exactly ('' when it can)."""
    theirs, mine = request.get("limits"), _limits()
    if not isinstance(theirs, dict) or set(theirs) != set(mine):
        return "a request without the run's resource limits"
    for name, (soft, hard) in theirs.items():
        if [soft, hard] == mine[name]:
            continue
        if name not in PASSED_LIMITS:
            return f"its {name} differs from the server's"
        if _above(mine[name][1], hard) or _above(hard, soft):
            return f"its {name} is above the server's"
    if request.get("nice", 0) < os.getpriority(os.PRIO_PROCESS, 0):
        return "its priority is above the server's (a lower nice value)"
    if request.get("affinity") != sorted(os.sched_getaffinity(0)):
        return "its CPU affinity differs from the server's (thread counts are set at import)"
    return ""


def apply(request: dict) -> None:
    """In the child: take on the client's limits, priority, signal dispositions and mask, as ``refusal``
    allowed. Signals the client does not ignore get a new Python process's handlers (SIGINT raises
    KeyboardInterrupt, SIGPIPE and SIGXFSZ are ignored: the client, a Python process, lists those two)."""
    mine = _limits()
    for name, limits in request["limits"].items():
        if list(limits) != mine[name]:
            resource.setrlimit(getattr(resource, name), tuple(limits))
    if request["nice"] != os.getpriority(os.PRIO_PROCESS, 0):
        os.setpriority(os.PRIO_PROCESS, 0, request["nice"])
    ignored = set(request["ignored"])
    for sig in signal.valid_signals():
        if sig in UNCATCHABLE:
            continue
        handler = signal.SIG_IGN if sig in ignored else signal.SIG_DFL
        if sig == signal.SIGINT and sig not in ignored:
            handler = signal.default_int_handler
        try:
            signal.signal(sig, handler)
        except (OSError, ValueError):
            continue
    signal.pthread_sigmask(signal.SIG_SETMASK, request["blocked"])


def _names_own_descriptor(path: str) -> bool:
    """Does ``path`` reach this process's descriptors (/dev/fd/3, /proc/self/fd/0, a link to one)?"""
    pid_dir = f"/proc/{os.getpid()}"
    for _ in range(40):  # a chain of symbolic links, followed one by one (a loop ends here)
        path = os.path.normpath(os.path.abspath(path))
        if any(path == p or path.startswith(p + "/") for p in (*DESCRIPTOR_PATHS, pid_dir)):
            return True
        parent = os.path.realpath(os.path.dirname(path))
        if any(parent == p or parent.startswith(p + "/") for p in ("/proc/self", pid_dir)):
            return True
        try:
            target = os.readlink(path)
        except OSError:
            return False
        path = os.path.join(os.path.dirname(path), target)
    return True


def _a_pipe(path: str) -> bool:
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def plain_only(argv: list[str]) -> str:
    """Why this run must be a process of its own ('' when a server may take it): a standard stream closed
    (its number would be reused), or an argument naming a descriptor of this process or a pipe."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            return f"descriptor {fd} is closed"
    for arg in argv[1:]:
        for path in _paths_of(arg):
            if path and (_names_own_descriptor(path) or _a_pipe(path)):
                return f"{path} names a descriptor or a pipe"
    return ""


def _paths_of(arg: str) -> set[str]:
    """What ``arg`` may name as a file: itself, an option's value after '=', and a short option's value written
    on to it (click reads -o/dev/fd/3 as -o /dev/fd/3, and -qolink as -q -o link): each of its tails."""
    if not arg.startswith("-"):
        return {arg}
    tails = {arg[k:] for k in range(2, len(arg))} if not arg.startswith("--") else set()
    return {arg, arg.split("=", 1)[-1], *tails}


def plugins() -> list[list[str]]:
    """The ``cqtools.plugins`` entry points installed now (distribution, version, name, value): a server
    whose set differs (one installed or removed since it started) cannot give a run what it would load."""
    from importlib.metadata import distributions

    from ..plugins import GROUP

    found = {(str(dist.metadata["name"]), str(dist.version), ep.name, ep.value)
             for dist in distributions() for ep in dist.entry_points if ep.group == GROUP}
    return [list(entry) for entry in sorted(found)]
