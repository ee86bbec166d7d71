"""`cq answer`: short answers from each record's passages (single, per CQ option, or multiple)."""
from __future__ import annotations

import click

from .options import (batch_option, compose, device_options, load_options, max_input_option, model_option,
                      scale_options, seed_option, stream_options)
from .method_flags import api_options, method_options, method_values, preset_option
from ..models.roles import LLM, RERANKER
from ..registry import ANSWER_MODES, READERS
from ..stages.options import CommandSettings
from .stream import run_stream, spec_from

DEFAULT_READER, DEFAULT_RERANKER = LLM, RERANKER


MODE_AND_READER_OPTIONS, OPTION_NAMES = method_options(ANSWER_MODES, READERS)


@click.command(name="answer")
@preset_option("answer")
@click.option("--mode", type=click.Choice(ANSWER_MODES.names()), default="single", show_default=True,
              help=ANSWER_MODES.help() + ".")
@click.option("--reader", "reader_name", type=click.Choice(["auto", *READERS.names()]),
              default=CommandSettings.reader, show_default=True,
              help="auto: extractive when the model is a span (question-answering) model, else generative; "
                   + READERS.help() + ".")
@model_option("reader", None, help="Reader model: Hugging Face id, local directory, or offline copy "
                                   "[default: the extractive reader installed in $CQ_MODELS/reader by `make models` "
                                   "(or `cq train reader --out DIR`), else the one cq ships (cqtools/shipped/reader), "
                                   f"else {DEFAULT_READER}; --mode long and --verify: {DEFAULT_READER}].")
@MODE_AND_READER_OPTIONS
@compose(batch_option, device_options, load_options, max_input_option, api_options, seed_option, stream_options,
         scale_options)
def cli(mode, reader_name, model, device, dtype, seed, **kwargs):
    """Add "answers": [{text, grounding, generated?, option?, question?, verify_score?}] read from "passages".

    The mode's and the reader's options are flags (from their schemas; a flag neither takes is an
    error) or -O KEY=VALUE.

    \b
    Examples:
      cq retrieve --index idx < questions.jsonl | cq rerank --top 5 | cq answer --mode single
      ... | cq gen-cq | cq answer --mode cq            # one answer per CQ option
      ... | cq answer --mode multi --round-trip --verify
    """
    from .options import run_config
    from ..models.load import set_seed
    from ..records import PASSAGES
    from ..stages import answer
    from ..stages.rerank import RUN_RETRIEVE
    from .stream import checked_first

    options = method_values(ANSWER_MODES, mode, kwargs, OPTION_NAMES, also=(READERS,))
    if model is not None:
        options["model"] = model
    spec = spec_from(kwargs, required=("question",), desc="answer")
    set_seed(seed)
    stdin = checked_first(spec, *([(PASSAGES, RUN_RETRIEVE)] if mode in ("single", "multi", "cq") else []))
    run_stream(answer.build(mode, reader_name, seed=seed, config=run_config(), batch_size=run_config().model_batch_size,
                            **options), spec, stdin)

