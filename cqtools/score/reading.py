"""What a `cq score` task reads of a record, the same way for every task: its gold (:func:`gold_of`), the shape of
each prediction it reads (:data:`PREDICTIONS`, checked by :meth:`cqtools.score.base.Task.readable`), its ``--by``
group (:func:`group_of`, from :mod:`.groups`), and the accessors and option declarations several tasks share."""
from __future__ import annotations

from ..records import answer_texts  # noqa: F401 (the tasks' accessor: None when a record has no answers)
from ..registry import option
from .groups import NO_VALUE, group_of  # noqa: F401 (--by's group of a record)

def matcher_option():
    """cq and cbqa's partial-match length (one declaration for both tasks)."""
    from ..metrics.normalize import RELEASED_MATCHER

    return option(RELEASED_MATCHER, "partial-match length: difflib's SequenceMatcher as AskCQ ships it (autojunk on "
                             "for 200+ characters) or the exact longest common substring.", choices=("difflib", "lcs"))


# The predictions the stages write, and the shape each must have (checked before any task reads them).
PREDICTIONS = {
    "passages": (list, dict, "a list of {title, text} objects (as `cq retrieve` writes)"),
    "answers": (list, (dict, str), "a list of {text, ...} objects (as `cq answer` writes)"),
    "dqs": (list, dict, "a list of {question, answer} objects (as `cq disambiguate` writes)"),
    "cq": (dict, None, "a {text, options, ...} object (as `cq gen-cq` writes) or null"),
    "ambiguity": (dict, None, "a {label, score, ...} object (as `cq detect` writes)"),
}


def malformed_prediction(record: dict, key: str) -> str | None:
    """What is wrong with ``record[key]`` (a prediction of :data:`PREDICTIONS`), or None."""
    value = record.get(key)
    if value is None:
        return None
    outer, inner, shape = PREDICTIONS[key]
    if isinstance(value, outer) and (inner is None or all(isinstance(item, inner) for item in value)):
        return None
    return f"'{key}' must be {shape}, not {type(value).__name__}"


def gold_of(record: dict) -> dict:
    """The record's ``gold`` object ({} when absent or not an object)."""
    gold = record.get("gold")
    return gold if isinstance(gold, dict) else {}


def pct(value: float | None) -> float | None:
    return None if value is None else 100.0 * value
