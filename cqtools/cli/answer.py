"""`cq answer`: short answers from each record's passages (single, per CQ option, or multiple)."""
from __future__ import annotations

import click

from .options import (api_options, batch_option, compose, device_options, load_options, max_input_option, model_option,
                      scale_options, seed_option, stream_options)
from ..models.roles import LLM, RERANKER
from ..registry import READERS
from .stream import run_stream, spec_from

DEFAULT_READER, DEFAULT_RERANKER = LLM, RERANKER


@click.command(name="answer")
@click.option("--mode", type=click.Choice(["single", "cq", "multi", "long"]), default="single", show_default=True,
              help="single: one answer; cq: one per option of the record's \"cq\"; multi: every distinct answer; "
                   "long: a long answer from the record's \"dqs\" (cq disambiguate; 5 passages, 160 tokens unless given).")
@click.option("--reader", "reader_name", type=click.Choice(["auto", *READERS.names()]), default="auto",
              show_default=True,
              help="auto: extractive when the model is a span (question-answering) model, else generative; "
                   + READERS.help() + ".")
@model_option("reader", None, help="Reader model: Hugging Face id, local directory, or offline copy "
                                   "[default: the extractive reader installed in $CQ_MODELS/reader by `make models` "
                                   f"(or `cq train reader --out DIR`), else {DEFAULT_READER}; --mode long and "
                                   f"--verify: {DEFAULT_READER}].")
@click.option("--kind", type=click.Choice(["auto", "causal", "seq2seq"]), default="auto", show_default=True,
              help="Reader architecture (auto: from the model config).")
@click.option("--passages", "n_passages", type=click.IntRange(min=1), default=3, show_default=True,
              help="Top passages shown to the reader (cq mode: after reranking them for each revised question).")
@click.option("--passage-chars", type=click.IntRange(min=50), default=600, show_default=True,
              help="Each passage's text is cut at a word boundary before this many characters in the reader's "
                   "prompt (titles stay whole; --mode long cuts passages to 80 words instead).")
@click.option("--max-new-tokens", type=click.IntRange(min=1), default=16, show_default=True,
              help="Tokens generated per answer (multi: three times as many for the list).")
@click.option("--grounding", type=click.Choice(["span", "none"]), default="span", show_default=True,
              help="single/cq: snap each answer to the passage span it best matches, or, when the generation is "
                   "unusable, take the span the reader scores highest (answers record which was used); "
                   "multi: snap only. none: answers as generated.")
@click.option("--selected", is_flag=True,
              help="--mode cq: answer only the record's \"selected_option\" (set by a user or an oracle).")
@click.option("--reranker", default=DEFAULT_RERANKER, show_default=True, envvar="CQ_MODEL_RERANKER",
              help="--mode cq: cross-encoder that reranks the passages for each revised question.")
@click.option("--rerank-depth", type=click.IntRange(min=1), default=20, show_default=True,
              help="--mode cq: passages reranked per revised question.")
@click.option("--round-trip", is_flag=True,
              help="REFUEL round trip: re-ask \"Q [context]\" for each new answer until none is new.")
@click.option("--max-rounds", type=click.IntRange(min=1), default=2, show_default=True,
              help="Cap on --round-trip rounds.")
@click.option("--verify", is_flag=True,
              help="REFUEL LM verification: add verify_score = log p(answer | passages, question).")
@click.option("--verify-threshold", type=float, default=-8.0, show_default=True,
              help="With --verify, answers scoring below this summed log-probability are dropped.")
@compose(batch_option, device_options, load_options, max_input_option, api_options, seed_option, stream_options,
         scale_options)
def cli(mode, reader_name, model, kind, n_passages, passage_chars, max_new_tokens, grounding, selected, reranker,
        rerank_depth, round_trip, max_rounds, verify, verify_threshold, device, dtype, seed, **kwargs):
    """Add "answers": [{text, grounding, generated?, option?, question?, verify_score?}] read from "passages".

    \b
    Examples:
      cq retrieve --index idx < questions.jsonl | cq rerank --top 5 | cq answer --mode single
      ... | cq gen-cq | cq answer --mode cq            # one answer per CQ option
      ... | cq answer --mode multi --round-trip --verify
    """
    from ..config import current
    from ..models.backends import set_seed
    from ..stages import answer

    if selected and mode != "cq":
        raise click.UsageError("--selected needs --mode cq")
    options = dict(model=model, kind=None if kind == "auto" else kind, n_passages=n_passages,
                   passage_chars=passage_chars, max_new_tokens=max_new_tokens, grounding=grounding, selected=selected,
                   rerank_depth=rerank_depth, round_trip=round_trip, max_rounds=max_rounds, verify=verify,
                   verify_threshold=verify_threshold, batch_size=current().model_batch_size)
    if mode == "long":  # Tree of Clarifications' long answer: its own defaults unless given
        given = click.get_current_context().get_parameter_source
        for name in ("n_passages", "max_new_tokens"):
            if given(name).name == "DEFAULT":
                options[name] = None
    spec = spec_from(kwargs, required=("question",), desc="answer")
    set_seed(seed)
    run_stream(answer.build(mode, reader_name, reranker=reranker, seed=seed, config=current(), **options), spec)
