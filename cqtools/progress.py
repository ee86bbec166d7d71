"""Progress bars of library code (training steps, dense encoding): drawn on stderr when it is a terminal and
cq's logger is at INFO (so not under -q); log lines print above the bar. The streaming stages' record bar is
cli/stream.py's."""
from __future__ import annotations

import contextlib
import logging
import sys


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
