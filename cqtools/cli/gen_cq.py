"""`cq gen-cq`: add a clarifying question ``cq: {text, category, options, method, valid}``."""
from __future__ import annotations

import click

from .options import (batch_option, compose, device_options, load_options, max_input_option, model_option,
                      scale_options, stream_options)
from .method_flags import api_options, method_options, method_values, preset_option
from ..models.roles import LLM
from ..registry import CQ_METHODS

METHOD_OPTIONS, OPTION_NAMES = method_options(CQ_METHODS)


@click.command(name="gen-cq")
@preset_option("gen-cq")
@click.option("--method", type=click.Choice(CQ_METHODS.names()), default=None,
              help=CQ_METHODS.help() + ". [default: pred-answers; llm when --model names an LM]")
@model_option("generator", None, help=f"llm: a causal LM (default {LLM}); "
                                   "seq2seq: a `cq train gen-cq` directory (required).")
@METHOD_OPTIONS
@click.option("--all", "all_records", is_flag=True,
              help="Write a CQ for every record, not only those `cq detect` labelled ambiguous.")
@compose(batch_option, device_options, load_options, max_input_option, api_options, stream_options, scale_options)
def cli(method, model, all_records, device, dtype, **kwargs):
    """Write a clarifying question "Which [category]: A, B, or C?" for ambiguous records.

    Records whose ambiguity.label is false get "cq": null unless --all; records without an
    "ambiguity" key (cq detect not run) are treated as ambiguous. The CQ is parsed with the
    scorer's parser into category and options; "valid" says whether the model wrote the form
    itself with two distinct options or more (false: options recovered from free text, fewer
    than two, or "invalid form"). An option repeating an earlier one (same text after the
    scorer's answer normalisation) is dropped and the CQ re-written without it (cq.dropped.repeated).
    Each method's options are flags (from its schema; one it does not take is an error) or -O KEY=VALUE.

    Without --method or --model, the CQ is grounded in the reader's answers (pred-answers: options are
    the titles of passages holding distinct answers, or the answers; no LM); --model names an LM and
    writes the CQ with it (--method llm).

    \b
    Example:
      cq retrieve --index idx < questions.jsonl | cq rerank | cq answer --mode multi \\
        | cq detect --method diverse | cq gen-cq | cq answer --mode cq
      cq retrieve --index idx < questions.jsonl | cq detect | cq gen-cq --method llm \\
        | cq score --task cq
      cq gen-cq --method llm --options grounded < retrieved.jsonl   # only options found in the passages
      cq gen-cq --method from-dqs --all < questions.jsonl     # silver CQs from gold DQs
    """
    from .options import run_config
    from ..stages import gen_cq
    from ..records import ANSWERS, PASSAGES
    from ..stages.rerank import RUN_RETRIEVE
    from .stream import QUESTION, checked_first, run_stream, spec_from

    method = method or gen_cq.default_method(model)
    options = method_values(CQ_METHODS, method, kwargs, OPTION_NAMES, model)
    spec = spec_from(kwargs, desc="gen-cq")
    stdin = checked_first(spec, QUESTION, *([(PASSAGES, RUN_RETRIEVE)] if method == "pred-answers" else []),
                          when=lambda r: (all_records or gen_cq.needs_cq(r)) and r.get(ANSWERS) is None)
    run_stream(gen_cq.build(method, all_records, run_config(), **options), spec, stdin)
