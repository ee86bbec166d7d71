"""cq's own retrieval methods, registered through the plugin hooks like any plugin's (cqtools/plugins.py)."""
from __future__ import annotations

from ..plugins import hookimpl


@hookimpl
def register_searchers(register):
    from . import bm25_searcher, dense_searcher, hybrid_searcher, options

    register("bm25", bm25_searcher, options=options.Bm25Options)
    register("dense", dense_searcher, options=options.DenseOptions)
    register("hybrid", hybrid_searcher, options=options.HybridOptions)
