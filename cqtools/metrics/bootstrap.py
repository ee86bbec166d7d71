"""Bootstrap intervals over questions (``cq score --ci`` and ``--paired``).

A *statistic* is the task's own aggregation applied to a resample of its questions:
``statistic(idx) -> {metric: value or None}``, where ``idx`` holds positions of scored questions,
drawn with replacement (repeats count as often as drawn). A corpus-level metric (BLEU from
pooled n-gram counts, a micro average, AUROC, distinct answers over the set) is therefore
recomputed from the resampled questions, not averaged from per-question values.

Method: the nonparametric bootstrap over questions. ``n_boot`` resamples of size n, drawn by
``numpy.random.default_rng(seed).integers(0, n, n)`` one after another (same seed, same
resamples, hence the same intervals). The interval at ``level`` is

* ``percentile`` (default): the (1-level)/2 and (1+level)/2 quantiles of the resampled values
  (numpy's default linear interpolation; scipy.stats.bootstrap's ``method="percentile"``);
* ``basic``: the percentile interval reflected around the point estimate,
  [2*point - q_high, 2*point - q_low].

A resample in which a metric is undefined (None: AUROC drawing a single class, a group drawn
empty) is left out of that metric's interval; :class:`Interval` counts the resamples used.

:func:`paired_bootstrap` draws the same resamples for two systems aligned on the same questions
and gives the interval of the difference B - A (per resample, both are recomputed on the same
questions), so it accounts for the correlation between the two systems' scores.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator, Mapping

import numpy as np

METHODS = ("percentile", "basic")
Statistic = Callable[[np.ndarray], Mapping[str, "float | None"]]


@dataclass(frozen=True)
class Interval:
    low: float | None
    high: float | None
    used: int  # resamples in which the metric was defined

    def excludes(self, value: float = 0.0) -> bool:
        """True when ``value`` lies outside [low, high] (False when the interval is undefined)."""
        return self.low is not None and not (self.low <= value <= self.high)


def resamples(n: int, n_boot: int, seed: int) -> Iterator[np.ndarray]:
    """``n_boot`` arrays of n question positions drawn with replacement, reproducible from ``seed``."""
    if n_boot < 1:
        raise ValueError("n_boot must be >= 1")
    rng = np.random.default_rng(seed)
    for _ in range(n_boot):
        yield rng.integers(0, n, size=n)


def interval(values: np.ndarray, point: float | None, level: float, method: str) -> tuple[float | None, float | None]:
    """The ``method`` interval of the bootstrap ``values`` (NaN = undefined, left out) around ``point``."""
    if method not in METHODS:
        raise ValueError(f"unknown interval method {method!r}; use one of {', '.join(METHODS)}")
    if not 0 < level < 1:
        raise ValueError("level must be in (0, 1)")
    values = np.asarray(values, dtype=float)
    values = values[~np.isnan(values)]
    if not len(values) or point is None:
        return None, None
    low, high = (float(q) for q in np.quantile(values, [(1 - level) / 2, (1 + level) / 2]))
    if method == "basic":
        low, high = 2 * point - high, 2 * point - low
    return low, high


def _defined(point) -> bool:
    return isinstance(point, (int, float)) and not isinstance(point, bool) and not np.isnan(point)


def _draw(statistics: list[Statistic], names: list[str], n: int, n_boot: int, seed: int) -> list[np.ndarray]:
    """One (n_boot, len(names)) array of resampled values per statistic (NaN where undefined)."""
    out = [np.full((n_boot, len(names)), np.nan) for _ in statistics]
    for b, idx in enumerate(resamples(n, n_boot, seed)):
        for values, statistic in zip(out, statistics):
            result = statistic(idx)
            for j, name in enumerate(names):
                value = result.get(name)
                if value is not None:
                    values[b, j] = value
    return out


def bootstrap(statistic: Statistic, n: int, point: Mapping[str, float | None], boot) -> dict[str, Interval]:
    """{metric: Interval} for every metric of ``point`` (the estimate on all n questions) that is a
    number; ``statistic`` recomputes the metrics on a resample. No questions: every bound is None. ``boot``: the
    bootstrap's settings, as declared (cqtools.score.settings.BootstrapOptions: n_boot, seed, level, method)."""
    names = [name for name, value in point.items() if _defined(value)]
    if n == 0 or not names:
        return {name: Interval(None, None, 0) for name in names}
    (values,) = _draw([statistic], names, n, boot.n_boot, boot.seed)
    return {name: Interval(*interval(values[:, j], point[name], boot.level, boot.method),
                           used=int((~np.isnan(values[:, j])).sum()))
            for j, name in enumerate(names)}


@dataclass(frozen=True)
class Difference:
    a: float
    b: float
    diff: float  # b - a on all paired questions
    interval: Interval


def paired_bootstrap(statistic_a: Statistic, statistic_b: Statistic, n: int, boot) -> dict[str, Difference]:
    """{metric: Difference} of system B minus system A on the same n questions (position i is the
    same question for both). Each resample draws the same questions for A and B and recomputes
    both; a metric undefined for either system on all questions is left out. ``boot``: as :func:`bootstrap`'s."""
    everything = np.arange(n)
    point_a, point_b = statistic_a(everything), statistic_b(everything)
    names = [name for name in point_a if _defined(point_a.get(name)) and _defined(point_b.get(name))]
    if n == 0 or not names:
        return {}
    values_a, values_b = _draw([statistic_a, statistic_b], names, n, boot.n_boot, boot.seed)
    diffs = values_b - values_a
    out = {}
    for j, name in enumerate(names):
        diff = point_b[name] - point_a[name]
        out[name] = Difference(point_a[name], point_b[name], diff,
                               Interval(*interval(diffs[:, j], diff, boot.level, boot.method),
                                        used=int((~np.isnan(diffs[:, j])).sum())))
    return out


def flatten(metrics: Mapping, prefix: str = "") -> dict:
    """{"all": {"accuracy": 1}} -> {"all.accuracy": 1} (a task's nested groups as flat names)."""
    out = {}
    for key, value in metrics.items():
        if isinstance(value, Mapping):
            out.update(flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def unflatten(flat: Mapping) -> dict:
    """The inverse of :func:`flatten`."""
    out: dict = {}
    for name, value in flat.items():
        *groups, key = name.split(".")
        node = out
        for group in groups:
            node = node.setdefault(group, {})
        node[key] = value
    return out
