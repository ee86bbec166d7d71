"""Rerank stage: score (query, passage) pairs with a cross-encoder, keep the top K.

Pairs from every record of a batch go through the model together, so short records do not
leave the model's batches half empty.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable

from .. import records as schema
from ..config import RunConfig
from ..models.roles import role
from ..records import PASSAGES, require, set_meta
from ..registry import option

RUN_RETRIEVE = "run `cq retrieve` first (cq retrieve --index IDX | cq rerank)"
DEFAULT_RERANKER = role("reranker").default


@dataclass(frozen=True)
class RerankSettings:
    """cq rerank's own settings: its flags and :func:`build`'s defaults both come from here."""

    top: int = option(10, "Passages kept per record after reranking.", min=1)
    query_field: str = option("question", "Record key holding the query (e.g. a revised question).")


def passage_text(passage: dict) -> str:
    """What the cross-encoder reads for a passage: its title, a newline, then its whole text."""
    return schema.passage_text(passage, sep="\n")


def rerank_lists(cross_encoder, queries: list[str], lists: list[list[dict]], top: int | None,
                 batch_size: int = RunConfig.model_batch_size) -> list[list[dict]]:
    """Each passage list reranked for its query: copies with ``rerank_score`` added, ordered by
    (-score, id), cut to ``top`` and ranked from 1. One model call for all lists."""
    pairs = [(q, passage_text(p)) for q, passages in zip(queries, lists) for p in passages]
    scores = iter(cross_encoder.predict(pairs, batch_size=batch_size) if pairs else [])
    out = []
    for passages in lists:
        scored = [{**p, "rerank_score": next(scores)} for p in passages]
        scored.sort(key=lambda p: (-p["rerank_score"], str(p["id"])))
        scored = scored[:top] if top else scored
        for n, p in enumerate(scored, start=1):
            p["rank"] = n
        out.append(scored)
    return out


def rerank_batch(records: list[dict], cross_encoder, top: int | None, query_field: str, batch_size: int,
                 info: dict) -> list[dict]:
    lists = [list(require(r, PASSAGES, RUN_RETRIEVE)) for r in records]
    queries = [str(require(r, query_field, "pass --query-field with a key the records have")) for r in records]
    for record, passages in zip(records, rerank_lists(cross_encoder, queries, lists, top, batch_size)):
        record[PASSAGES] = passages
        set_meta(record, "rerank", info)
    return records


def build(model: str = DEFAULT_RERANKER, top: int | None = RerankSettings.top,
          query_field: str = RerankSettings.query_field, batch_size: int = RunConfig.model_batch_size,
          device: str = RunConfig.device, config=None, **_) -> Callable[[list[dict]], list[dict]]:
    """The rerank stage as a batch function (records -> records); ``batch_size`` counts pairs; the model loads
    under the run configuration ``config`` (None: one from the environment)."""
    from ..models.load import load_cross_encoder

    encoder = load_cross_encoder(model, device, config)
    info = {**encoder.info, "top": top, "query_field": query_field}
    return functools.partial(rerank_batch, cross_encoder=encoder, top=top, query_field=query_field,
                             batch_size=batch_size, info=info)
