"""`cq rerank`: rescore each record's passages with a cross-encoder and keep the best."""
from __future__ import annotations

import click

from .options import (batch_option, compose, device_options, load_options, max_input_option, model_option,
                      scale_options, stream_options)
from .method_flags import preset_option
from ..models.roles import RERANKER
from ..stages.rerank import RerankSettings
from .declared import declared_flags
from .stream import run_stream, spec_from

DEFAULT_RERANKER = RERANKER


@click.command(name="rerank")
@preset_option("rerank")
@declared_flags(RerankSettings)
@model_option("reranker", DEFAULT_RERANKER, help="Cross-encoder: Hugging Face id, local directory, or offline copy.")
@compose(batch_option, device_options, load_options, max_input_option, stream_options, scale_options)
def cli(top, query_field, model, device, dtype, **kwargs):
    """Rerank "passages" with a cross-encoder: adds "rerank_score", re-sorts by it and renumbers
    "rank"; --model-batch-size counts (question, passage) pairs per forward pass.

    \b
    Example:
      cq retrieve --index idx --hits 50 < questions.jsonl | cq rerank --top 10 \\
        | cq answer --mode single
    """
    from .options import run_config
    from ..records import PASSAGES
    from ..stages import rerank
    from ..stages.rerank import RUN_RETRIEVE
    from .stream import checked_first

    spec = spec_from(kwargs, required=(query_field,), desc="rerank")
    config = run_config()  # the command's configuration, built from its flags
    stdin = checked_first(spec, (PASSAGES, RUN_RETRIEVE))
    run_stream(rerank.build(model, top, query_field, config.model_batch_size, device, config), spec, stdin)
