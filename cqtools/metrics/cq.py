"""Clarifying-question metrics (AskCQ Task 2): CQ parsing, options partial match, category.

A CQ reads "Which [category]: A, B, or C?". Two parsers (``--cq-parser``):

* ``askcq`` (default) is AskCQ's released ``parse_clarification_question`` (CQDataset.py):
  split at the first ":" (no ":": category and single option "invalid form"); the category is
  kept as written (``"Which one :"`` gives ``"Which one "``); the option string is split on
  ``", or"``, then on ``","``, and each piece loses spaces and "?" at both ends. So "A or B"
  is one option, quotes stay, and empty pieces stay (``"Which one:?"`` has the option ``""``).
* ``cq``: category trimmed; options separated by ", or ", ", " and " or "; the final "?"
  dropped; an option in quotes ("A, B" or 'A or B') kept whole and unquoted; empty options
  dropped.
"""
from __future__ import annotations

from typing import Sequence

from .normalize import MATCHERS, RELEASED_MATCHER, f1, safe_div

INVALID = "invalid form"
SEPARATORS = (", or ", ", ", " or ")  # longest first: ", or " must win over ", "
QUOTES = {'"': '"', "'": "'", "\u201c": "\u201d", "\u2018": "\u2019"}
PARSERS = ("askcq", "cq")


def parse_cq(text: str, parser: str = "cq") -> tuple[str, list[str]]:
    """``(category, options)`` of a clarifying question, with the ``askcq`` or ``cq`` parser.

    The default here is ``cq``, what the pipeline stages (gen-cq, answer, oracle) read CQs with;
    scoring passes its ``--cq-parser`` (default ``askcq``) explicitly.
    """
    if parser == "askcq":
        return parse_cq_askcq(text)
    if parser != "cq":
        raise ValueError(f"unknown CQ parser {parser!r}; use one of {', '.join(PARSERS)}")
    category, sep, option_string = text.partition(":")
    if not sep:
        return INVALID, [INVALID]
    option_string = option_string.strip()
    if option_string.endswith("?"):
        option_string = option_string[:-1].rstrip()
    return category.strip(), split_options(option_string)


def parse_cq_askcq(text: str) -> tuple[str, list[str]]:
    """AskCQ's ``parse_clarification_question``, quirks included (see the module docstring)."""
    category, sep, option_string = text.partition(":")
    if not sep:
        return INVALID, [INVALID]
    return category, [option.strip(" ?") for part in option_string.split(", or") for option in part.split(",")]


def _separator_at(text: str, i: int) -> str | None:
    for sep in SEPARATORS:
        if text.startswith(sep, i):
            return sep
    return None


def _ends_option(text: str, i: int) -> bool:
    return i >= len(text) or not text[i:].strip() or _separator_at(text, i) is not None


def split_options(text: str) -> list[str]:
    """Split an option string at the separators outside quotes; empty options are dropped."""
    options: list[str] = []
    i, n = 0, len(text)
    while i < n:
        close = QUOTES.get(text[i])
        end = -1
        if close is not None:
            end = text.find(close, i + 1)
            while end != -1 and not _ends_option(text, end + 1):
                end = text.find(close, end + 1)
        if end != -1:  # a quoted option
            options.append(text[i + 1:end].strip())
            j = end + 1
            while j < n and text[j] == " " and _separator_at(text, j) is None:
                j += 1
        else:
            j = i
            while j < n and _separator_at(text, j) is None:
                j += 1
            options.append(text[i:j].strip())
        sep = _separator_at(text, j)
        i = j + len(sep) if sep else n
    return [o for o in options if o]


def assignment_sums(p_scores: list[list[float]], r_scores: list[list[float]]) -> tuple[float, float]:
    """Best one-to-one sums of precision scores and (separately) of recall scores (Hungarian)."""
    import numpy as np
    from scipy.optimize import linear_sum_assignment

    p = np.asarray(p_scores, dtype=float)
    r = np.asarray(r_scores, dtype=float)
    rows, cols = linear_sum_assignment(p, maximize=True)
    p_sum = float(p[rows, cols].sum())
    rows, cols = linear_sum_assignment(r, maximize=True)
    return p_sum, float(r[rows, cols].sum())


def options_overlap(gold: Sequence[str], pred: Sequence[str], matcher: str = RELEASED_MATCHER) -> tuple[float, float]:
    """Sums of matched precision and recall scores between gold and predicted options
    (AskCQ's ``count_overlap``).

    Pair score: L = the ``matcher``'s match length in characters (``difflib``: SequenceMatcher's
    longest match, gold first, as AskCQ; ``lcs``: the exact longest common substring);
    precision L/len(pred), recall L/len(gold). Both lists empty: (1, 1); one empty: (0, 0).
    """
    match = MATCHERS[matcher]
    if not gold and not pred:
        return 1.0, 1.0
    if not gold or not pred:
        return 0.0, 0.0
    p_scores, r_scores = [], []
    for g in gold:
        lengths = [match(g, p) for p in pred]
        p_scores.append([safe_div(length, len(p)) for length, p in zip(lengths, pred)])
        r_scores.append([safe_div(length, len(g)) for length in lengths])
    return assignment_sums(p_scores, r_scores)


def micro_prf(p_sum: float, r_sum: float, n_pred: int, n_gold: int) -> tuple[float, float, float]:
    """AskCQ's micro average: P = sum p / sum max(#pred, 1), R = sum r / sum max(#gold, 1).

    Pass totals: ``n_pred`` and ``n_gold`` are already sums of max(#, 1) over records.
    """
    precision = safe_div(p_sum, n_pred)
    recall = safe_div(r_sum, n_gold)
    return precision, recall, f1(precision, recall)


def score_record(gold_cq: str, pred_cq: str | None, parser: str = "askcq", matcher: str = RELEASED_MATCHER) -> dict:
    """Per-record CQ scores; ``pred_cq`` None means no CQ was predicted (scores 0)."""
    gold_category, gold_options = parse_cq(gold_cq, parser)
    if pred_cq is None:
        pred_category, pred_options = None, []
    else:
        pred_category, pred_options = parse_cq(pred_cq, parser)
    p_sum, r_sum = options_overlap(gold_options, pred_options, matcher)
    n_pred, n_gold = max(len(pred_options), 1), max(len(gold_options), 1)
    precision, recall, f = micro_prf(p_sum, r_sum, n_pred, n_gold)
    return {
        "category_em": float(pred_category == gold_category),
        "options_precision": precision,
        "options_recall": recall,
        "options_f1": f,
        "n_options": len(pred_options),
        "n_gold_options": len(gold_options),
        "category": pred_category,
        "gold_category": gold_category,
        # sums for the micro average
        "p_sum": p_sum, "r_sum": r_sum, "n_pred": n_pred, "n_gold": n_gold,
    }
