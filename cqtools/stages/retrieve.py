"""Retrieval stage: add ranked passages ``{id, title, text, score, rank}`` to each record."""
from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from typing import Callable

from ..records import PASSAGES, require, set_meta
from ..registry import option


@dataclass(frozen=True)
class RetrieveSettings:
    """cq retrieve's own settings (a searcher's options are its method's): the flags and :func:`build`'s
    defaults both come from here."""

    hits: int = option(100, "Passages to keep per question.", min=1)
    threads: int = option(os.cpu_count() or 1, "Search threads per batch: Lucene's Java pool, or the Python threads "
                          "scoring an index's BM25 matrix of 50,000 passages or more (with input read ahead, threads "
                          "- 1 of them score the next batch).", min=1, shown="number of CPUs", shaping=False)
    query_field: str = option("question", "Record key holding the query.")
    run_file: str | None = option(None, "Also write a TREC run (qid Q0 docid rank score tag) to FILE, all or nothing, "
                                        "with the JSONL's ranks and scores (FILE.gz is gzipped). With --shard: that "
                                        "shard's run (shard runs `cat` into one); with --resume: the whole of OUT's "
                                        "run, rewritten at the end.", flag="--run", metavar="FILE", shaping=False)
    run_tag: str | None = option(None, "The TREC run's tag column [default: cq-METHOD].", metavar="TAG",
                                 shaping=False)  # a TREC run is written beside the records, from them


def build(method: str = "bm25", config=None, *, index_dir: str, hits: int = RetrieveSettings.hits,
          threads: int = RetrieveSettings.threads, query_field: str = RetrieveSettings.query_field,
          **options) -> Callable[[list[dict]], list[dict]]:
    """The retrieve stage as a batch function (records -> records) over ``index_dir``; ``options`` are
    the searcher's (its schema in the SEARCHERS registry; a misspelled one is an error); ``hits``, ``threads``
    and ``query_field`` default as `cq retrieve`'s flags do (:class:`RetrieveSettings`)."""
    from ..registry import SEARCHERS
    from .common import described, split_config

    config, options = split_config(config, options, SEARCHERS.get(method))
    searcher = SEARCHERS.build(method, config, index_dir=index_dir, **options)
    index = os.path.abspath(index_dir) if os.path.exists(index_dir) else index_dir  # a path, or a prebuilt name
    info = {"method": method, "index": index, "hits": hits, **getattr(searcher, "params", {})}
    params = {"method": method, "index_dir": index, "hits": hits, "query_field": query_field,
              **SEARCHERS.get(method).values(options)}
    process = functools.partial(retrieve_batch, searcher=searcher, k=hits, threads=threads, query_field=query_field,
                                info=info)
    if hasattr(searcher, "prefetch"):  # the stream engine shows it the next batch early (cqtools/stream)
        process.prefetch = functools.partial(prefetch_batch, searcher=searcher, k=hits, threads=threads,
                                             query_field=query_field)
    return described(process, "retrieve", params)


def _queries(records: list[dict], query_field: str) -> list[str]:
    return [str(require(r, query_field, "pass --query-field with a key the records have")) for r in records]


def prefetch_batch(records: list[dict], searcher, k: int, threads: int, query_field: str) -> None:
    """Let the searcher start on the next batch's queries (a record without the query field: not now;
    retrieve_batch reports it when its turn comes)."""
    if all(query_field in r for r in records):
        searcher.prefetch(_queries(records, query_field), k, threads)


def retrieve_batch(records: list[dict], searcher, k: int, threads: int, query_field: str, info: dict) -> list[dict]:
    queries = _queries(records, query_field)
    ids = [f"{n}" for n in range(len(records))]  # positions: record ids need not be unique
    results = searcher.batch_search(queries, ids, k, threads)
    for n, record in enumerate(records):
        record[PASSAGES] = results[ids[n]]
        set_meta(record, "retrieve", info)
    return records
