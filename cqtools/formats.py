"""Readers for the public data formats, turning them into cq records (questions) or
passages ({id, title, text}). Used by ``cq convert`` and ``cq index``."""
from __future__ import annotations

import csv
import os
from typing import Callable, Iterator

from .errors import InputError, ResourceError
from .jsonl import load_json_or_jsonl
from .records import gold_from_annotations

# AmbigNQ full-format fields that are annotation by-products: gold, never system input.
_AMBIGNQ_EXTRA = ("nq_answer", "nq_doc_title", "viewed_doc_titles", "used_queries")


def _open_check(path: str) -> None:
    if not os.path.exists(path):
        raise ResourceError(f"file not found: {path}")


def ambignq(path: str) -> Iterator[dict]:
    """AmbigNQ light or full format (a JSON list); full-format extras go under gold."""
    for n, item in enumerate(load_json_or_jsonl(path)):
        _need(item, ("id", "question", "annotations"), n, "AmbigNQ")
        gold = gold_from_annotations(item["annotations"])
        gold.update({k: item[k] for k in _AMBIGNQ_EXTRA if k in item})
        yield {"id": str(item["id"]), "question": item["question"], "gold": gold}


def cambignq(path: str) -> Iterator[dict]:
    """CAmbigNQ (cq_train.json / cq_dev.json): dqs, clarification_answers, clarification_question."""
    for n, item in enumerate(load_json_or_jsonl(path)):
        _need(item, ("id", "question", "dqs", "clarification_answers", "clarification_question"), n, "CAmbigNQ")
        if len(item["dqs"]) != len(item["clarification_answers"]):
            raise InputError(f"record {item['id']}: {len(item['dqs'])} dqs but "
                             f"{len(item['clarification_answers'])} clarification_answers")
        answers = [list(a) for a in item["clarification_answers"]]
        gold = {
            "ambiguous": True,
            "answers": answers,
            "dqs": [{"question": q, "answers": a} for q, a in zip(item["dqs"], answers)],
            "cq": item["clarification_question"],
        }
        gold.update({k: item[k] for k in _AMBIGNQ_EXTRA if k in item})
        if "annotations" in item:
            gold["annotations"] = item["annotations"]
        yield {"id": str(item["id"]), "question": item["question"], "gold": gold}


def asqa(path: str) -> Iterator[dict]:
    """ASQA: a list with ids, or the original {"dev": {id: entry}} / {id: entry} layout."""
    for n, (sample_id, item) in enumerate(_asqa_items(path)):
        _need(item, ("question", "qa_pairs", "annotations"), n, "ASQA")
        dqs = [{"question": p["question"], "answers": list(p["short_answers"])} for p in item["qa_pairs"]]
        annotation = (
            {"type": "multipleQAs", "qaPairs": [{"question": d["question"], "answer": d["answers"]} for d in dqs]}
            if len(dqs) > 1 else {"type": "singleAnswer", "answer": dqs[0]["answers"] if dqs else []}
        )
        gold = {
            "ambiguous": len(dqs) > 1,
            "annotations": [annotation],
            "answers": [d["answers"] for d in dqs],
            "dqs": dqs,
            "long_answers": [a["long_answer"] for a in item["annotations"]],
            "knowledge": [k for a in item["annotations"] for k in a.get("knowledge", [])],
        }
        yield {"id": str(sample_id), "question": item.get("ambiguous_question", item["question"]), "gold": gold}


def _asqa_items(path):
    import orjson

    with open(path, "rb") as fh:
        data = orjson.loads(fh.read())
    if isinstance(data, list):
        for item in data:
            _need(item, ("id",), 0, "ASQA")
            yield item["id"], item
        return
    if set(data) & {"train", "dev", "test"}:
        for split in ("train", "dev", "test"):
            yield from data.get(split, {}).items()
        return
    yield from data.items()


def nq_open(path: str) -> Iterator[dict]:
    """NQ-open jsonl: {"question", "answer": [...]}; ids are ``nq-<line>`` unless given."""
    for n, item in enumerate(load_json_or_jsonl(path), start=1):
        _need(item, ("question", "answer"), n, "NQ-open")
        answers = list(item["answer"])
        gold = {
            "ambiguous": None,
            "annotations": [{"type": "singleAnswer", "answer": answers}],
            "answers": [answers],
            "dqs": [],
        }
        yield {"id": str(item.get("id", f"nq-{n}")), "question": item["question"], "gold": gold}


def dpr_tsv(path: str) -> Iterator[dict]:
    """DPR's psgs_w100.tsv: header ``id text title``, tab separated, csv quoting."""
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.reader(fh, delimiter="\t")
        header = next(reader, None)
        if header is None:
            return
        if [h.strip().lower() for h in header[:3]] != ["id", "text", "title"]:
            raise InputError(f"{path}: expected a DPR header 'id<TAB>text<TAB>title', got {header[:3]}")
        for lineno, row in enumerate(reader, start=2):
            if len(row) < 3:
                raise InputError(f"{path} line {lineno}: expected 3 tab-separated fields, got {len(row)}")
            yield {"id": row[0], "title": row[2], "text": row[1]}


def passages_jsonl(path: str) -> Iterator[dict]:
    """JSONL (or JSON list) passages: {id, title, text} (``contents`` accepted for text)."""
    for n, item in enumerate(load_json_or_jsonl(path), start=1):
        if "text" not in item and "contents" in item:
            item = {**item, "text": item["contents"]}
        _need(item, ("id", "text"), n, "passage")
        yield {"id": str(item["id"]), "title": item.get("title", ""), "text": item["text"]}


def iter_corpus(path: str) -> Iterator[dict]:
    """Passages from a DPR tsv or a JSONL file, chosen by extension."""
    _open_check(path)
    reader = dpr_tsv if path.endswith((".tsv", ".tsv.gz")) else passages_jsonl
    return reader(path)


QUESTION_FORMATS: dict[str, Callable[[str], Iterator[dict]]] = {
    "ambignq": ambignq,
    "cambignq": cambignq,
    "asqa": asqa,
    "nq-open": nq_open,
}
CORPUS_FORMATS: dict[str, Callable[[str], Iterator[dict]]] = {
    "dpr": dpr_tsv,
    "passages": passages_jsonl,
}


def convert(fmt: str, path: str) -> Iterator[dict]:
    _open_check(path)
    reader = QUESTION_FORMATS.get(fmt) or CORPUS_FORMATS[fmt]
    try:
        yield from reader(path)
    except (KeyError, TypeError, ValueError) as err:
        if isinstance(err, InputError):
            raise
        raise InputError(f"{path} does not look like {fmt} data ({type(err).__name__}: {err}); "
                         f"check the format name") from None


def _need(item, keys, n, what) -> None:
    if not isinstance(item, dict):
        raise InputError(f"{what} entry {n}: expected an object, got {type(item).__name__}")
    missing = [k for k in keys if k not in item]
    if missing:
        raise InputError(f"{what} entry {n} (id {item.get('id', '?')}): missing {', '.join(missing)}; "
                         f"is this really {what} data?")


__all__ = ["convert", "iter_corpus", "QUESTION_FORMATS", "CORPUS_FORMATS"]
