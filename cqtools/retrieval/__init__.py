"""Retrieval backends (Pyserini BM25, faiss dense, hybrid) behind one searcher shape:
``search(query, k)`` and ``batch_search(queries, ids, k, threads)`` returning ranked hits
(cqtools.protocols.Searcher). Methods live in the SEARCHERS registry; plugins add more.

A searcher is composed from an index's parts (:mod:`.parts`: bm25, its BM25 matrix, dense, a plugin's):
``bm25`` and ``dense`` search one part, ``hybrid`` fuses two, and every other searchable part registered
is a method of its own name.

``index_dir`` is a ``cq index`` directory, a plain Pyserini Lucene index, or the name of one of
Pyserini's prebuilt indexes (``wikipedia-dpr-100w``, ``wikipedia-dpr-100w.dpr-multi``: see
:mod:`.prebuilt`)."""
from __future__ import annotations

import dataclasses

from ..errors import InputError


def open_searcher(index_dir: str, method: str = "bm25", config=None, **options):
    """The searcher for ``method`` over an index directory (options: see each method's factory), its query
    encoder loaded under ``config`` (None: one from the environment)."""
    from ..registry import SEARCHERS

    return SEARCHERS.build(method, config, index_dir=index_dir, **options)


def hybrid_searcher(options, config, *, index_dir: str, **context):
    """Two parts (``options.parts``, default bm25,dense) fused, each opened with its own of ``options``."""
    from .hybrid import DEFAULT_PAIR

    parts = tuple(options.parts.split(",")) if options.parts else DEFAULT_PAIR
    return compose(index_dir, parts, options, config)


def part_searcher(name: str, options, config, *, index_dir: str, **context):
    """The index part ``name`` searched alone (``cq retrieve --method NAME``) with its search options: bm25's
    (:class:`.options.Bm25Options`), dense's (:class:`.options.DenseOptions`: the query encoder, by default the
    one recorded in the index, or for a prebuilt DPR index the one Pyserini's DPR runs use), a plugin part's."""
    return compose(index_dir, (name,), options, config)


def compose(index_dir: str, parts: tuple[str, ...], options, config):
    """One searchable part of the index, or two fused by ``options.fusion``; ``options``: the method's, which
    the parts read what they use from (k1, b, bm25_scorer, encoder)."""
    from . import prebuilt
    from .hybrid import fuse
    from .parts import open_composed

    _searchable(parts)
    if len(parts) == 2:
        _for_the_parts(options, parts)
    values = dataclasses.asdict(options)
    if prebuilt.looks_like_name(index_dir):
        return prebuilt.open_searcher(index_dir, parts, values, config)

    def searcher(index):
        if len(parts) == 1:
            return index.part(parts[0])
        return fuse([index.part(name) for name in parts], parts, values)

    return open_composed(index_dir, config, values, searcher)


def _for_the_parts(options, parts: tuple[str, ...]) -> None:
    """A hybrid option set to other than its default belongs to the fusion or to one of the two parts fused
    (else a one-line error: it would reach no part)."""
    from ..registry import INDEX_PARTS, schema_of
    from .options import FusionOptions, search_options

    declared = {f.name for f in dataclasses.fields(FusionOptions)}
    for name in parts:
        declared |= {f.name for f in dataclasses.fields(search_options(INDEX_PARTS.get(name).factory))}
    for opt in schema_of(type(options)):
        if opt.name not in declared and getattr(options, opt.name) != opt.default:
            owners = [m.name for m in INDEX_PARTS.methods() if opt.name in
                      {f.name for f in dataclasses.fields(search_options(m.factory))}]
            raise InputError(f"{opt.cli_flag} is an option of index part {' / '.join(owners)}, which --method "
                             f"hybrid --parts {','.join(parts)} does not search; drop it, or fuse that part")


def _searchable(parts: tuple[str, ...]) -> None:
    """Every part named is a registered part that can be searched (a one-line error naming those that can)."""
    from ..registry import INDEX_PARTS

    searchable = [m.name for m in INDEX_PARTS.methods() if getattr(m.factory, "searchable", False)]
    for name in parts:
        if name not in searchable:
            what = "is not searched alone" if name in INDEX_PARTS.names() else "is no registered index part"
            raise InputError(f"index part {name!r} {what}; --parts takes two of: {', '.join(searchable)} "
                             f"(`cq plugins --all` lists the index parts)")
