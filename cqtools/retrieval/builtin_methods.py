"""cq's own retrieval methods and index parts, registered through the plugin hooks like any plugin's
(cqtools/plugins.py)."""
from __future__ import annotations

from ..plugins import hookimpl


@hookimpl
def register_searchers(register):
    """bm25, dense and hybrid; then every other searchable index part (a plugin's) under its own name."""
    import functools

    from ..registry import INDEX_PARTS
    from . import bm25_searcher, dense_searcher, hybrid_searcher, options, part_searcher

    register("bm25", bm25_searcher, options=options.Bm25Options)
    register("dense", dense_searcher, options=options.DenseOptions)
    register("hybrid", hybrid_searcher, options=options.HybridOptions)
    for part in INDEX_PARTS.methods():
        if getattr(part.factory, "searchable", False) and part.name not in ("bm25", "dense", "hybrid"):
            register(part.name, functools.partial(part_searcher, part.name), options=options.PartOptions,
                     help=part.help, plugin=part.plugin)


@hookimpl
def register_index_parts(register):
    from .builtin_parts import register_parts

    register_parts(register)
