"""`cq disambiguate`: add disambiguated questions "dqs" (AmbigQA's qd, or ToC's rac with --tree)."""
from __future__ import annotations

import click

from .options import (batch_option, compose, device_options, load_options, max_input_option, model_option,
                      scale_options, seed_option, stream_options)
from .method_flags import api_options, method_options, method_values, preset_option
from ..models.roles import ENCODER, LLM, RERANKER
from ..registry import DISAMBIGUATORS
from .stream import run_stream, spec_from

DEFAULT_MODEL, DEFAULT_RERANKER, DEFAULT_ENCODER = LLM, RERANKER, ENCODER
METHOD_OPTIONS, OPTION_NAMES = method_options(DISAMBIGUATORS)


@click.command(name="disambiguate")
@preset_option("disambiguate")
@click.option("--method", type=click.Choice(DISAMBIGUATORS.names()), default="rac", show_default=True,
              help=DISAMBIGUATORS.help() + ".")
@model_option("disambiguator", DEFAULT_MODEL, help="Causal LM: Hugging Face id, local directory, or offline copy.")
@METHOD_OPTIONS
@compose(batch_option, device_options, load_options, max_input_option, api_options, seed_option, stream_options,
         scale_options)
def cli(method, model, device, dtype, seed, **kwargs):
    """Add "dqs": [{question, answer, ...}]; rac also writes the clarification "tree"
    [{id, parent, question, answer, depth, pruned, passage_id}] and every run counts its LLM
    calls per record in meta.disambiguate.model_calls. Each method's options are flags (from its
    schema; one it does not take is an error) or -O KEY=VALUE.

    \b
    Examples:
      cq retrieve --index idx < q.jsonl | cq rerank --top 5 | cq answer --mode multi \\
        | cq disambiguate --method qd | cq score --task ambigqa
      cq retrieve --index idx --hits 100 < q.jsonl \\
        | cq disambiguate --preset toc --shots train.jsonl | cq score --task asqa
      cq retrieve --index idx < q.jsonl | cq rerank --top 20 \\
        | cq disambiguate --method rac --tree --prune | cq answer --mode long   # cq's variant
    """
    from .options import run_config
    from ..stages import disambiguate
    from .stream import checked_first

    options = method_values(DISAMBIGUATORS, method, kwargs, OPTION_NAMES, model)
    if options.get("reuse_tree") and not (options.get("tree") and options.get("prune")):
        raise click.BadParameter("--reuse-tree prunes an earlier run's tree: pass it with --tree --prune",
                                 param_hint="--reuse-tree")
    batch_size = run_config().model_batch_size
    spec = spec_from(kwargs, required=("question",), desc="disambiguate")
    stdin = checked_first(spec)
    run_stream(disambiguate.build(method, run_config(), seed=seed, batch_size=batch_size, **options), spec, stdin)
