"""`cq detect`: add ``ambiguity: {label, score, method, threshold}`` to each record."""
from __future__ import annotations

import click

from .options import (api_options, batch_option, compose, device_options, load_options, max_input_option, model_option,
                      scale_options, stream_options)
from ..models.registry import LLM
from ..registry import DETECTORS
from .stream import run_stream, spec_from


def _threshold_help() -> str:
    defaults = ", ".join(f"{m.name} {m.defaults['threshold']:g}" if m.defaults["threshold"] is not None
                         else f"{m.name}: the model's own" for m in DETECTORS.methods() if "threshold" in m.defaults)
    return f"label = score > threshold. Defaults: {defaults}."


@click.command(name="detect")
@click.option("--method", type=click.Choice(DETECTORS.names()), default="llm", show_default=True,
              help=DETECTORS.help() + ".")
@model_option("detector", None, help=f"classifier: a `cq train detect` directory; combined: a `cq train combiner` directory; "
              f"llm: a causal LM (default {LLM}).")
@click.option("--threshold", type=float, default=None, help=_threshold_help())
@click.option("--passages", "n_passages", type=click.IntRange(min=0), default=3, show_default=True,
              help="classifier: top passages appended to the question (0: question only).")
@compose(batch_option, device_options, load_options, max_input_option, api_options, stream_options, scale_options)
def cli(method, model, threshold, n_passages, device, dtype, **kwargs):
    """Judge whether each question is ambiguous.

    \b
    Example:
      cq retrieve --index idx < questions.jsonl | cq detect --method llm \\
        | cq gen-cq | cq score --task detect
      cq detect --method classifier --model models/detect < questions.jsonl
    """
    from ..stages import detect

    spec = spec_from(kwargs, desc="detect")
    run_stream(detect.build(method, model=model, threshold=threshold, n_passages=n_passages, device=device,
                            dtype=dtype), spec)
