"""Readers for the public data formats, turning them into cq records (questions) or
passages ({id, title, text}), and the TREC run writer. Used by ``cq convert``, ``cq index`` and
``cq retrieve --run``. Every file may be gzipped (recognised by its magic bytes)."""
from __future__ import annotations

import csv
import os
import zlib
from typing import Callable, Iterator

import orjson

from ..errors import InputError, ResourceError
from ..jsonl import AtomicFile, GzipDamaged, load_json_or_jsonl, open_input
from ..records import gold_from_annotations

# AmbigNQ full-format fields that are annotation by-products: gold, never system input.
_AMBIGNQ_EXTRA = ("nq_answer", "nq_doc_title", "viewed_doc_titles", "used_queries")


def corpus_file(path: str) -> None:
    """Refuse a --corpus that is not a regular file, naming what it is: cq index and cq encode read a corpus more
    than once (its size, BM25 and the dense pass), which a pipe or FIFO (``<(zcat x)``) cannot give."""
    import stat

    try:
        mode = os.stat(path).st_mode
    except OSError:
        raise ResourceError(f"corpus {path} not found; pass a JSONL or DPR .tsv file of passages") from None
    if not stat.S_ISREG(mode):
        what = "a pipe or FIFO" if stat.S_ISFIFO(mode) else "a directory" if stat.S_ISDIR(mode) else "not a file"
        raise ResourceError(f"corpus {path} is {what}: the corpus is read more than once, so write it to a file "
                            f"first (e.g. zcat x.gz > passages.jsonl; a .gz file is read as it is)")


def _open_check(path: str) -> None:
    if not os.path.exists(path):
        raise ResourceError(f"file not found: {path}")


def ambignq(path: str) -> Iterator[dict]:
    """AmbigNQ light or full format (a JSON list); full-format extras go under gold."""
    for n, item in enumerate(load_json_or_jsonl(path)):
        need(item, ("id", "question", "annotations"), n, "AmbigNQ")
        gold = gold_from_annotations(item["annotations"])
        gold.update({k: item[k] for k in _AMBIGNQ_EXTRA if k in item})
        yield {"id": str(item["id"]), "question": item["question"], "gold": gold}


def cambignq(path: str) -> Iterator[dict]:
    """CAmbigNQ (cq_train.json / cq_dev.json): dqs, clarification_answers, clarification_question."""
    for n, item in enumerate(load_json_or_jsonl(path)):
        need(item, ("id", "question", "dqs", "clarification_answers", "clarification_question"), n, "CAmbigNQ")
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
        need(item, ("question", "qa_pairs", "annotations"), n, "ASQA")
        yield {"id": str(sample_id), "question": item.get("ambiguous_question", item["question"]), "gold": asqa_gold(item)}


def asqa_gold(item: dict) -> dict:
    """The gold of one ASQA entry (``qa_pairs`` and ``annotations``; ALCE's ASQA file has them too)."""
    dqs = [{"question": p["question"], "answers": list(p["short_answers"])} for p in item["qa_pairs"]]
    annotation = (
        {"type": "multipleQAs", "qaPairs": [{"question": d["question"], "answer": d["answers"]} for d in dqs]}
        if len(dqs) > 1 else {"type": "singleAnswer", "answer": dqs[0]["answers"] if dqs else []}
    )
    return {
        "ambiguous": len(dqs) > 1,
        "annotations": [annotation],
        "answers": [d["answers"] for d in dqs],
        "dqs": dqs,
        "long_answers": [a["long_answer"] for a in item["annotations"]],
        "knowledge": [k for a in item["annotations"] for k in a.get("knowledge", [])],
    }


def _asqa_items(path):
    with open_input(path) as fh:
        try:
            data = orjson.loads(fh.read())
        except orjson.JSONDecodeError as err:
            raise InputError(f"not valid JSON ({err}); ASQA is one JSON file", where=path) from None
    if isinstance(data, list):
        for item in data:
            need(item, ("id",), 0, "ASQA")
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
        need(item, ("question", "answer"), n, "NQ-open")
        answers = list(item["answer"])
        gold = {
            "ambiguous": None,
            "annotations": [{"type": "singleAnswer", "answer": answers}],
            "answers": [answers],
            "dqs": [],
        }
        yield {"id": str(item.get("id", f"nq-{n}")), "question": item["question"], "gold": gold}


def dpr_tsv(path: str) -> Iterator[dict]:
    """DPR's psgs_w100.tsv (or .tsv.gz): header ``id text title``, tab separated, csv quoting."""
    lines = _TextLines(path)
    reader = csv.reader((line for _, line in lines), delimiter="\t")
    try:
        header = next(reader, None)
        if header is None:
            return
        if [h.strip().lower() for h in header[:3]] != ["id", "text", "title"]:
            raise InputError(f"{path}: expected a DPR header 'id<TAB>text<TAB>title', got {header[:3]}")
        for row in reader:
            if not row:
                raise InputError(f"{path} line {lines.lineno}: an empty line; DPR tsv has one passage a line: remove "
                                 f"empty lines")
            if len(row) < 3:
                raise InputError(f"{path} line {lines.lineno}: expected 3 tab-separated fields, got {len(row)}")
            yield {"id": row[0], "title": row[2], "text": row[1]}
    except csv.Error as err:
        raise InputError(f"{path} line {lines.lineno}: not DPR tsv ({err})") from None


def topics(path: str) -> Iterator[dict]:
    """Anserini/Pyserini topic TSV: ``qid<TAB>query`` per line (further fields are ignored, as
    Anserini's TsvTopicReader does); records ``{id, question}`` without gold."""
    lines = _TextLines(path)
    for lineno, line in lines:
        line = line.rstrip("\r\n")
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) < 2 or not fields[0].strip() or not fields[1].strip():
            raise InputError(f"expected 'qid<TAB>query', got {line[:60]!r}: a topics file has one "
                             f"tab-separated qid and query per line", where=f"{path} line {lineno}")
        yield {"id": fields[0].strip(), "question": fields[1].strip()}


class _TextLines:
    """A text file's lines (gzip or not, UTF-8) with exact line numbers in errors: a byte that is not
    UTF-8, or a gzip file cut short, names its line instead of raising a raw traceback."""

    def __init__(self, path: str):
        self.path = path
        self.lineno = 0

    def __iter__(self) -> Iterator[tuple[int, str]]:
        with open_input(self.path) as fh:
            raw_lines = iter(fh)
            while True:
                try:
                    raw = next(raw_lines)
                except StopIteration:
                    return
                except (EOFError, OSError, zlib.error, GzipDamaged) as err:
                    raise InputError(f"{self.path} line {self.lineno + 1}: the file is cut short or damaged "
                                     f"({getattr(err, 'reason', err)}); fix or re-download it") from None
                self.lineno += 1
                try:
                    yield self.lineno, raw.decode("utf-8")
                except UnicodeDecodeError as err:
                    raise InputError(f"{self.path} line {self.lineno}: not UTF-8 text ({err.reason} at byte "
                                     f"{err.start}); compressed other than by gzip? decompress it first, or "
                                     f"convert it to UTF-8") from None


def passages_jsonl(path: str) -> Iterator[dict]:
    """JSONL (or JSON list) passages: {id, title, text} (``contents`` accepted for text)."""
    for n, item in enumerate(load_json_or_jsonl(path, what="passage"), start=1):
        if "text" not in item and "contents" in item:
            item = {**item, "text": item["contents"]}
        need(item, ("id", "text"), n, "passage")
        yield {"id": str(item["id"]), "title": item.get("title", ""), "text": item["text"]}


def estimate_passages(path: str, sample: int = 1 << 20) -> int | None:
    """About how many passages (lines) the corpus file at ``path`` holds, for a progress estimate: its size
    over the bytes a line takes in its first MiB (for gzip, compressed bytes: the ratio there is assumed
    throughout). Exact when the file is shorter than that; None when it cannot be told (a pipe)."""
    from ..jsonl import open_input

    try:
        size = os.path.getsize(path)
        with open_input(path) as fh:
            head = fh.read(sample)
            raw = getattr(fh, "fileobj", None)  # gzip: the compressed file under it
            used = raw.tell() if raw is not None else len(head)
            rest = fh.read(1)
    except (OSError, EOFError):
        return None
    lines = head.count(b"\n") + (1 if head and not head.endswith(b"\n") else 0)
    if not rest:
        return lines
    return int(lines * size / used) if lines and used else None


def iter_corpus(path: str) -> Iterator[dict]:
    """Passages from a DPR tsv or a JSONL file (either gzipped), chosen by extension."""
    _open_check(path)
    reader = dpr_tsv if path.endswith((".tsv", ".tsv.gz")) else passages_jsonl
    return reader(path)


QUESTION_FORMATS: dict[str, Callable[[str], Iterator[dict]]] = {
    "ambignq": ambignq,
    "cambignq": cambignq,
    "asqa": asqa,
    "nq-open": nq_open,
    "topics": topics,
}
CORPUS_FORMATS: dict[str, Callable[[str], Iterator[dict]]] = {
    "dpr": dpr_tsv,
    "passages": passages_jsonl,
}


DESCRIPTIONS = {
    "ambignq": "AmbigNQ light or full (dev_light.json, dev.json with used_queries)",
    "cambignq": "CAmbigNQ cq_train.json / cq_dev.json",
    "asqa": "ASQA (a list with ids, or {\"dev\": {id: ...}})",
    "nq-open": "NQ-open jsonl {\"question\", \"answer\": [...]}",
    "topics": "Anserini/Pyserini topic TSV: qid<TAB>query per line (no gold)",
    "dpr": "DPR psgs_w100.tsv (id, text, title)",
    "passages": "JSONL {id, title, text}",
}


def convert(fmt: str, path: str) -> Iterator[dict]:
    """Records of ``path`` in format ``fmt`` (a FORMATS registry name: cq's own, or a plugin's)."""
    from ..registry import FORMATS

    method = FORMATS.get(fmt)
    _open_check(path)
    try:
        yield from method.build(None, path=path)
    except (KeyError, TypeError, ValueError) as err:
        if isinstance(err, InputError):
            raise
        raise InputError(f"{path} does not look like {fmt} data ({type(err).__name__}: {err}); "
                         f"check the format name") from None


class TrecRun:
    """``cq retrieve --run FILE``: the standard TREC run ``qid Q0 docid rank score tag``, one line per
    passage in the order, with the ranks and the very scores (same digits), of the JSONL records;
    written all or nothing like ``-o`` (gzip for ``.gz``). A record set aside under ``--on-error skip``
    (``errors.<stage>``) gets no lines: it was not retrieved for."""

    def __init__(self, path: str, tag: str, stage: str = "retrieve"):
        _trec_token(tag, "--run-tag")
        self.path, self.tag, self.stage = path, tag, stage
        self.out: AtomicFile | None = None  # opened on first use: a run refused at its start leaves nothing

    def write(self, records: list[dict]) -> None:
        lines = []
        for record in records:
            errors = record.get("errors")
            if isinstance(errors, dict) and self.stage in errors:
                continue
            qid = _trec_token(record["id"], "record id")
            for n, passage in enumerate(record.get("passages") or []):
                docid = _trec_token(str(passage.get("id")), "passage id", qid)
                if passage.get("score") is None:
                    raise InputError(f"passage {docid} of record {qid} has no score; a TREC run needs one",
                                     record_id=qid)
                score = orjson.dumps(passage["score"], option=orjson.OPT_SERIALIZE_NUMPY).decode()
                lines.append(f"{qid} Q0 {docid} {passage.get('rank', n + 1)} {score} {self.tag}\n")
        self._file().write("".join(lines).encode())

    def _file(self) -> AtomicFile:
        if self.out is None:
            self.out = AtomicFile(self.path)
        return self.out

    def commit(self) -> None:
        self._file().commit()

    def abort(self) -> None:
        if self.out is not None:
            self.out.abort()


def _trec_token(value: str, what: str, qid: str | None = None) -> str:
    if not value or any(c.isspace() for c in value):
        where = f" (record {qid})" if qid else ""
        raise InputError(f"{what} {value!r}{where} is empty or holds whitespace, which a TREC run cannot hold; "
                         f"use ids without spaces, or leave out --run", record_id=qid)
    return value


def need(item, keys, n, what) -> None:
    """Raise an InputError naming entry ``n`` when ``item`` is not an object holding ``keys``."""
    if not isinstance(item, dict):
        raise InputError(f"{what} entry {n}: expected an object, got {type(item).__name__}")
    missing = [k for k in keys if k not in item]
    if missing:
        raise InputError(f"{what} entry {n} (id {item.get('id', '?')}): missing {', '.join(missing)}; "
                         f"is this really {what} data?")


__all__ = ["convert", "iter_corpus", "QUESTION_FORMATS", "CORPUS_FORMATS", "TrecRun", "topics"]
