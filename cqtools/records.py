"""The record schema: what ``cq convert`` writes and what each stage reads and adds.

See docs/schema.md for the full description. In short, a record is one question::

    {"id": str, "question": str,
     "gold": {...},            # written by cq convert; read by cq score and cq oracle only
     "passages": [...],        # cq retrieve / cq rerank: {id, title, text, score, rank}
     "ambiguity": {...},       # cq detect: {label, score, method}
     "cq": {...},              # cq gen-cq: {text, category, options, method}
     "answers": [...],         # cq answer: [{text, option?, question?, score?}]
     "meta": {stage: {...}}}   # what produced each key (model, parameters)

No inference stage may read ``gold`` (or ``source_qid`` of a passage).
"""
from __future__ import annotations

from .errors import InputError

GOLD = "gold"
PASSAGES = "passages"
META = "meta"


def require(record: dict, key: str, hint: str) -> object:
    """Return ``record[key]`` or raise an InputError naming the record and what to run first."""
    value = record.get(key)
    if value is None:
        raise InputError(f"record {record.get('id')} has no '{key}'; {hint}", record_id=record.get("id"))
    return value


def set_meta(record: dict, stage: str, info: dict) -> None:
    record.setdefault(META, {})[stage] = info


def annotation_clusters(annotation: dict) -> list[list[str]]:
    """AmbigNQ annotation -> answer clusters: one for singleAnswer, one per QA pair otherwise."""
    if annotation["type"] == "singleAnswer":
        return [list(annotation["answer"])]
    return [list(pair["answer"]) for pair in annotation["qaPairs"]]


def gold_from_annotations(annotations: list[dict]) -> dict:
    """Gold fields derived from AmbigNQ annotations (several annotators allowed).

    ``ambiguous`` is true when any annotation is multipleQAs; ``answers``/``dqs`` come from the
    first multipleQAs annotation if there is one, else from the first singleAnswer.
    """
    if not annotations:
        raise InputError("no annotations")
    multi = [a for a in annotations if a["type"] == "multipleQAs"]
    first = multi[0] if multi else annotations[0]
    gold = {
        "ambiguous": bool(multi),
        "annotations": annotations,
        "answers": annotation_clusters(first),
        "dqs": [{"question": p["question"], "answers": list(p["answer"])} for p in first.get("qaPairs", [])],
    }
    return gold
