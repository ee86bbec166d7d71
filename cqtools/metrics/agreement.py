"""Agreement between annotators and a paired preference test (human studies, ``cq score --task
judgements``): Cohen's kappa for two annotators, Fleiss' kappa for more, the exact two-sided sign
test. Pure functions over labels; ``None`` where a value is undefined."""
from __future__ import annotations

import math
from collections import Counter
from typing import Hashable, Sequence


def cohen_kappa(first: Sequence[Hashable], second: Sequence[Hashable]) -> float | None:
    """Cohen's kappa of two annotators' labels of the same items (``first[i]``, ``second[i]``):
    (p_o - p_e) / (1 - p_e), p_e from each annotator's own label proportions. None without items,
    or when chance agreement is 1 (both gave one same label throughout)."""
    n = len(first)
    if n == 0 or n != len(second):
        return None
    observed = sum(a == b for a, b in zip(first, second)) / n
    ca, cb = Counter(first), Counter(second)
    expected = sum(ca[label] * cb[label] for label in ca) / (n * n)
    return None if expected == 1 else (observed - expected) / (1 - expected)


def fleiss_kappa(items: Sequence[Sequence[Hashable]]) -> float | None:
    """Fleiss' kappa of items each labelled by the same number m >= 2 of annotators (``items[i]``: its
    m labels). P_i = (sum_j n_ij^2 - m) / (m (m - 1)); kappa = (mean P_i - P_e) / (1 - P_e), P_e = sum_j
    p_j^2 with p_j the share of label j among all labels. None without items or when P_e is 1."""
    if not items:
        return None
    m = len(items[0])
    if m < 2 or any(len(labels) != m for labels in items):
        return None
    totals: Counter = Counter()
    agreement = 0.0
    for labels in items:
        counts = Counter(labels)
        totals.update(counts)
        agreement += (sum(c * c for c in counts.values()) - m) / (m * (m - 1))
    p_bar = agreement / len(items)
    p_e = sum((c / (len(items) * m)) ** 2 for c in totals.values())
    return None if p_e == 1 else (p_bar - p_e) / (1 - p_e)


def sign_test(wins: int, losses: int) -> float | None:
    """Exact two-sided sign test p-value of ``wins`` against ``losses`` (ties left out before):
    P(a split at least this uneven | p = 1/2). None without decided pairs."""
    n = wins + losses
    if n == 0:
        return None
    k = min(wins, losses)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n
    return min(1.0, 2 * tail)
