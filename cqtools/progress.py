"""Progress bars of library code (training steps, dense encoding): drawn on stderr when it is a terminal and
cq's logger is at INFO (so not under -q); log lines print above the bar. The streaming stages' record bar is
cli/stream.py's."""
from __future__ import annotations

import contextlib
import logging
import sys
from typing import Callable, Iterable


@contextlib.contextmanager
def bar(desc: str, unit: str, total: int | None = None):
    """A tqdm bar (disabled where it is not shown: ``bar.disable`` says which)."""
    from tqdm import tqdm
    from tqdm.contrib.logging import logging_redirect_tqdm

    logger = logging.getLogger("cqtools")
    shown = sys.stderr.isatty() and logger.isEnabledFor(logging.INFO)
    with tqdm(desc=desc, total=total, unit=unit, file=sys.stderr, disable=not shown, dynamic_ncols=True) as drawn:
        if not shown:
            yield drawn
            return
        with logging_redirect_tqdm(loggers=[logger]):
            yield drawn


# Without a terminal (a log file, make's output, a cluster job), no bar is drawn: one short line goes to
# stderr every LINE_INTERVAL seconds instead (and -q silences it), so a long stage is never silent.
LINE_INTERVAL = 30.0
# A stage that ran at least this many seconds off a terminal ends with one line (records, time, rate), so one
# shorter than LINE_INTERVAL is not silent either; a quicker one (a test, a few records) prints nothing.
END_LINE_AFTER = 5.0


class Lines:
    """The record bar's stand-in off a terminal: ``update(n)``/``close()`` like tqdm's; a line "desc: N/TOTAL
    records, R/s, ~T left" every :data:`LINE_INTERVAL` seconds, from a timer thread too, so a stage that
    writes nothing for minutes still says it is working. ``disable`` is True: the stage keeps its batches."""

    disable = True

    def __init__(self, desc: str, total: int | None, interval: float | None = None, unit: str = "records"):
        import threading
        import time

        self.desc, self.total, self.n, self.unit = desc, total, 0, unit
        self.interval = LINE_INTERVAL if interval is None else interval
        self._time = time.monotonic
        self.start = self.last = self._time()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._tick, daemon=True)
        self._thread.start()

    def line(self) -> str:
        elapsed = self._time() - self.start
        rate = self.n / elapsed if elapsed > 0 else 0.0
        done = f"{self.n}/{self.total}" if self.total is not None else str(self.n)
        left = f", ~{clock(max(0, self.total - self.n) / rate)} left" if self.total is not None and rate > 0 else ""
        return f"{self.desc}: {done} {self.unit} in {clock(elapsed)}, {rate:.2f}/s{left}"

    def _say(self) -> None:
        with self._lock:
            self.last = self._time()
            logging.getLogger("cqtools").info(self.line())

    def _tick(self) -> None:
        while not self._stop.wait(max(self.interval, 0.05)):
            if self._time() - self.last >= self.interval:
                self._say()

    def update(self, n: int = 1) -> None:
        self.n += n
        if self._time() - self.last >= self.interval:
            self._say()

    def close(self) -> None:
        self._stop.set()

    def end(self) -> None:
        """The stage went through its input: one that ran :data:`END_LINE_AFTER` seconds or more says so (records,
        time, rate); a failed stage closes without it, its error being its last line."""
        if not self._stop.is_set() and self._time() - self.start >= END_LINE_AFTER:
            with self._lock:
                logging.getLogger("cqtools").info(self.line().split(", ~")[0] + " (ended)")
        self.close()


def clock(seconds: float) -> str:
    """``42s``, ``3m05s``, ``2h07m``."""
    seconds = int(seconds)
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m" if seconds >= 3600 else \
        f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


def record_bar(desc: str, total: int | None, shown: bool, quiet: bool):
    """The streaming stages' record progress: tqdm's bar on a terminal, :class:`Lines` off one, nothing under -q."""
    from tqdm import tqdm

    if shown or quiet:
        return tqdm(desc=desc, unit="rec", file=sys.stderr, total=total, initial=0, disable=not shown,
                    dynamic_ncols=True, smoothing=0.1)
    return Lines(desc, total)


def counted(items: Iterable, desc: str, total: int | None = None, unit: str = "passages", every: int = 1000):
    """``items`` passed through, counted on the bar of :func:`record_bar` (a line every LINE_INTERVAL seconds
    off a terminal: count, rate, and with ``total``, an estimate, the time left); nothing under -q."""
    logger = logging.getLogger("cqtools")
    quiet = not logger.isEnabledFor(logging.INFO)
    shown = sys.stderr.isatty() and not quiet
    if quiet:
        yield from items
        return
    if shown:
        from tqdm import tqdm

        drawn = tqdm(desc=desc, unit=unit.rstrip("s"), total=total, file=sys.stderr, dynamic_ncols=True)
    else:
        drawn = Lines(desc, total, unit=unit)
    n = 0
    try:
        for item in items:
            yield item
            n += 1
            if n == every:
                drawn.update(n)
                n = 0
        drawn.update(n)
        getattr(drawn, "end", drawn.close)()
    finally:
        drawn.close()


@contextlib.contextmanager
def ticker(say: Callable[[], str], interval: float | None = None):
    """While the block runs (a step that reports nothing itself: Lucene indexing), log ``say()`` every
    LINE_INTERVAL seconds."""
    import threading

    stop = threading.Event()

    def tick():
        while not stop.wait(LINE_INTERVAL if interval is None else interval):
            logging.getLogger("cqtools").info(say())

    thread = threading.Thread(target=tick, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
