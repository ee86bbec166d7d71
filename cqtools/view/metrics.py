"""What one record adds to cq's metrics, from the same pure functions ``cq score`` aggregates
(:mod:`cqtools.metrics`): detection correct (``detect``), answers' partial-match F1 (``cbqa``) and
the CQ's options F1 (``cq``). A metric the record cannot have (no gold, no prediction) is absent."""
from __future__ import annotations

from ..metrics import cbqa, cq as cq_metrics

METRICS = ("detect_correct", "answer_f1", "cq_options_f1")


def _gold(record: dict) -> dict:
    gold = record.get("gold")
    return gold if isinstance(gold, dict) else {}


def predicted_ambiguous(record: dict) -> bool | None:
    amb = record.get("ambiguity")
    label = amb.get("label") if isinstance(amb, dict) else None
    return label if isinstance(label, bool) else None


def answer_texts(record: dict) -> list[str] | None:
    answers = record.get("answers")
    if not isinstance(answers, list):
        return None
    return [str(a.get("text") or "") if isinstance(a, dict) else str(a) for a in answers]


def cq_text(record: dict) -> str | None:
    value = record.get("cq")
    if isinstance(value, dict):
        return str(value.get("text") or "")
    return value if isinstance(value, str) else None


def contributions(record: dict) -> dict[str, float]:
    """{metric: value in [0, 1]} of one record (see the module docstring)."""
    gold, out = _gold(record), {}
    pred = predicted_ambiguous(record)
    if isinstance(gold.get("ambiguous"), bool) and pred is not None:
        out["detect_correct"] = float(pred == gold["ambiguous"])
    texts, gold_sets = answer_texts(record), gold.get("answers")
    if texts is not None and isinstance(gold_sets, list) and gold_sets:
        sets = [[str(a) for a in s] if isinstance(s, list) else [str(s)] for s in gold_sets]
        out["answer_f1"] = cbqa.score_record(sets, texts)["f1"]
    if isinstance(gold.get("cq"), str) and "cq" in record:
        out["cq_options_f1"] = cq_metrics.score_record(gold["cq"], cq_text(record))["options_f1"]
    return out
