"""`cq detect`: add ``ambiguity: {label, score, method, threshold}`` to each record."""
from __future__ import annotations

import click

from .options import (batch_option, compose, device_options, max_input_option, model_option, scale_options,
                      stream_options)
from ..stages.detect import METHODS  # the stage module imports no model library at import time
from .stream import run_stream, spec_from


@click.command(name="detect")
@click.option("--method", type=click.Choice(METHODS), default="llm", show_default=True,
              help="classifier: a model from `cq train detect`; llm: few-shot True/False (CLAM); answers: "
                   "more than one distinct answer from `cq answer --mode multi`; tree: >= 2 surviving "
                   "disambiguations; always / never: baselines.")
@model_option("detect", None, help="classifier: a `cq train detect` directory; llm: a causal LM "
                                   "(default HuggingFaceTB/SmolLM2-135M-Instruct).")
@click.option("--threshold", type=float, default=None,
              help="label = score > threshold. Defaults: classifier 0.5 (a probability), llm 0.0 (log-odds), "
                   "answers / tree 1 (more than one).")
@click.option("--passages", "n_passages", type=click.IntRange(min=0), default=3, show_default=True,
              help="classifier: top passages appended to the question (0: question only).")
@compose(batch_option, device_options, max_input_option, stream_options, scale_options)
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
    threshold = detect.DEFAULT_THRESHOLD[method] if threshold is None else threshold
    if method == "classifier":
        detector = detect.classifier_detector(model, n_passages, threshold, device)
    elif method == "llm":
        from ..models.backends import load_generator

        detector = detect.llm_detector(load_generator(model or detect.DEFAULT_LLM, device, dtype), threshold)
    elif method == "answers":
        detector = detect.answers_detector(threshold)
    elif method == "tree":
        detector = detect.tree_detector(threshold)
    else:
        detector = detect.constant_detector(method, threshold)
    run_stream(lambda recs: detect.detect_batch(recs, detector), spec)
