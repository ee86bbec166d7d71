"""The files of ``cq data get`` (cqtools/data.py): checksums (SHA-256, git blob ids), atomic writes, and what is
derived from or checked in a data set's source file."""
from __future__ import annotations

import hashlib
import os

import orjson

from ..errors import InputError

CHUNK = 1 << 20


def sha256_of(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def git_blob_of(path: str) -> str:
    """The file's git blob id: SHA-1 of "blob <size>\\0" and its bytes (what ``git hash-object`` prints)."""
    digest = hashlib.sha1(f"blob {os.path.getsize(path)}\0".encode())
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def nq_open_dev(directory: str) -> list[str]:
    """nq_open/dev.jsonl ({"question", "answer": [...]}, one per line) from the archive's dev.json list."""
    target = os.path.join(directory, "dev.jsonl")
    source = os.path.join(directory, "dev.json")
    if not os.path.exists(source):
        return []  # the archive held dev.jsonl itself
    with open(source, "rb") as fh:
        try:
            items = orjson.loads(fh.read())
        except orjson.JSONDecodeError as err:
            raise InputError(f"{source}: not valid JSON ({err}); delete it and run cq data get nq-open again") from None
    if not isinstance(items, list):
        raise InputError(f"{source}: expected a JSON list of {{question, answer}} objects")
    with Atomic(target) as out:
        for n, item in enumerate(items):
            if not isinstance(item, dict) or "question" not in item or "answer" not in item:
                raise InputError(f"{source} item {n}: expected {{question, answer}}")
            record = {"question": item["question"], "answer": list(item["answer"])}
            if "id" in item:
                record["id"] = str(item["id"])
            out.write(orjson.dumps(record) + b"\n")
    return ["dev.jsonl"]


def asqa_dev(directory: str) -> list[str]:
    """asqa/dev.json: ASQA.json's dev split as a list with ids, the shape ``cq convert asqa`` reads."""
    source = os.path.join(directory, "ASQA.json")
    with open(source, "rb") as fh:
        try:
            data = orjson.loads(fh.read())
        except orjson.JSONDecodeError as err:
            raise InputError(f"{source}: not valid JSON ({err}); delete it and run cq data get asqa again") from None
    if not isinstance(data, dict) or not isinstance(data.get("dev"), dict):
        raise InputError(f"{source}: expected ASQA's {{\"train\": {{id: ...}}, \"dev\": {{id: ...}}}} layout")
    with Atomic(os.path.join(directory, "dev.json")) as out:
        out.write(orjson.dumps([{"id": str(k), **v} for k, v in data["dev"].items()]))
    return ["dev.json"]


def dpr_tsv_gz(path: str) -> None:
    """DPR's psgs_w100.tsv.gz: gzip whose first line is DPR's header and whose stream runs whole to its
    end (an HTML error page, or a download cut short, is refused: not recorded as the corpus)."""
    import gzip
    import zlib

    name = os.path.basename(path)
    with open(path, "rb") as fh:
        if fh.read(2) != b"\x1f\x8b":
            raise InputError(f"{name} is not gzip (an HTML page or an error message instead of the file?)")
    try:
        with gzip.open(path, "rb") as fh:
            head = fh.readline(1 << 16).rstrip(b"\r\n")
            if head != b"id\ttext\ttitle":
                raise InputError(f"{name} does not start with DPR's header line 'id<TAB>text<TAB>title' "
                                 f"(it starts {head[:40]!r})")
            while fh.read(CHUNK):  # to the end: a cut stream fails here, the CRC and length are checked there
                pass
    except (EOFError, OSError, zlib.error) as err:
        raise InputError(f"{name} is cut short or damaged ({err})") from None


class Atomic:
    """A binary file written to ``path.part-PID`` and renamed over ``path`` when the block ends well."""

    def __init__(self, path: str):
        self.path = path
        self.part = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.part-{os.getpid()}")

    def __enter__(self):
        os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
        self.fh = open(self.part, "wb")
        return self.fh

    def __exit__(self, kind, value, tb):
        self.fh.close()
        if kind is None:
            os.replace(self.part, self.path)
        else:
            remove(self.part)
        return False


def remove(path: str) -> None:
    try:
        os.remove(path)
    except FileNotFoundError:
        pass
