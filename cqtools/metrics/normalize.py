"""Answer normalisation and the string comparisons the released scorers build on."""
from __future__ import annotations

import difflib
import re
import string
from collections import Counter
from typing import Callable, Iterable

_PUNCT = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(text: str) -> str:
    """SQuAD/AmbigQA normalisation: lowercase, drop ASCII punctuation and the articles
    a/an/the, collapse whitespace (same order as the official scripts)."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def difflib_match(a: str, b: str) -> int:
    """Size of ``difflib.SequenceMatcher(None, a, b).find_longest_match(0, len(a), 0, len(b))``,
    what AskCQ's released ``CQ_evaluate.py`` calls with ``a`` = gold, ``b`` = prediction.

    As shipped, autojunk on: when ``b`` has 200+ characters, every character occurring more than
    ``len(b) // 100 + 1`` times in it is ignored, so the match is often shorter than the longest
    common substring (:func:`longest_common_substring`).
    """
    return difflib.SequenceMatcher(None, a, b).find_longest_match(0, len(a), 0, len(b)).size


def longest_common_substring(a: str, b: str) -> int:
    """Length in characters of the longest common contiguous substring of ``a`` and ``b``.

    Exact dynamic programme (``--matcher lcs``); equals :func:`difflib_match` when ``b`` is
    shorter than 200 characters, where difflib's autojunk is off.
    """
    if not a or not b:
        return 0
    best = 0
    prev = [0] * (len(b) + 1)
    for ca in a:
        cur = [0] * (len(b) + 1)
        for j, cb in enumerate(b, start=1):
            if ca == cb:
                cur[j] = prev[j - 1] + 1
                if cur[j] > best:
                    best = cur[j]
        prev = cur
    return best


Matcher = Callable[[str, str], int]
MATCHERS: dict[str, Matcher] = {"difflib": difflib_match, "lcs": longest_common_substring}
RELEASED_MATCHER = "difflib"  # AskCQ's released scorers (cq score's --matcher default)


def token_f1(gold: str, pred: str) -> float:
    """SQuAD token F1 on normalised tokens (ASQA's ``_compute_f1``): both empty = 1, one = 0."""
    gold_toks = normalize_answer(gold).split() if gold else []
    pred_toks = normalize_answer(pred).split() if pred else []
    if not gold_toks or not pred_toks:
        return float(gold_toks == pred_toks)
    same = sum((Counter(gold_toks) & Counter(pred_toks)).values())
    if same == 0:
        return 0.0
    precision = same / len(pred_toks)
    recall = same / len(gold_toks)
    return 2 * precision * recall / (precision + recall)


def any_alias_in(aliases: Iterable[str], text: str, count_empty: bool = False) -> bool:
    """True when some normalised alias is a substring of the normalised ``text``.

    An alias that is empty after normalisation ("The", "!") is in every text; it counts only with
    ``count_empty`` (what ASQA's released ``_exact_presence`` does), never by default.
    """
    norm_text = normalize_answer(text)
    return any((n := normalize_answer(a)) in norm_text and (n or count_empty) for a in aliases)


def f1(precision: float, recall: float) -> float:
    return 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0


def safe_div(num: float, den: float) -> float:
    return num / den if den else 0.0
