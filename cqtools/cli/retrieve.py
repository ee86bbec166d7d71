"""`cq retrieve`: add ranked passages to each record (BM25, dense or hybrid)."""
from __future__ import annotations

import click

from .declared import declared_flags
from .options import batch_option, compose, device_options, load_options, scale_options, stream_options
from .method_flags import method_options, method_values, preset_option
from ..registry import SEARCHERS
from ..stages.retrieve import RetrieveSettings
from .stream import run_stream, spec_from

METHOD_OPTIONS, OPTION_NAMES = method_options(SEARCHERS, skip=())


@click.command(name="retrieve")
@preset_option("retrieve")
@click.option("--index", "index_dir", required=True, type=click.Path(readable=False), envvar="CQ_INDEX",
              help="A `cq index` directory, a plain Pyserini Lucene index, or the name of a Pyserini prebuilt index "
                   "(e.g. wikipedia-dpr-100w, wikipedia-dpr-100w.dpr-multi) in Pyserini's cache.")
@click.option("--method", type=click.Choice(SEARCHERS.names()), default="bm25", show_default=True,
              help=SEARCHERS.help() + ".")
@declared_flags(RetrieveSettings, "hits", "threads", "query_field")
@METHOD_OPTIONS
@declared_flags(RetrieveSettings, "run_file", "run_tag", types={"run_file": click.Path(dir_okay=False)})
@compose(batch_option, device_options, load_options, stream_options, scale_options)
def cli(index_dir, method, hits, threads, query_field, run_file, run_tag, device, dtype, **kwargs):
    """Add the top passages {id, title, text, score, rank} under "passages".

    \b
    Example:
      cq retrieve --index idx --method bm25 --hits 100 < questions.jsonl \\
        | cq rerank --top 10 | cq answer --mode single
      cq retrieve --index idx --hits 1000 --run run.trec -o retrieved.jsonl.gz < questions.jsonl
    """
    from ..data.formats import TrecRun
    from ..stages import retrieve

    from .options import run_config

    options = method_values(SEARCHERS, method, kwargs, OPTION_NAMES)
    sinks = [TrecRun(run_file, run_tag or f"cq-{method}")] if run_file else []
    spec = spec_from(kwargs, required=(query_field,), desc="retrieve", sinks=sinks)
    run_stream(retrieve.build(method, run_config(), index_dir=index_dir, hits=hits, threads=threads,
                              query_field=query_field, **options), spec)
