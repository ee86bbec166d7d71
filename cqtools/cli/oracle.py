"""`cq oracle`: a simulated user who answers clarifying questions from the gold DQ it "meant"."""
from __future__ import annotations

import sys

import click

from .options import (batch_option, compose, device_options, max_input_option, model_option, scale_options,
                      stream_options)
from .stream import run_stream, spec_from

DEFAULT_MODEL = "HuggingFaceTB/SmolLM2-135M-Instruct"  # = stages.oracle.DEFAULT_MODEL


@click.command(name="oracle")
@click.option("--expand", is_flag=True,
              help="Only build evaluation records: one per gold DQ of each ambiguous question "
                   "(id <id>#<i>, gold.intended = i); unambiguous questions are kept as they are.")
@click.option("--method", type=click.Choice(["overlap", "llm"]), default="overlap", show_default=True,
              help="overlap: the option that best overlaps what the DQ adds to the question; llm: the model, "
                   "with the DQ in its prompt, picks the option (or writes a short reply to a free-form CQ).")
@model_option("oracle", DEFAULT_MODEL, help="--method llm: causal LM, Hugging Face id, local directory, or offline copy.")
@click.option("--max-new-tokens", type=click.IntRange(min=1), default=16, show_default=True,
              help="--method llm: length of a reply to a free-form CQ.")
@compose(batch_option, device_options, max_input_option, stream_options, scale_options)
def cli(expand, method, model, max_new_tokens, device, dtype, **kwargs):
    """Answer each record's clarifying question "cq" as the user who meant gold.dqs[gold.intended]:
    adds "selected_option" and "clarification_answer". Records without a CQ (cq null or absent)
    pass through unchanged. The user reads only the question, the gold DQ and the CQ.

    \b
    Examples:
      cq convert ambignq dev_light.json | cq oracle --expand > eval.jsonl
      cq retrieve --index idx < eval.jsonl | cq rerank --top 5 | cq detect | cq gen-cq \\
        | cq oracle | cq answer --mode cq --selected | cq score --task clam
    """
    from ..stages.oracle import oracle_batch

    if expand:
        spec = spec_from(kwargs, required=("question",), desc="oracle --expand")
        _expand(spec)
        return
    spec = spec_from(kwargs, required=("question",), desc="oracle")
    generator = None
    info = {"method": method}
    if method == "llm":
        from ..models import load_generator

        generator = load_generator(model, device, dtype)
        info.update(generator.info, max_new_tokens=max_new_tokens)
    run_stream(lambda recs: oracle_batch(recs, method, info, generator, max_new_tokens), spec)


def _expand(spec) -> None:
    """One record in, one or more out: the stream loop maps one-to-one, so this flat map reads and
    writes records itself (lazily, flushing per input batch). --shard/--resume do not apply."""
    from ..errors import CQError
    from ..jsonl import JsonlWriter, Skipped, read_records
    from ..stages.oracle import expand_record
    from .stream import batched, click_stdin

    if spec.shard is not None or spec.resume:
        raise click.UsageError("--shard and --resume do not apply to --expand (it is a quick rewrite)")
    writer = JsonlWriter(sys.stdout.buffer)
    for batch in batched(read_records(click_stdin(), spec.required, spec.on_error, Skipped()), spec.batch_size):
        out = []
        for lineno, record in batch:
            try:
                out.extend(expand_record(record))
            except CQError as err:
                err.where = err.where or f"line {lineno}"
                raise
        writer.write_all(out)
