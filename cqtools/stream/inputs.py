"""Reading a run's input: FILE arguments in order (lines numbered in their file), counting records for a
progress total, keeping one shard's share."""
from __future__ import annotations

import io
import os
import stat
from typing import Iterator

from ..errors import CQError, InputError
from ..jsonl import open_input, read_records


class Counted:
    """The records read (before sharding): a finished run writes their number into its run record."""

    def __init__(self, records):
        self.records = records
        self.count = 0

    def __iter__(self):
        for item in self.records:
            self.count += 1
            yield item


class FileLine(int):
    """A line number that knows its file: formats as "N of FILE" (``line 3 of a.jsonl``)."""

    path: str

    def __new__(cls, n: int, path: str):
        line = super().__new__(cls, n)
        line.path = path
        return line

    def __str__(self) -> str:
        return f"{int(self)} of {self.path}"

    __format__ = lambda self, spec: format(str(self), spec)  # noqa: E731


def read_files(paths, on_error: str, skipped) -> Iterator[tuple[int, dict]]:
    """``(line, record)`` of each file in turn (JSONL, gzipped or not), lines numbered in their file;
    an error names the file."""
    for path in paths:
        with open_input(path) as stream:
            try:
                for lineno, record in read_records(stream, (), on_error, skipped):
                    yield FileLine(lineno, path), record
            except InputError as err:
                err.where = f"{err.where} of {path}" if err.where else path
                raise


def count_records(paths) -> int | None:
    """Non-blank lines of the FILE arguments (the progress bar's total), None without any, or when one is not a
    regular file: a pipe or FIFO (``cq detect <(...)``) can be read once, and its records are the run's."""
    if not paths or not all(os.path.isfile(path) for path in paths):
        return None
    total = 0
    try:
        for path in paths:
            with open_input(path) as stream:
                total += sum(1 for line in stream if line.strip())
    except CQError:  # a cut .gz: no total; the run processes the records before the cut, then says where it is
        return None
    return total


def take_shard(records, index: int, total: int):
    for position, item in enumerate(records):
        if position % total == index:
            yield item



def already_there(stream) -> bool:
    """Whether all of ``stream`` already exists: a regular file (``cq STAGE < file``) or bytes in memory, not a
    pipe or a terminal."""
    try:
        fd = stream.fileno()
    except (AttributeError, io.UnsupportedOperation):
        return True  # in memory (io.BytesIO: Python callers, tests)
    except (OSError, ValueError):
        return False
    try:
        return stat.S_ISREG(os.fstat(fd).st_mode)
    except OSError:
        return False


def count_stdin(stream) -> int | None:
    """Non-blank lines of standard input when it is a regular file (``cq STAGE < file``, gzipped or not), counted
    through a handle of its own (the stream's position is untouched); None for a pipe, a terminal, or a stream that
    has been read from already."""
    try:
        fd = stream.fileno()
        if not stat.S_ISREG(os.fstat(fd).st_mode) or os.lseek(fd, 0, os.SEEK_CUR) != 0:
            return None
        path = f"/proc/self/fd/{fd}"
        if not os.path.exists(path):
            return None
    except (AttributeError, OSError, ValueError):
        return None
    return count_records([path])


class _Replayed(io.RawIOBase):
    """A stream whose first bytes were read ahead (:func:`first_line`): those bytes, then the rest of it."""

    def __init__(self, head: bytes, rest):
        self._head, self._rest = head, getattr(rest, "raw", rest)  # one read at a time: a pipe's records flow on

    def readable(self) -> bool:
        return True

    def readinto(self, buf) -> int:
        if self._head:
            n = min(len(buf), len(self._head))
            buf[:n], self._head = self._head[:n], self._head[n:]
            return n
        return self._rest.readinto(buf)

    def fileno(self) -> int:
        return self._rest.fileno()


def _complete_line(head: bytes) -> tuple[int, bytes] | None:
    """(1-based number, bytes) of the first non-blank line of ``head`` when it is complete."""
    for number, line in enumerate(head.split(b"\n")[:-1], 1):
        if line.strip():
            return number, line
    return None


def first_line(stdin, inputs=(), wait: float = 0.05):
    """``(where, line bytes, stdin)``: the first non-blank input line where it can be seen without waiting on an
    upstream stage, with a stdin that still yields every byte; ``(None, None, stdin)`` where it cannot (a pipe
    whose writer has not written a whole line within ``wait`` seconds: the model loads while it works; a
    terminal; gzip; a FIFO argument). Bad input is then found before any model loads, at no cost to a pipeline."""
    if inputs:
        path = inputs[0]
        if not os.path.isfile(path):
            return None, None, stdin
        with open_input(path) as stream:
            for number, line in enumerate(stream, 1):
                if line.strip():
                    return FileLine(number, path), line.rstrip(b"\r\n"), stdin
        return None, None, stdin
    try:
        fd = stdin.fileno()
        mode = os.fstat(fd).st_mode
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return None, None, stdin
    if stat.S_ISREG(mode) and stdin.seekable():
        at = stdin.tell()
        head = stdin.read(1 << 24)
        stdin.seek(at)
        whole = head + b"\n" if len(head) < 1 << 24 else head  # read to its end: a last line without "\n" is whole
        found = None if head[:2] == b"\x1f\x8b" else _complete_line(whole)
        return (*found, stdin) if found else (None, None, stdin)
    if not stat.S_ISFIFO(mode):
        return None, None, stdin
    import select

    head, ended = b"", False
    while _complete_line(head) is None and select.select([fd], [], [], wait)[0]:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            ended = True
            break
        head += chunk
    replayed = io.BufferedReader(_Replayed(head, stdin)) if head else stdin
    found = None if head[:2] == b"\x1f\x8b" else _complete_line(head + b"\n" if ended else head)
    return (*found, replayed) if found else (None, None, replayed)
