"""A run's index: one pass over the file keeps each line's byte offset and a small summary
(:class:`Entry`: id, question, ambiguity, a fingerprint of the predictions); a page reads only the
records it shows, by seeking to their offsets (:meth:`RunIndex.record`). The records' metric
contributions take longer (partial matching: about 15 times the scan) and are filled in a second
pass (:meth:`RunIndex.fill_metrics`, a background thread of the server), so a page opens at once and
says how many are computed yet."""
from __future__ import annotations

import logging
import os
import zlib
from dataclasses import dataclass

import orjson

from ..errors import CQError, InputError
from ..outputs import GZIP_MAGIC
from .metrics import METRICS, answer_texts, contributions, cq_text, predicted_ambiguous

log = logging.getLogger("cqtools")
QUESTION_CHARS = 300  # of the question kept for the list and its search


@dataclass(frozen=True)
class Entry:
    id: str
    question: str
    predicted: bool | None  # ambiguity.label
    gold: bool | None       # gold.ambiguous
    fingerprint: int        # crc32 of the predictions (ambiguity label, cq, answers, dqs): runs differ where it does
    has_cq: bool
    has_dqs: bool


def entry_of(record: dict) -> Entry:
    gold = record.get("gold") if isinstance(record.get("gold"), dict) else {}
    dqs = record.get("dqs") if isinstance(record.get("dqs"), list) else []
    gold_dqs = gold.get("dqs") if isinstance(gold.get("dqs"), list) else []
    predictions = [predicted_ambiguous(record), cq_text(record), answer_texts(record), dqs]
    return Entry(id=str(record["id"]), question=str(record.get("question") or "")[:QUESTION_CHARS],
                 predicted=predicted_ambiguous(record),
                 gold=gold.get("ambiguous") if isinstance(gold.get("ambiguous"), bool) else None,
                 fingerprint=zlib.crc32(orjson.dumps(predictions, option=orjson.OPT_SORT_KEYS)),
                 has_cq=bool(cq_text(record)), has_dqs=bool(dqs or gold_dqs))


class RunIndex:
    """The records of one JSONL file, indexed by position; ``position[id]`` finds one by id."""

    def __init__(self, path: str):
        self.path = path
        self.name = os.path.basename(path)
        self.offsets: list[int] = []
        self.entries: list[Entry] = []
        self.position: dict[str, int] = {}
        self._scan()
        self.metrics: list[dict | None] = [None] * len(self.entries)  # filled by fill_metrics
        self.metrics_done = 0

    def _scan(self) -> None:
        try:
            fh = open(self.path, "rb")
        except OSError as err:
            raise InputError(f"cannot read it ({err.strerror}); pass a readable JSONL file", where=self.path) from None
        with fh:
            if fh.read(2) == GZIP_MAGIC:
                raise InputError("is gzipped; cq view seeks to records by byte offset: gunzip it first",
                                 where=self.path)
            fh.seek(0)
            offset = 0
            for lineno, raw in enumerate(fh, start=1):
                if raw.strip():
                    self._add(raw, offset, lineno)
                offset += len(raw)

    def _add(self, raw: bytes, offset: int, lineno: int) -> None:
        try:
            record = orjson.loads(raw)
        except orjson.JSONDecodeError as err:
            raise InputError(f"not JSON ({err.msg}); fix or remove that line",
                             where=f"{self.path} line {lineno}") from None
        if not isinstance(record, dict):
            raise InputError("not a JSON object; each line must be one record", where=f"{self.path} line {lineno}")
        record.setdefault("id", str(lineno))
        entry = entry_of(record)
        if entry.id in self.position:
            first = self.offsets[self.position[entry.id]]
            raise InputError(f"record id {entry.id!r} again (first at byte {first}); ids must be unique in a run",
                             where=f"{self.path} line {lineno}", record_id=entry.id)
        self.position[entry.id] = len(self.entries)
        self.offsets.append(offset)
        self.entries.append(entry)

    def __len__(self) -> int:
        return len(self.entries)

    def record(self, i: int) -> dict:
        """The record at position ``i``, read from the file now."""
        with open(self.path, "rb") as fh:
            fh.seek(self.offsets[i])
            record = orjson.loads(fh.readline())
        record.setdefault("id", self.entries[i].id)
        return record

    def fill_metrics(self) -> None:
        """Each record's metric contributions (:func:`.metrics.contributions`), in file order."""
        failed = 0
        with open(self.path, "rb") as fh:
            for i, offset in enumerate(self.offsets):
                fh.seek(offset)
                try:
                    self.metrics[i] = contributions(orjson.loads(fh.readline()))
                except (CQError, TypeError, ValueError, KeyError, AttributeError) as err:
                    # a malformed gold or prediction: this record shows no metric, the others still do
                    self.metrics[i] = {}
                    if not failed:
                        log.warning("view: %s: record %s: no metrics (%s); cq score says more", self.name,
                                    self.entries[i].id, err)
                    failed += 1
                self.metrics_done = i + 1
        if failed > 1:
            log.warning("view: %s: %d records without metrics (malformed gold or predictions)", self.name, failed)

    def metric_names(self) -> list[str]:
        """The metrics some record of the run has (so far)."""
        seen = set()
        for values in self.metrics[:self.metrics_done]:
            seen.update(values)
            if len(seen) == len(METRICS):
                break
        return [m for m in METRICS if m in seen]
