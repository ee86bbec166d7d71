"""Readers for the ambiguity benchmarks beside AmbigNQ and ASQA (issue 46): AmbigDocs, CondAmbigQA, CLAMBER,
ALCE's ASQA and AMBIGNQ-CQ, each in the layout its authors publish, into cq records (``cq convert NAME``).

What a data set annotates goes under ``gold`` (docs/schema.md); what it hands a system as input (ALCE's and
CondAmbigQA's retrieved passages) goes under ``passages``, in the published order, so ALCE's citation ``[i]``
is ``passages[i-1]``. A field cq does not use is named once on stderr, never dropped in silence. A bad entry
stops the conversion with a one-line error naming its line (JSONL, CSV) or entry (a JSON list)."""
from __future__ import annotations

import csv
import io
import logging
import re
from typing import Iterator

import orjson

from ..errors import InputError
from ..jsonl import open_input, open_peeked
from .formats import asqa_gold

log = logging.getLogger("cqtools")

# CLAMBER's README: category and subclass codes with the names its taxonomy gives them.
CLAMBER_CATEGORIES = {"FD": "Epistemic Misalignment", "MC": "Aleatoric Output", "LA": "Linguistic Ambiguity"}
CLAMBER_SUBCLASSES = {"whom": "WHOM", "what": "WHAT", "when": "WHEN", "where": "WHERE", "NK": "UNFAMILIAR",
                      "ICL": "CONTRADICTION", "co-reference": "SEMANTIC", "polysemy": "LEXICAL", "none": None}


_DOC_USED = {"id", "title", "text", "score"}  # what a data set's passage keeps (passages_of)


class Unused:
    """One stderr line per field of a data set that cq does not use (the first time it is seen)."""

    def __init__(self, fmt: str):
        self.fmt, self.seen = fmt, set()

    def note(self, fields, why: str) -> None:
        new = [name for name in fields if name not in self.seen]
        if new:
            self.seen.update(new)
            log.warning("convert %s: %s %s not used: %s", self.fmt, "field" if len(new) == 1 else "fields",
                        ", ".join(new), why)


def entries(path: str, what: str) -> Iterator[tuple[str, object]]:
    """(where, item) for each entry of a JSON list ("PATH entry N") or a JSONL file ("PATH line N"; a file
    whose first character is not ``[``)."""
    with open_peeked(path) as (head, fh):
        if head.lstrip().startswith(b"["):
            try:
                data = orjson.loads(fh.read())
            except orjson.JSONDecodeError as err:
                raise InputError(f"not valid JSON ({err}); {what} is a JSON list or JSONL", where=path) from None
            for n, item in enumerate(data, 1):
                yield f"{path} entry {n}", item
            return
        for lineno, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            try:
                yield f"{path} line {lineno}", orjson.loads(raw)
            except orjson.JSONDecodeError as err:
                raise InputError(f"not valid JSON ({err}); {what} has one JSON object a line: fix or remove the "
                                 f"line", where=f"{path} line {lineno}") from None


def need(item, keys, where: str, what: str) -> dict:
    if not isinstance(item, dict):
        raise InputError(f"expected a {what} object, got {type(item).__name__}; is this {what} data?", where=where)
    missing = [k for k in keys if k not in item]
    if missing:
        ident = next((str(item[k]) for k in ("id", "qid", "sample_id") if k in item), None)
        raise InputError(f"{what} entry{f' {ident}' if ident else ''} lacks {', '.join(missing)}; is this "
                         f"{what} data?", where=where, record_id=ident)
    return item


def _list_of_objects(value, keys, where: str, what: str, field: str) -> list[dict]:
    if not isinstance(value, list):
        raise InputError(f"{what} field {field!r} must be a list, got {type(value).__name__}", where=where)
    return [need(v, keys, f"{where} {field}[{i}]", what) for i, v in enumerate(value)]


def passages_of(docs: list[dict], prefix: str) -> list[dict]:
    """A data set's retrieved documents as cq passages, ranked in the given order (an id made from the
    record's id and the rank where the document has none)."""
    out = []
    for rank, doc in enumerate(docs, 1):
        passage = {"id": str(doc.get("id") or f"{prefix}#{rank}"), "title": doc.get("title", ""), "text": doc["text"]}
        if doc.get("score") is not None:
            passage["score"] = doc["score"]
        out.append({**passage, "rank": rank})
    return out


def ambigdocs(path: str) -> Iterator[dict]:
    """AmbigDocs (lilys012/AmbigDocs): {qid, question, ambiguous_entity, documents: [{title (the disambiguated
    entity), text, pid (a psgs_w100 id), answer}]}; ALCE-style retrieval output adds ``docs`` (passages)."""
    unused = Unused("ambigdocs")
    for where, item in entries(path, "AmbigDocs"):
        need(item, ("qid", "question", "ambiguous_entity", "documents"), where, "AmbigDocs")
        docs = _list_of_objects(item["documents"], ("title", "text", "answer"), where, "AmbigDocs", "documents")
        record = {"id": str(item["qid"]), "question": item["question"], "gold": {
            "ambiguous": len(docs) > 1,
            "ambiguous_entity": item["ambiguous_entity"],
            "entities": [d["title"] for d in docs],
            "answers": [[d["answer"]] for d in docs],
            "documents": [{"id": str(d.get("pid", "")), "title": d["title"], "text": d["text"],
                           "answer": d["answer"]} for d in docs],
        }}
        retrieved = _list_of_objects(item.get("docs", []), ("text",), where, "AmbigDocs", "docs")
        if "docs" in item:
            record["passages"] = passages_of(retrieved, record["id"])
        unused.note(sorted(set(item) - {"qid", "question", "ambiguous_entity", "documents", "docs"}) +
                    sorted({f"documents[].{k}" for d in docs for k in d} - {f"documents[].{k}" for k in
                                                                            ("title", "text", "pid", "answer")}) +
                    sorted({f"docs[].{k}" for d in retrieved for k in d} - {f"docs[].{k}" for k in _DOC_USED}),
                    "not in AmbigDocs' published fields")
        yield record


_CITED = re.compile(r"^\s*(\d+)\.\s*(.*)$", re.S)


def condambigqa(path: str) -> Iterator[dict]:
    """CondAmbigQA (innovation64/CondAmbigQA, mcaqa.json): {id, question, properties: [{condition, groundtruth,
    citations: [{title: "N. Title", text}]}], ctxs: [{title, text, score}]}; a citation's N is the 1-based
    number of the ctx it quotes."""
    unused = Unused("condambigqa")
    for where, item in entries(path, "CondAmbigQA"):
        need(item, ("id", "question", "properties", "ctxs"), where, "CondAmbigQA")
        rid = str(item["id"])
        props = _list_of_objects(item["properties"], ("condition", "groundtruth"), where, "CondAmbigQA",
                                 "properties")
        ctxs = _list_of_objects(item["ctxs"], ("text",), where, "CondAmbigQA", "ctxs")
        passages = passages_of(ctxs, rid)
        conditions = []
        for prop in props:
            cited = []
            for c in _list_of_objects(prop.get("citations", []), ("title", "text"), where, "CondAmbigQA",
                                      "citations"):
                match = _CITED.match(str(c["title"]))
                number = int(match.group(1)) if match else None
                cited.append({"title": match.group(2) if match else c["title"], "text": c["text"],
                              "passage": passages[number - 1]["id"] if number and number <= len(passages) else None})
            extra = {k: v for k, v in prop.items() if k not in ("condition", "groundtruth", "citations")}
            conditions.append({"condition": prop["condition"], "answer": prop["groundtruth"], "citations": cited,
                               **extra})
        unused.note(sorted(set(item) - {"id", "question", "properties", "ctxs"}), "not in CondAmbigQA's fields")
        yield {"id": rid, "question": item["question"], "passages": passages,
               "gold": {"ambiguous": len(conditions) > 1, "conditions": conditions,
                        "answers": [[c["answer"]] for c in conditions]}}


def clamber(path: str) -> Iterator[dict]:
    """CLAMBER (zt991211/CLAMBER, clamber_benchmark.jsonl): one query a line, published as a JSON string that
    holds the object (a plain object line is read too): {question, context, clarifying_question,
    require_clarification (0/1), category, subclass, predict_*}. No ids: a record's id is ``clamber-<line>``."""
    unused = Unused("clamber")
    for where, item in entries(path, "CLAMBER"):
        if isinstance(item, str):
            try:
                item = orjson.loads(item)
            except orjson.JSONDecodeError as err:
                raise InputError(f"a JSON string that does not hold a CLAMBER object ({err})", where=where) from None
        need(item, ("question", "require_clarification", "category", "subclass"), where, "CLAMBER")
        if item["require_clarification"] not in (0, 1, True, False):
            raise InputError(f"require_clarification must be 0 or 1, got {item['require_clarification']!r}",
                             where=where)
        if item["category"] not in CLAMBER_CATEGORIES or item["subclass"] not in CLAMBER_SUBCLASSES:
            raise InputError(f"unknown CLAMBER category/subclass {item['category']!r}/{item['subclass']!r}; "
                             f"known: {', '.join(CLAMBER_CATEGORIES)} / {', '.join(CLAMBER_SUBCLASSES)}",
                             where=where)
        gold = {"ambiguous": bool(item["require_clarification"]), "category": item["category"],
                "subclass": item["subclass"]}
        if item.get("clarifying_question"):
            gold.update(cq=item["clarifying_question"], cq_source="gold")
        record = {"id": str(item.get("id") or f"clamber-{where.rsplit(' ', 1)[-1]}"), "question": item["question"],
                  "gold": gold}
        if item.get("context"):
            unused.note(["context"], "no cq stage reads a context beside the question; prepend it to the "
                                     "question yourself if a run should see it")
        unused.note(sorted(k for k in item if k.startswith("predict_")),
                    "the CLAMBER authors' ChatGPT predictions, not gold")
        unused.note(sorted(set(item) - {"id", "question", "context", "clarifying_question", "require_clarification",
                                        "category", "subclass"} - {k for k in item if k.startswith("predict_")}),
                    "not in CLAMBER's published fields")
        yield record



def alce_asqa(path: str) -> Iterator[dict]:
    """ALCE's ASQA (princeton-nlp/ALCE, data/asqa_eval_*.json): ASQA's {sample_id, question, qa_pairs,
    annotations, wikipages, answer} with ``docs``, the retrieved passages a system reads and cites as [1], [2]..."""
    unused = Unused("alce-asqa")
    for where, item in entries(path, "ALCE-ASQA"):
        need(item, ("sample_id", "question", "qa_pairs", "annotations", "docs"), where, "ALCE-ASQA")
        pairs = _list_of_objects(item["qa_pairs"], ("question", "short_answers"), where, "ALCE-ASQA", "qa_pairs")
        _list_of_objects(item["annotations"], ("long_answer",), where, "ALCE-ASQA", "annotations")
        docs = _list_of_objects(item["docs"], ("title", "text"), where, "ALCE-ASQA", "docs")
        unused.note(sorted({f"qa_pairs[].{k}" for p in pairs for k in p} - {"qa_pairs[].question",
                                                                           "qa_pairs[].short_answers"}),
                    "ASQA's per-pair evidence; gold.dqs keep question and short answers")
        gold = asqa_gold(item)
        if "wikipages" in item:
            gold["wikipages"] = item["wikipages"]
        for field in sorted({k for d in docs for k in d} - _DOC_USED):
            unused.note([f"docs[].{field}"], "ALCE's per-passage annotation or summary; passages keep id, title, "
                                             "text and score")
        unused.note(["answer"] if "answer" in item else [], "ALCE's MAUVE reference; cq scores ROUGE-L against "
                                                            "the annotations' long answers (gold.long_answers)")
        unused.note(sorted(set(item) - {"sample_id", "question", "qa_pairs", "annotations", "docs", "wikipages",
                                        "answer"}), "not in ALCE's ASQA fields")
        yield {"id": str(item["sample_id"]), "question": item["question"],
               "passages": passages_of(docs, str(item["sample_id"])), "gold": gold}


# AMBIGNQ-CQ's CSV header could not be read where this was written (the repository's CSV blobs were absent
# from the fetched copy; `cq data get ambignq-cq` pins the file by its git blob id), so the column names
# below are cq's reading of the paper's description, not verified. A header is matched with case, spaces and
# hyphens ignored; an id joins the CQ to AmbigNQ's record (--join), and a file with other names is refused
# in one line that names its header and the names cq takes.
AMBIGNQ_CQ_COLUMNS = {"id": ("id", "qid", "question_id", "example_id", "ambignq_id"),
                      "question": ("question", "ambiguous_question", "original_question", "query", "q"),
                      "cq": ("clarifying_question", "cq", "clarification_question", "clarifying_questions",
                             "generated_cq", "generated_clarifying_question", "gpt3_cq")}


def _column_name(name: str) -> str:
    return re.sub(r"[^0-9a-z]+", "_", name.strip().lower()).strip("_")


def ambignq_cq(path: str) -> Iterator[dict]:
    """AMBIGNQ-CQ (emnlppaper4012/AMBIGNQ-CQ, data/dev.csv, test.csv, train.csv): AmbigNQ questions with a GPT-3
    clarifying question; gold.cq_source says so. Join onto AmbigNQ: ``--join ambignq-cq:dev.csv``."""
    unused = Unused("ambignq-cq")
    with open_input(path) as fh:
        text = io.TextIOWrapper(fh, encoding="utf-8-sig", newline="")
        reader = csv.reader(text)
        header = next(reader, None) or []
        names = [_column_name(h) for h in header]
        cols = {role: next((names.index(n) for n in aliases if n in names), None)
                for role, aliases in AMBIGNQ_CQ_COLUMNS.items()}
        if (cols["id"] is None and cols["question"] is None) or cols["cq"] is None:
            raise InputError(f"expected a CSV header with an id column ({', '.join(AMBIGNQ_CQ_COLUMNS['id'])}) or "
                             f"a question column ({', '.join(AMBIGNQ_CQ_COLUMNS['question'])}), and a "
                             f"clarifying-question column ({', '.join(AMBIGNQ_CQ_COLUMNS['cq'])}), got {header[:8]}: "
                             "rename those columns in the header line", where=f"{path} line 1")
        unused.note([h for i, h in enumerate(header) if i not in cols.values()],
                    "AmbigNQ's own fields come from `cq convert ambignq` (join this file onto it)")
        yield from _cq_rows(path, reader, header, cols)


def _cq_rows(path, reader, header, cols) -> Iterator[dict]:
    try:
        for row in reader:
            lineno = reader.line_num
            if not any(cell.strip() for cell in row):
                continue
            if len(row) != len(header):
                raise InputError(f"{len(row)} fields where the header has {len(header)}: fix the quoting of the "
                                 f"line", where=f"{path} line {lineno}")
            gold = {"ambiguous": True, "cq": row[cols["cq"]], "cq_source": "ambignq-cq (GPT-3)"}
            if cols["id"] is None:  # no AmbigNQ id: named by its line, joined onto AmbigNQ by its question
                record = {"id": f"ambignq-cq:{lineno}", "gold": {**gold, "join_on": "question"}}
            else:
                record = {"id": row[cols["id"]], "gold": gold}
            if cols["question"] is not None:
                record["question"] = row[cols["question"]]
            yield record
    except (csv.Error, UnicodeDecodeError) as err:
        raise InputError(f"not UTF-8 CSV ({err}); fix the line", where=f"{path} line {reader.line_num + 1}") from None


FORMATS = {"ambigdocs": ambigdocs, "condambigqa": condambigqa, "clamber": clamber, "alce-asqa": alce_asqa,
           "ambignq-cq": ambignq_cq}
DESCRIPTIONS = {
    "ambigdocs": "AmbigDocs test.json {qid, question, ambiguous_entity, documents}",
    "condambigqa": "CondAmbigQA mcaqa.json {id, question, properties (conditions), ctxs}",
    "clamber": "CLAMBER clamber_benchmark.jsonl (taxonomy label, CQ)",
    "alce-asqa": "ALCE's ASQA with retrieved docs (asqa_eval_gtr_top100.json)",
    "ambignq-cq": "AMBIGNQ-CQ CSV (id, clarifying question): --join onto ambignq",
}
