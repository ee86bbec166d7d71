"""`cq oracle`: a simulated user who answers clarifying questions from the gold DQ it "meant"."""
from __future__ import annotations

import click

from .options import (batch_option, compose, device_options, load_options, max_input_option, model_option,
                      scale_options, stream_options)
from .method_flags import api_options, method_options, method_values, preset_option
from ..models.roles import LLM
from ..registry import ORACLES, PERSONAS
from .stream import run_stream, spec_from

METHOD_OPTIONS, OPTION_NAMES = method_options(ORACLES)


@click.command(name="oracle")
@preset_option("oracle")
@click.option("--expand", is_flag=True,
              help="Only build evaluation records: one per gold DQ of each ambiguous question "
                   "(id <id>#<i>, gold.intended = i); unambiguous questions are kept as they are.")
@click.option("--method", type=click.Choice(ORACLES.names()), default="overlap", show_default=True,
              help=ORACLES.help() + ".")
@click.option("--persona", type=click.Choice(PERSONAS.names()), default="cooperative", show_default=True,
              help="How the simulated user says what it means (with every --method; an LM oracle's model writes "
                   "the reply where the persona says how): " + PERSONAS.help() + ".")
@model_option("oracle", None, help="--method llm: causal LM, Hugging Face id, local directory, or offline copy "
                                   f"(default {LLM}).")
@METHOD_OPTIONS
@compose(batch_option, device_options, load_options, max_input_option, api_options, stream_options, scale_options)
def cli(expand, method, persona, model, device, dtype, **kwargs):
    """Answer each record's clarifying question "cq" as the user who meant gold.dqs[gold.intended]:
    adds "selected_option" and "clarification_answer". Records without a CQ (cq null or absent)
    pass through unchanged. The user reads only the question, the gold DQ and the CQ.

    \b
    Examples:
      cq convert ambignq dev_light.json | cq oracle --expand > eval.jsonl
      cq retrieve --index idx < eval.jsonl | cq rerank --top 5 | cq detect | cq gen-cq \\
        | cq oracle | cq answer --mode cq --selected | cq score --task clam
      cq gen-cq --method from-dqs < eval.jsonl | cq oracle --method llm > replies.jsonl
      cq score --task oracle --ci replies.jsonl    # agreement with the intended gold DQ's option
      for p in cooperative terse vague uncooperative; do cq oracle --persona $p < cqs.jsonl > $p.jsonl; done
      cq score --task oracle cooperative.jsonl terse.jsonl vague.jsonl uncooperative.jsonl  # the audit per persona
      cq score --task clam a.jsonl b.jsonl c.jsonl # the same dialogue, three oracles: "spread"
    """
    from .options import run_config
    from ..stages import oracle

    options = method_values(ORACLES, method, kwargs, OPTION_NAMES, model)
    if expand:
        spec = spec_from(kwargs, desc="oracle --expand", fanout=True)
        if spec.shard is not None or spec.resume:
            raise click.UsageError("--shard and --resume do not apply to --expand (it is a quick rewrite)")
        run_stream(oracle.expand_batch, spec)
        return
    spec = spec_from(kwargs, desc="oracle")
    run_stream(oracle.build(method, run_config(), persona=persona, **options), spec)
