"""``--method seq2seq``: a generator fine-tuned by ``cq train gen-cq`` over its input layout (cq's or AskCQ's)."""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass

from ...errors import InputError
from ...registry import non_default, option
from .. import evidence
from ..options import (beam_args, beams_option, cq_options_option, cq_passage_budget_option, passage_cut_option,
                       passages_option, tokens_option, two_options_option, with_answers_option)
from .form import CQWriter, in_form, repair
from .grounding import check_options, ground
from .inputs import LAYOUTS, askcq_input, model_input, seq2seq_input, special_tokens

CAUSAL_SUFFIX = "\nClarifying question:"  # what a fine-tuned causal LM continues with its CQ


@dataclass(frozen=True)
class Seq2SeqOptions:
    """a generator from `cq train gen-cq` (AskCQ)"""

    model: str | None = option(None, "a `cq train gen-cq` directory (required)")
    n_passages: int = passages_option()
    with_answers: str | None = with_answers_option()
    max_new_tokens: int = tokens_option()
    options: str = cq_options_option()
    max_passage_tokens: int | None = cq_passage_budget_option()
    passage_cut: str = passage_cut_option()
    num_beams: int = beams_option()
    input_layout: str | None = option(None, "cq: \"AQ [SEP] A1 | A2 [SEP] passages\"; askcq: AskCQ's CQDataset.py "
                                            "layout (question, each answer, each passage closed by the tokenizer's "
                                            "separators; BART's) [default: the layout the model was trained on, its "
                                            "cq_train.json]", choices=("cq", "askcq"))
    two_options: str = two_options_option()


def load_seq2seq_method(options: Seq2SeqOptions, config) -> CQWriter:
    """``input_layout`` None: the layout the model was trained on (its cq_train.json), else cq's."""
    if not options.model:
        raise InputError("--method seq2seq needs --model DIR from `cq train gen-cq`")
    from ...models.load import load_generator

    generator = load_generator(options.model, config.device, config.dtype, config=config)
    if options.input_layout is None:
        from ...models.roles import trained_config

        layout = trained_config(os.path.expanduser(options.model)).get("input_layout") or "cq"
        options = dataclasses.replace(options, input_layout=layout)
    return seq2seq_method(generator, options)


def seq2seq_method(generator, options: Seq2SeqOptions = Seq2SeqOptions()) -> CQWriter:
    """A fine-tuned generator (see :mod:`cqtools.train`): a seq2seq model reads the input
    itself, a causal LM reads it followed by :data:`CAUSAL_SUFFIX`; output repaired like ``llm``'s,
    options grounded in its input (question, passages and, with ``with_answers``, the answers).
    ``input_layout`` "askcq" writes the input as AskCQ's CQDataset.py does (:func:`askcq_input`; None: cq's)."""
    o = options
    suffix = CAUSAL_SUFFIX if generator.kind == "causal" else ""
    check_options(o.options)
    build_input = input_builder(generator, o.input_layout or "cq")
    count = evidence.token_counter(generator) if o.max_passage_tokens is not None else None
    beams = beam_args(generator, o.num_beams)

    def run(records):
        built = [model_input(r, build_input, o.n_passages, o.max_passage_tokens, count, o.with_answers,
                             o.passage_cut == "last") for r in records]
        inputs = [text + suffix for text, _, _ in built]
        snippets, answers = [s for _, s, _ in built], [a for _, _, a in built]
        raw = generator.generate(inputs, max_new_tokens=o.max_new_tokens, chat=False, stop=["\n"], **beams)
        return [in_form(ground(repair(g, "seq2seq"), [r["question"], *s, *(a or [])], o.options), o.two_options)
                for g, r, s, a in zip(raw, records, snippets, answers)]

    meta_layout = {"input_layout": o.input_layout} if (o.input_layout or "cq") != "cq" else {}
    return CQWriter("seq2seq", run, {"method": "seq2seq", **dict(generator.info), "passages": o.n_passages,
                                     "with_answers": o.with_answers, "max_new_tokens": o.max_new_tokens,
                                     "options": o.options,
                                     **non_default(o, "max_passage_tokens", "passage_cut", "num_beams"), **meta_layout,
                                     **non_default(o, "two_options")})


def input_builder(generator, layout: str):
    """``(question, passages, answers) -> input text`` for the input layout (:data:`LAYOUTS`)."""
    if layout not in LAYOUTS:
        raise InputError(f"input_layout={layout!r}: use one of {', '.join(LAYOUTS)} (--input-layout)")
    if layout == "cq":
        return seq2seq_input
    tokens = special_tokens(generator)
    return lambda question, snippets, answers: askcq_input(question, snippets, answers, tokens)
