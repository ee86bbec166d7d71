"""Retrieval stage: add ranked passages ``{id, title, text, score, rank}`` to each record."""
from __future__ import annotations

from ..records import PASSAGES, require, set_meta


def retrieve_batch(records: list[dict], searcher, k: int, threads: int, query_field: str, info: dict) -> list[dict]:
    queries = [str(require(r, query_field, f"pass --query-field with a key the records have")) for r in records]
    ids = [f"{n}" for n in range(len(records))]  # positions: record ids need not be unique
    results = searcher.batch_search(queries, ids, k, threads)
    for n, record in enumerate(records):
        record[PASSAGES] = results[ids[n]]
        set_meta(record, "retrieve", info)
    return records
