"""How `cq score --ci` and `--paired` draw their intervals: one declaration, from which the command's flags
(cli/score_options.py) and :func:`cqtools.score.ci.with_intervals`'s Python default both come."""
from __future__ import annotations

from dataclasses import dataclass

from ..registry import option
from ..stages.options import CommandSettings

# A paired difference on fewer shared questions is no finding, however its interval lies: below ~10 the
# bootstrap only reshuffles a handful of per-question differences (at 1, every resample is the same question).
# `cq score --paired` and the grid's report (bench/grid/report.py) both read it.
MIN_PAIRED_N = 10


@dataclass(frozen=True)
class BootstrapOptions:
    n_boot: int = option(1000, "--ci, --paired: bootstrap resamples.", min=1)
    seed: int = CommandSettings.seed
    level: float = 0.95
    method: str = option("percentile", "--ci, --paired: percentile interval, or basic (reflected around the "
                                       "estimate).", choices=("percentile", "basic"), flag="--ci-method")

    def describe(self) -> dict:
        return {"method": self.method, "level": self.level, "n_boot": self.n_boot, "seed": self.seed}
