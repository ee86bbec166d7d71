"""Child processes the tests start (a test server, SLURM's daemons, llama.cpp's server): stopped one way."""
from __future__ import annotations

import subprocess


def stop(proc: subprocess.Popen, timeout: float) -> bool:
    """Ask ``proc`` to end (SIGTERM), wait up to ``timeout`` seconds, then kill it; True when it had to be killed."""
    if proc.poll() is not None:
        return False
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
        return False
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return True
