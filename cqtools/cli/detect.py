"""`cq detect`: add ``ambiguity: {label, score, method, threshold}`` to each record."""
from __future__ import annotations

import click

from .options import (batch_option, compose, device_options, load_options, max_input_option, model_option,
                      scale_options, stream_options)
from .method_flags import api_options, method_options, method_values, preset_option
from ..models.roles import LLM
from ..registry import DETECTORS
from ..stages.options import DEFAULT_DETECTOR
from .stream import QUESTION, checked_first, run_stream, spec_from

METHOD_OPTIONS, OPTION_NAMES = method_options(DETECTORS)


@click.command(name="detect")
@preset_option("detect")
@click.option("--method", type=click.Choice(DETECTORS.names()), default=DEFAULT_DETECTOR, show_default=True,
              help=DETECTORS.help() + ".")
@model_option("detector", None, help=f"classifier: a `cq train detect` directory (default: $CQ_MODEL_CLASSIFIER, else "
              f"$CQ_MODELS/detect, else the classifier cq ships); combined: a `cq train combiner` directory; llm, clam: "
              f"a causal LM (default {LLM}; the variable below, which only they read).")
@METHOD_OPTIONS
@compose(batch_option, device_options, load_options, max_input_option, api_options, stream_options, scale_options)
def cli(method, model, device, dtype, **kwargs):
    """Judge whether each question is ambiguous (label = score > threshold).

    Each method's options are flags (generated from its schema; a flag the method does not take
    is an error) or -O KEY=VALUE.

    \b
    Example:
      cq retrieve --index idx < questions.jsonl | cq detect \\
        | cq gen-cq | cq score --task detect
      cq detect --method llm --model Qwen/Qwen2.5-7B-Instruct < questions.jsonl
    """
    from .options import run_config
    from ..stages import detect

    options = method_values(DETECTORS, method, kwargs, OPTION_NAMES, model)
    spec = spec_from(kwargs, desc="detect")
    stdin = checked_first(spec, QUESTION)
    run_stream(detect.build(method, run_config(), **options), spec, stdin)
