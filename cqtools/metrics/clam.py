"""CLAM's answer accuracy with a penalty for needless clarification (Kuhn et al. 2022)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

from .normalize import any_alias_in, safe_div


def score_record(aliases: Sequence[str], answer: str | None, asked: bool, ambiguous: bool, lam: float) -> dict:
    """Accuracy (a normalised reference answer inside the normalised system answer) and the
    adjusted accuracy: a correct answer counts ``lam`` when the question was unambiguous but
    the system asked a clarifying question."""
    correct = float(answer is not None and any_alias_in(aliases, answer))
    adjusted = correct * (lam if asked and not ambiguous else 1.0)
    return {"correct": correct, "adjusted": adjusted, "asked": asked, "ambiguous": ambiguous}


@dataclass
class ClamTotals:
    """Running sums of :func:`score_record` rows; :meth:`rates` aggregates them (so a stream of
    records need not be kept)."""

    n: int = 0
    correct: float = 0
    adjusted: float = 0
    asked: int = 0

    def add(self, row: dict) -> None:
        self.n += 1
        self.correct += row["correct"]
        self.adjusted += row["adjusted"]
        self.asked += bool(row["asked"])

    def rates(self) -> dict:
        """{accuracy, adjusted_accuracy, clarification_rate, n}, rates in [0, 1] (0 without rows)."""
        return {"accuracy": safe_div(self.correct, self.n), "adjusted_accuracy": safe_div(self.adjusted, self.n),
                "clarification_rate": safe_div(self.asked, self.n), "n": self.n}


def aggregate(rows: Iterable[dict]) -> dict:
    """{accuracy, adjusted_accuracy, clarification_rate, n} over the given per-record rows."""
    totals = ClamTotals()
    for row in rows:
        totals.add(row)
    return totals.rates()
