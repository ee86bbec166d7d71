"""cq's own retrieval methods and index parts, registered through the plugin hooks like any plugin's
(cqtools/plugins.py)."""
from __future__ import annotations

from ..plugins import hookimpl


@hookimpl
def register_searchers(register):
    """Every searchable index part under its own name, with the search options it declares (bm25 and dense
    first, then hybrid, fusing any two with each one's own, then a plugin's parts)."""
    import functools

    from ..registry import INDEX_PARTS
    from . import hybrid_searcher, options, part_searcher

    parts = [part for part in INDEX_PARTS.methods() if getattr(part.factory, "searchable", False)]
    ours = [part for part in parts if part.name in ("bm25", "dense")]
    for part in ours:  # their help is their options' docstring
        register(part.name, functools.partial(part_searcher, part.name), options=options.search_options(part.factory))
    register("hybrid", hybrid_searcher, options=options.hybrid_options([part.factory for part in parts]))
    for part in parts:
        if part not in ours and part.name != "hybrid":
            register(part.name, functools.partial(part_searcher, part.name),
                     options=options.search_options(part.factory), help=part.help, plugin=part.plugin)


@hookimpl
def register_index_parts(register):
    from .builtin_parts import register_parts

    register_parts(register)
