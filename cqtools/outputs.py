"""Output files: ``-o FILE`` written atomically (mode kept, symlinks written through), ``--resume OUT``
appended as it goes (gzip members per batch) and repaired when torn, and the removal of leftovers
of processes that no longer run."""
from __future__ import annotations

import contextlib
import gzip
import logging
import os
import re
import zlib
from typing import IO

from .errors import ResourceError

log = logging.getLogger("cqtools")
GZIP_MAGIC = b"\x1f\x8b"

def is_gzip(path: str) -> bool:
    """Whether ``path`` starts with gzip's magic bytes (its name does not matter)."""
    with open(path, "rb") as fh:
        return fh.read(2) == GZIP_MAGIC


# ---------------------------------------------------------------------------------------------
# out: -o FILE (atomic), --resume OUT (appended as it goes)


def wants_gzip(path: str) -> bool:
    return path.endswith(".gz")


def pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` runs on this machine (a leftover's owner)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


def remove_stale(parent: str, pattern: str) -> list[str]:
    """Remove the entries of ``parent`` whose name matches ``pattern`` (a regex whose first group is
    the writing process's pid) and whose process is gone: what a killed run (kill -9, a node lost)
    left behind. Files and directories of live processes are never touched."""
    import re
    import shutil

    removed = []
    try:
        names = os.listdir(parent)
    except OSError:
        return removed
    for name in names:
        match = re.match(pattern, name)
        if not match or pid_alive(int(match.group(1))):
            continue
        path = os.path.join(parent, name)
        try:
            shutil.rmtree(path) if os.path.isdir(path) and not os.path.islink(path) else os.unlink(path)
        except OSError:
            continue
        removed.append(path)
        log.info("removed %s, left by a run that no longer exists", path)
    return removed


def _mode_of(path: str) -> int | None:
    """The permission bits of an existing file (None: no such file)."""
    import stat

    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return None


class AtomicFile:
    """``-o FILE``: written to a hidden temp file beside FILE, renamed over it by :meth:`commit`. A run
    that fails (or is killed) never leaves half a FILE, and an existing FILE stays as it was until the
    new one is complete (so ``-o`` may even name the input file). ``.gz`` names are gzipped."""

    def __init__(self, path: str):
        # a symlink is written through (its target replaced, the link kept); an existing file keeps its mode
        # a device or a pipe (-o /dev/stdout, a FIFO) is written as it goes, never replaced
        self.direct = os.path.exists(path) and not os.path.isfile(path) and not os.path.isdir(path)
        self.path = os.path.realpath(path) if os.path.islink(path) and not self.direct else path
        self.mode = _mode_of(self.path)
        parent, name = os.path.split(os.path.abspath(self.path))
        self.tmp = self.path if self.direct else os.path.join(parent, f".{name}.tmp{os.getpid()}")
        try:
            if not self.direct:
                os.makedirs(parent, exist_ok=True)
                remove_stale(parent, rf"^\.{re.escape(name)}\.tmp(\d+)$")
            self.raw = open(self.tmp, "wb")
        except OSError as err:
            raise ResourceError(f"cannot write {path}: {err.strerror}") from None
        self.stream = gzip.GzipFile(filename="", fileobj=self.raw, mode="wb", mtime=0) if wants_gzip(path) else self.raw
        self.done = False

    def write(self, data: bytes) -> None:
        self.stream.write(data)

    def flush(self) -> None:
        """Nothing to do: nobody reads the temp file (and gzip compresses better unflushed)."""

    def commit(self) -> None:
        if self.done:
            return
        if self.stream is not self.raw:
            self.stream.close()
        self.raw.flush()
        if self.direct:
            self.raw.close()
            self.done = True
            return
        os.fsync(self.raw.fileno())
        self.raw.close()
        if self.mode is not None:
            os.chmod(self.tmp, self.mode)
        os.replace(self.tmp, self.path)
        self.done = True

    def abort(self) -> None:
        if self.done:
            return
        self.done = True
        try:
            if self.stream is not self.raw:
                self.stream.close()
            self.raw.close()
        finally:
            if not self.direct and os.path.exists(self.tmp):
                os.unlink(self.tmp)


class GzipMembers:
    """Appends to a gzip file one complete gzip member per :meth:`flush` (per batch), so the file is
    valid gzip between batches and a kill can tear at most the member being written."""

    def __init__(self, fh: IO[bytes]):
        self.fh = fh
        self.pending: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.pending.append(data)

    def flush(self) -> None:
        if self.pending:
            self.fh.write(gzip.compress(b"".join(self.pending), mtime=0))
            self.pending = []
        self.fh.flush()

    def close(self) -> None:
        self.flush()
        self.fh.close()


def output_is_gzip(path: str) -> bool:
    """A ``--resume`` file's format: what an existing one holds (magic bytes), else its name."""
    if os.path.exists(path) and os.path.getsize(path) > 0:
        return is_gzip(path)
    return wants_gzip(path)


def open_append(path: str) -> IO[bytes]:
    fh = open(path, "ab")
    return GzipMembers(fh) if output_is_gzip(path) else fh


def scan_output(path: str) -> tuple[int, int, bytes]:
    """A ``--resume`` file's complete records: ``(count, good_end, recovered)``. The file's first
    ``good_end`` bytes are sound; ``recovered`` holds the complete lines (uncompressed) that a torn
    gzip tail still gives after them (empty for plain JSONL, whose torn last line is just cut off)."""
    if not os.path.exists(path):
        return 0, 0, b""
    if output_is_gzip(path):
        return _scan_gzip(path)
    count = good_end = 0
    with open(path, "rb") as fh:
        for raw in fh:
            if not raw.endswith(b"\n"):
                break
            count += 1
            good_end += len(raw)
    return count, good_end, b""


def _scan_gzip(path: str) -> tuple[int, int, bytes]:
    """Decompress member by member; ``good_end`` is the end of the last member after which the
    records end on a line break, ``recovered`` what decompresses after it up to its last line break
    (a torn member, from a kill, still gives the lines compressed before the kill)."""
    count = good_end = position = 0  # position: compressed bytes before the current member
    tail = bytearray()  # uncompressed bytes after good_end
    decompressor = zlib.decompressobj(wbits=31)
    fed = 0  # compressed bytes of the current member fed so far
    with open(path, "rb") as fh:
        data = b""
        while True:
            if not data:
                data = fh.read(1 << 20)
                if not data:
                    break
            try:
                tail += decompressor.decompress(data)
            except zlib.error:
                break
            if not decompressor.eof:
                fed += len(data)
                data = b""
                continue
            rest = decompressor.unused_data
            position += fed + len(data) - len(rest)
            fed = 0
            data = rest
            decompressor = zlib.decompressobj(wbits=31)
            if not tail or tail.endswith(b"\n"):
                count += tail.count(b"\n")
                good_end = position
                tail.clear()
    recovered = bytes(tail[:tail.rfind(b"\n") + 1])
    return count + recovered.count(b"\n"), good_end, recovered


def repair_output(path: str, good_end: int, recovered: bytes) -> None:
    """Cut a ``--resume`` file back to its sound part and rewrite the recovered lines cleanly (a new
    gzip member); a kill during the repair leaves a file the next repair handles the same way."""
    if not os.path.exists(path) or (good_end == os.path.getsize(path) and not recovered):
        return
    with open(path, "r+b") as fh:
        fh.truncate(good_end)
        fh.seek(good_end)
        if recovered:
            fh.write(gzip.compress(recovered, mtime=0))


# ---------------------------------------------------------------------------------------------
# model directories: `cq train ... --out DIR`

MODEL_MARKERS = ("cq_train.json", "combiner.json")  # what every `cq train` directory holds


@contextlib.contextmanager
def model_directory(out: str, overwrite: bool, keep: str | None = None):
    """Where a trainer writes: a new directory beside ``out``, renamed to ``out`` when training
    ends well (an old model there is replaced only then, and only with ``overwrite``; a killed or
    failed run leaves the old model as it was). Paths in the report are rewritten to ``out``.
    ``keep``: a folder the run writes into ``out`` itself (its checkpoints, which must outlive a
    killed run): ``out`` holding only that is no model to protect, and it moves into the new model."""
    import shutil
    import tempfile

    if os.path.isdir(out) and os.listdir(out) and not (keep and os.listdir(out) == [keep]):
        if not overwrite:
            raise ResourceError(f"{out} already holds files; pass --overwrite to replace the model there (the new "
                                "one is written beside it and swapped in when training ends), or another --out")
        if not any(os.path.exists(os.path.join(out, marker)) for marker in MODEL_MARKERS):
            raise ResourceError(f"{out} is not a `cq train` model directory (no {' or '.join(MODEL_MARKERS)}); "
                                "--overwrite replaces only models, never other files; pass another --out")
    elif os.path.exists(out) and not os.path.isdir(out):
        raise ResourceError(f"--out {out} is a file; pass a directory")
    parent, name = os.path.split(os.path.abspath(out))
    try:
        os.makedirs(parent, exist_ok=True)
        remove_stale(parent, rf"^\.{re.escape(name)}\.(?:training|old)-(\d+)-")  # a killed run's leftovers
        staging = tempfile.mkdtemp(prefix=f".{name}.training-{os.getpid()}-", dir=parent)
    except OSError as err:  # a read-only file system, no permission
        raise ResourceError(f"cannot write --out {out} ({err.strerror or err}); pass a writable directory") from None
    try:
        yield staging
        _relocate_report(staging, out)
        if keep and os.path.isdir(os.path.join(out, keep)) and not os.path.exists(os.path.join(staging, keep)):
            os.rename(os.path.join(out, keep), os.path.join(staging, keep))
        old = None
        if os.path.exists(out):
            old = f"{staging}.old".replace(".training-", ".old-", 1)
            os.rename(out, old)
        os.rename(staging, out)
    except BaseException as err:
        shutil.rmtree(staging, ignore_errors=True)
        if disk_full(err):
            kept = f"the model already in {out} is untouched" if os.path.exists(out) else f"{out} was not created"
            raise ResourceError(f"no space left on the device holding {parent} while writing the model: nothing was "
                                f"lost (the partly written copy is removed, {kept}, complete checkpoints stay); free "
                                f"space and run again (--resume continues from the newest checkpoint)") from None
        raise
    if old:
        shutil.rmtree(old, ignore_errors=True)


def disk_full(err: BaseException | None) -> bool:
    """Whether ``err`` (or what it was raised from) is a full disk or quota: an OSError's ENOSPC/EDQUOT, or the
    message safetensors' and torch's writers give it ("No space left on device")."""
    import errno

    seen = set()
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        if isinstance(err, OSError) and err.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        if "No space left on device" in str(err):
            return True
        err = err.__cause__ or err.__context__
    return False


def _relocate_report(staging: str, out: str) -> None:
    """The report's mentions of the staging directory, as the model's final place."""
    import json

    for marker in MODEL_MARKERS:
        path = os.path.join(staging, marker)
        if os.path.exists(path):
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text.replace(json.dumps(staging)[1:-1], json.dumps(out)[1:-1]))
