"""CLAM's answer accuracy with a penalty for needless clarification (Kuhn et al. 2022)."""
from __future__ import annotations

from typing import Iterable, Sequence

from .normalize import any_alias_in, safe_div


def score_record(aliases: Sequence[str], answer: str | None, asked: bool, ambiguous: bool, lam: float) -> dict:
    """Accuracy (a normalised reference answer inside the normalised system answer) and the
    adjusted accuracy: a correct answer counts ``lam`` when the question was unambiguous but
    the system asked a clarifying question."""
    correct = float(answer is not None and any_alias_in(aliases, answer))
    adjusted = correct * (lam if asked and not ambiguous else 1.0)
    return {"correct": correct, "adjusted": adjusted, "asked": asked, "ambiguous": ambiguous}


def aggregate(rows: Iterable[dict]) -> dict:
    """{accuracy, adjusted_accuracy, clarification_rate, n} over the given per-record rows."""
    n = correct = adjusted = asked = 0
    for row in rows:
        n += 1
        correct += row["correct"]
        adjusted += row["adjusted"]
        asked += bool(row["asked"])
    return {"accuracy": safe_div(correct, n), "adjusted_accuracy": safe_div(adjusted, n),
            "clarification_rate": safe_div(asked, n), "n": n}
