"""Clarifying-question generation: ``cq: {text, category, options, method, valid}`` per record.

Every method ends in the CAmbigNQ form "Which [category]: [opt1], [opt2], or [optN]?" (two
options: "A or B"), parsed with the scorer's own parser (:func:`cqtools.metrics.cq.parse_cq`),
except ``llm --zero-shot`` whose free-form text is kept as the model wrote it (unless an option is
dropped: then it is re-written in the canonical form from the options kept).

Options are distinct (:mod:`cqtools.stages.gen_cq.form`: a repeat is dropped, listed under
``cq.dropped.repeated``). The model methods (llm, seq2seq) also mark each option ``grounded`` in
what the model read: :func:`grounded`. ``options="grounded"`` (``cq gen-cq --options grounded``)
drops the others (listed under ``cq.dropped.ungrounded``); the default ``all`` keeps them.

Methods (the CQ_METHODS registry, cqtools/registry.py; plugins add more; :func:`build` assembles
the stage from Python):
  llm        few-shot prompt over the question and its top passages (CAmbigNQ style);
             with zero_shot: CLAM's "... I have to ask the following clarifying question:"
  seq2seq    a fine-tuned generator (``cq train gen-cq``) over "AQ [SEP] (answers [SEP]) passages"
  from-dqs   a silver CQ built from gold disambiguated questions: reads ``gold`` by design
             (an upper bound, and the training-data builder of ``cq train gen-cq``)

AskCQ's inputs (``with_answers`` pred/gold, passages up to ``max_passage_tokens``, ``num_beams``) are
options of llm and seq2seq; clam and clam-prompting take no answers (CLAM's prompts are closed-book and
show the question alone), and from-dqs reads gold DQs, not answers.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ...errors import InputError
from ...records import set_meta
from ...registry import CQ_METHODS, non_default
from ..common import stage_fn
from ..options import two_options_option
from .form import CQWriter, canonical_cq, in_form, which
from .form import extract_options, format_cq, repair  # noqa: F401  (re-exported: imported from here today)
from .grounding import ground, grounded, shown_words  # noqa: F401  (re-exported)
from .inputs import askcq_input, model_input, seq2seq_input, special_tokens  # noqa: F401  (re-exported)
from .llm import LlmOptions, free_form, llm_method, load_llm_method, primed  # noqa: F401  (re-exported)
from .seq2seq import (CAUSAL_SUFFIX, Seq2SeqOptions, input_builder, load_seq2seq_method,  # noqa: F401
                      seq2seq_method)
from .silver import cq_from_dqs, gold_dq_questions
from .why import NO_CQ, no_cq_reason  # noqa: F401  (NO_CQ: the key, re-exported for callers)


# --- generators ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class FromDqsOptions:
    """silver CQ built from gold.dqs (reads gold: an upper bound / training data)"""

    two_options: str = two_options_option()


def from_dqs_method(options: FromDqsOptions = FromDqsOptions(), config=None) -> CQWriter:
    two_options = options.two_options

    def run(records):
        out = []
        for record in records:
            category, options = cq_from_dqs(record["question"], gold_dq_questions(record))
            if not options:  # unambiguous in the gold: there is nothing to ask
                out.append(None)
                continue
            out.append(in_form(canonical_cq(which(category), options, "from-dqs"), two_options))
        return out

    return CQWriter("from-dqs", run, {"method": "from-dqs", "reads": "gold.dqs", **non_default(options, "two_options")})


# --- the stage ------------------------------------------------------------------------------

def needs_cq(record: dict) -> bool:
    """True unless ``cq detect`` judged the record unambiguous (no ``ambiguity`` = ambiguous)."""
    ambiguity = record.get("ambiguity")
    if ambiguity is None:
        return True
    if not isinstance(ambiguity, dict) or "label" not in ambiguity:
        raise InputError(f"record {record.get('id')}: 'ambiguity' must be {{label, score, method}} from cq detect")
    return bool(ambiguity["label"])


def takes_options(method: str) -> bool:
    """Whether CQ method ``method`` takes ``options`` (llm, seq2seq; a plugin's if it declares it):
    from-dqs reads gold DQs, and a method that would ignore ``options="grounded"`` must refuse it."""
    return CQ_METHODS.get(method).option("options") is not None


def default_method(model: str | None) -> str:
    """The CQ writer of `cq gen-cq` and `cq chat` when none is named: an LM writes the CQ when one is named
    (llm), else the grounded template over the reader's answers (pred-answers: no free text from a small LM)."""
    return "llm" if model else "pred-answers"


def build(method: str | None = None, all_records: bool = False, config=None,
          **settings) -> Callable[[list[dict]], list[dict]]:
    """The gen-cq stage as a batch function (records -> records), e.g. ``build("from-dqs", all_records=True)``
    or ``build("llm", model=..., options="grounded")``; ``settings`` are the method's options (its
    schema; a misspelled one is an error). No ``method``: `cq gen-cq`'s rule (:func:`default_method`: llm when
    ``model`` names one, else pred-answers)."""
    method = method or default_method(settings.get("model"))
    return stage_fn(gen_cq_batch, "gen-cq", method, CQ_METHODS, config, settings, "method", all_records=all_records)


def gen_cq_batch(records: list[dict], method: CQWriter, all_records: bool) -> list[dict]:
    todo = [r for r in records if all_records or needs_cq(r)]
    cqs = method.run(todo) if todo else []
    made = {id(r): cq for r, cq in zip(todo, cqs)}
    for record in records:
        record["cq"] = made.get(id(record))
        if id(record) in made and record["cq"] is None and needs_cq(record):
            record[NO_CQ] = no_cq_reason(record, method.info.get("method") or "the CQ writer")
        set_meta(record, "gen_cq", method.info)
    return records

