"""`cq answer`: short answers from each record's passages (single, per CQ option, or multiple)."""
from __future__ import annotations

import click

from .options import (api_options, batch_option, compose, device_options, max_input_option, model_option, scale_options,
                      seed_option, stream_options)
from .stream import run_stream, spec_from

DEFAULT_READER = "HuggingFaceTB/SmolLM2-135M-Instruct"      # = stages.answer.DEFAULT_READER
DEFAULT_RERANKER = "cross-encoder/ms-marco-MiniLM-L-12-v2"  # = stages.rerank.DEFAULT_RERANKER


@click.command(name="answer")
@click.option("--mode", type=click.Choice(["single", "cq", "multi", "long"]), default="single", show_default=True,
              help="single: one answer; cq: one per option of the record's \"cq\"; multi: every distinct answer; "
                   "long: a long answer from the record's \"dqs\" (cq disambiguate; 5 passages, 160 tokens unless given).")
@model_option("reader", DEFAULT_READER, help="Reader LM (causal or seq2seq): Hugging Face id, local directory, "
                                            "or offline copy.")
@click.option("--kind", type=click.Choice(["auto", "causal", "seq2seq"]), default="auto", show_default=True,
              help="Reader architecture (auto: from the model config).")
@click.option("--passages", "n_passages", type=click.IntRange(min=1), default=3, show_default=True,
              help="Top passages shown to the reader.")
@click.option("--passage-chars", type=click.IntRange(min=50), default=600, show_default=True,
              help="Each passage's text is cut to this many characters in the prompt.")
@click.option("--max-new-tokens", type=click.IntRange(min=1), default=16, show_default=True)
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
@compose(batch_option, device_options, max_input_option, api_options, seed_option, stream_options, scale_options)
def cli(mode, model, kind, n_passages, passage_chars, max_new_tokens, grounding, selected, reranker, rerank_depth,
        round_trip, max_rounds, verify, verify_threshold, device, dtype, seed, **kwargs):
    """Add "answers": [{text, grounding, generated?, option?, question?, verify_score?}] read from "passages".

    \b
    Examples:
      cq retrieve --index idx < questions.jsonl | cq rerank --top 5 | cq answer --mode single
      ... | cq gen-cq | cq answer --mode cq            # one answer per CQ option
      ... | cq answer --mode multi --round-trip --verify
    """
    from ..models import load_cross_encoder, load_generator
    from ..models.backends import set_seed
    from ..stages.answer import AnswerConfig, Reader, answer_batch

    if selected and mode != "cq":
        raise click.UsageError("--selected needs --mode cq")
    config = AnswerConfig(mode=mode, passages=n_passages, passage_chars=passage_chars,
                          max_new_tokens=max_new_tokens, grounding=grounding, selected=selected,
                          rerank_depth=rerank_depth, round_trip=round_trip, max_rounds=max_rounds, verify=verify,
                          verify_threshold=verify_threshold, batch_size=kwargs["batch_size"])
    spec = spec_from(kwargs, required=("question",), desc="answer")
    set_seed(seed)
    generator = load_generator(model, device, dtype, kind)
    generator.batch_size = config.batch_size
    if mode == "long":  # Tree of Clarifications' long answer: cqtools/stages/long_answer.py
        from ..stages.long_answer import long_answer_batch

        given = click.get_current_context().get_parameter_source
        tokens = max_new_tokens if given("max_new_tokens").name != "DEFAULT" else None
        top = n_passages if given("n_passages").name != "DEFAULT" else None
        run_stream(lambda recs: long_answer_batch(recs, generator, passages=top, max_new_tokens=tokens,
                                                  info={**generator.info, "seed": seed}), spec)
        return
    cross_encoder = load_cross_encoder(reranker, device) if mode == "cq" else None
    info = {**generator.info, **config.params(), "seed": seed}
    if cross_encoder is not None:
        info["reranker"] = cross_encoder.info["model"]
    reader = Reader(generator, config, cross_encoder)
    run_stream(lambda recs: answer_batch(recs, reader, info), spec)
