"""`cq gen-cq`: add a clarifying question ``cq: {text, category, options, method, valid}``."""
from __future__ import annotations

import click

from .options import (api_options, batch_option, compose, device_options, load_options, max_input_option, model_option,
                      scale_options, stream_options)
from ..models.registry import LLM
from ..registry import CQ_METHODS


@click.command(name="gen-cq")
@click.option("--method", type=click.Choice(CQ_METHODS.names()), default="llm", show_default=True,
              help=CQ_METHODS.help() + ".")
@model_option("generator", None, help=f"llm: a causal LM (default {LLM}); "
                                   "seq2seq: a `cq train gen-cq` directory (required).")
@click.option("--zero-shot", is_flag=True, help="llm: CLAM's zero-shot prompt; the free-form CQ is kept as "
                                                "written, options extracted where possible.")
@click.option("--with-answers", type=click.Choice(["pred", "gold"]), default=None,
              help="seq2seq: add answers to the input: pred = the record's `answers` (cq answer --mode multi), "
                   "gold = gold.answers (the ground-truth-answers upper bound).")
@click.option("--passages", "n_passages", type=click.IntRange(min=0), default=3, show_default=True,
              help="Top passages shown to the model (records without passages get none).")
@click.option("--max-new-tokens", type=click.IntRange(min=1), default=40, show_default=True)
@click.option("--options", type=click.Choice(["all", "grounded"]), default="all", show_default=True,
              help="llm, seq2seq: which options to keep. cq.grounded marks each option: true when every word of it "
                   "(normalised as the scorer normalises answers) occurs in the question or the passages the model "
                   "read (seq2seq --with-answers: or those answers). grounded = drop the others (listed in "
                   "cq.dropped.ungrounded). Repeated options are dropped either way (cq.dropped.repeated).")
@click.option("--all", "all_records", is_flag=True,
              help="Write a CQ for every record, not only those `cq detect` labelled ambiguous.")
@compose(batch_option, device_options, load_options, max_input_option, api_options, stream_options, scale_options)
def cli(method, model, zero_shot, with_answers, n_passages, max_new_tokens, options, all_records, device, dtype,
        **kwargs):
    """Write a clarifying question "Which [category]: A, B, or C?" for ambiguous records.

    Records whose ambiguity.label is false get "cq": null unless --all; records without an
    "ambiguity" key (cq detect not run) are treated as ambiguous. The CQ is parsed with the
    scorer's parser into category and options; "valid" says whether the model wrote the form
    itself with two distinct options or more (false: options recovered from free text, fewer
    than two, or "invalid form"). An option repeating an earlier one (same text after the
    scorer's answer normalisation) is dropped and the CQ re-written without it.

    \b
    Example:
      cq retrieve --index idx < questions.jsonl | cq detect | cq gen-cq --method llm \\
        | cq score --task cq
      cq gen-cq --method llm --options grounded < retrieved.jsonl   # only options found in the passages
      cq gen-cq --method from-dqs --all < questions.jsonl     # silver CQs from gold DQs
    """
    from ..stages import gen_cq
    from .stream import run_stream, spec_from

    if zero_shot and method != "llm":
        raise click.BadParameter("--zero-shot goes with --method llm", param_hint="--zero-shot")
    if with_answers and method != "seq2seq":
        raise click.BadParameter("--with-answers goes with --method seq2seq", param_hint="--with-answers")
    if options != "all" and not gen_cq.takes_options(method):
        raise click.BadParameter(f"--options {options} goes with a model's CQs (--method llm or seq2seq); "
                                 f"{method} reads no passages", param_hint="--options")
    spec = spec_from(kwargs, desc="gen-cq")
    run_stream(gen_cq.build(method, all_records, model=model, n_passages=n_passages, zero_shot=zero_shot,
                            with_answers=with_answers, max_new_tokens=max_new_tokens, options=options, device=device,
                            dtype=dtype),
               spec)
