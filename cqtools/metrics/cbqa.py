"""Answers after clarification (AskCQ Task 3 and end to end): partial match, EM, collapse.

Predictions of one question are matched one-to-one to its gold answer sets (one alias list
per interpretation), after normalisation, with the Hungarian algorithm as in AskCQ's
``count_overlap_list``; the micro average is :func:`cqtools.metrics.cq.micro_prf`.

EM differs from the released ``CQA_evaluate`` on purpose: it pairs the dataset's predictions
with the dataset-wide flattened list of gold answer sets by position, which misaligns every
later question once one question has fewer gold answer sets than options (and raises
IndexError when the totals differ); :func:`exact_matches` ties a prediction to its gold option
by name, within its record.
"""
from __future__ import annotations

from typing import Sequence

from .cq import assignment_sums, micro_prf, parse_cq
from .normalize import MATCHERS, RELEASED_MATCHER, normalize_answer, safe_div


def best_alias(pred: str, aliases: Sequence[str], matcher: str = RELEASED_MATCHER) -> tuple[int, int]:
    """(index, L) of the alias with the longest match with ``pred`` (first on ties; AskCQ's
    ``overlap_btw_str_list``)."""
    match = MATCHERS[matcher]
    best_i, best_len = 0, -1
    for i, alias in enumerate(aliases):
        length = match(alias, pred)
        if length > best_len:
            best_i, best_len = i, length
    return best_i, max(best_len, 0)


def answers_overlap(gold_sets: Sequence[Sequence[str]], preds: Sequence[str],
                    matcher: str = RELEASED_MATCHER) -> tuple[float, float]:
    """Sums of matched precision and recall scores; inputs are normalised here.

    Pair score: the alias with the largest L (the ``matcher``'s match length with the prediction);
    precision L/len(pred), recall L/len(that alias). Both sides empty: (1, 1); one: (0, 0).
    """
    golds = [[normalize_answer(a) for a in aliases] for aliases in gold_sets]
    preds = [normalize_answer(p) for p in preds]
    if not golds and not preds:
        return 1.0, 1.0
    if not golds or not preds:
        return 0.0, 0.0
    p_scores, r_scores = [], []
    for aliases in golds:
        p_row, r_row = [], []
        for pred in preds:
            i, length = best_alias(pred, aliases, matcher) if aliases else (0, 0)
            p_row.append(safe_div(length, len(pred)))
            r_row.append(safe_div(length, len(aliases[i])) if aliases else 0.0)
        p_scores.append(p_row)
        r_scores.append(r_row)
    return assignment_sums(p_scores, r_scores)


def exact_matches(gold_cq: str, gold_sets: Sequence[Sequence[str]], preds: Sequence[dict],
                  parser: str = "cq") -> list[int]:
    """EM of the predictions tied to a gold option (AskCQ's "gold" setting).

    A prediction is tied when its ``option`` (normalised) is an option of the parsed gold CQ, as
    when the gold CQ itself was answered; predictions for other options (a generated CQ's) are
    not tied and return nothing, so EM never pairs answers with unrelated gold options. The gold
    answer set is ``gold_sets`` at the tied option's index. EM = 1 when the normalised prediction
    is among that set's normalised aliases; an option with no gold answer set scores 0.
    """
    _, options = parse_cq(gold_cq, parser)
    index = {}
    for i, option in enumerate(options):
        index.setdefault(normalize_answer(option), i)
    ems = []
    for pred in preds:
        if pred.get("option") is None:
            continue
        i = index.get(normalize_answer(str(pred["option"])))
        if i is None:
            continue
        if i >= len(gold_sets):
            ems.append(0)
            continue
        aliases = {normalize_answer(a) for a in gold_sets[i]}
        ems.append(int(normalize_answer(str(pred.get("text") or "")) in aliases))
    return ems


def score_record(gold_sets: Sequence[Sequence[str]], preds: Sequence[str], matcher: str = RELEASED_MATCHER) -> dict:
    p_sum, r_sum = answers_overlap(gold_sets, preds, matcher)
    n_pred, n_gold = max(len(preds), 1), max(len(gold_sets), 1)
    precision, recall, f = micro_prf(p_sum, r_sum, n_pred, n_gold)
    return {
        "precision": precision, "recall": recall, "f1": f,
        "n_answers": len(preds),
        "n_unique_answers": len({normalize_answer(p) for p in preds}),
        "unique_answers": {normalize_answer(p) for p in preds},
        "p_sum": p_sum, "r_sum": r_sum, "n_pred": n_pred, "n_gold": n_gold,
    }
