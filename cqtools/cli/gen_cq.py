"""`cq gen-cq`: add a clarifying question ``cq: {text, category, options, method, valid}``."""
from __future__ import annotations

import click

from .options import (batch_option, compose, device_options, max_input_option, model_option, scale_options,
                      stream_options)


@click.command(name="gen-cq")
@click.option("--method", type=click.Choice(["llm", "seq2seq", "from-dqs"]), default="llm", show_default=True,
              help="llm: few-shot prompt (CAmbigNQ style); seq2seq: a generator from `cq train gen-cq`; "
                   "from-dqs: silver CQ built from gold.dqs (reads gold: an upper bound / training data).")
@model_option("gen-cq", None, help="llm: a causal LM (default HuggingFaceTB/SmolLM2-135M-Instruct); "
                                   "seq2seq: a `cq train gen-cq` directory (required).")
@click.option("--zero-shot", is_flag=True, help="llm: CLAM's zero-shot prompt; the free-form CQ is kept as "
                                                "written, options extracted where possible.")
@click.option("--with-answers", type=click.Choice(["pred", "gold"]), default=None,
              help="seq2seq: add answers to the input: pred = the record's `answers` (cq answer --mode multi), "
                   "gold = gold.answers (the ground-truth-answers upper bound).")
@click.option("--passages", "n_passages", type=click.IntRange(min=0), default=3, show_default=True,
              help="Top passages shown to the model (records without passages get none).")
@click.option("--max-new-tokens", type=click.IntRange(min=1), default=40, show_default=True)
@click.option("--all", "all_records", is_flag=True,
              help="Write a CQ for every record, not only those `cq detect` labelled ambiguous.")
@compose(batch_option, device_options, max_input_option, stream_options, scale_options)
def cli(method, model, zero_shot, with_answers, n_passages, max_new_tokens, all_records, device, dtype, **kwargs):
    """Write a clarifying question "Which [category]: A, B, or C?" for ambiguous records.

    Records whose ambiguity.label is false get "cq": null unless --all; records without an
    "ambiguity" key (cq detect not run) are treated as ambiguous. The CQ is parsed with the
    scorer's parser into category and options; "valid" says whether the model wrote the form
    itself (false: options recovered from free text, or "invalid form").

    \b
    Example:
      cq retrieve --index idx < questions.jsonl | cq detect | cq gen-cq --method llm \\
        | cq score --task cq
      cq gen-cq --method from-dqs --all < questions.jsonl     # silver CQs from gold DQs
    """
    from ..stages import gen_cq
    from .stream import run_stream, spec_from

    if zero_shot and method != "llm":
        raise click.BadParameter("--zero-shot goes with --method llm", param_hint="--zero-shot")
    if with_answers and method != "seq2seq":
        raise click.BadParameter("--with-answers goes with --method seq2seq", param_hint="--with-answers")
    spec = spec_from(kwargs, desc="gen-cq")
    if method == "from-dqs":
        cq_method = gen_cq.from_dqs_method()
    else:
        from ..models.backends import load_generator

        if method == "seq2seq" and not model:
            raise click.BadParameter("--method seq2seq needs --model DIR from `cq train gen-cq`",
                                     param_hint="--model")
        generator = load_generator(model or gen_cq.DEFAULT_LLM, device, dtype)
        if method == "llm":
            cq_method = gen_cq.llm_method(generator, n_passages, zero_shot, max_new_tokens)
        else:
            cq_method = gen_cq.seq2seq_method(generator, n_passages, with_answers, max_new_tokens)
    run_stream(lambda recs: gen_cq.gen_cq_batch(recs, cq_method, all_records), spec)
