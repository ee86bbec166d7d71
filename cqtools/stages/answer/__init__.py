"""Answer stage: short answers from a record's passages with a reader (the READERS registry).

Modes:
  single  one answer per question (the reader over the top passages);
  cq      AskCQ Task 3: one answer per option of the record's clarifying question, each for the
          "AQ revised by CQ" ("AQ, Which [category]: [option]") over passages reranked for it;
  multi   AmbigQA multiple answers: the reader lists every answer it finds (deduplicated);
  dqs     AmbigQA's DISAMBIG-FIRST, step 3: each of the record's ``dqs`` (from ``cq disambiguate``)
          answered by retrieval QA: retrieved for from ``index``, reranked, read.
Extras (REFUEL, :mod:`.refuel`): ``round_trip`` re-asks the question until no new answer appears
(cq's "Q [title]" variant, or REFUEL's: a DQ for every answer, every DQ re-asked); ``verify``
scores answers with the reader's LM or a `cq train verifier` model (cq's threshold rule, or REFUEL's
keep-best over (DQ, answer) pairs). Evidence: a reader given ``max_passage_tokens`` reads passages
in order up to that budget (:mod:`cqtools.stages.evidence`), and each record notes how many
(``meta.passages_read.answer``).

Readers are registered in :data:`cqtools.registry.READERS` (``cq answer --reader``; plugins add
more) and have the shape of :class:`cqtools.protocols.Reader`. The built-in ``generative`` reader
(:mod:`.reader`) prompts a Generator and grounds its answers in passage spans (:mod:`.grounding`).
:func:`build` assembles the stage from Python::

    answer = build(mode="single", reader="generative", model="HuggingFaceTB/SmolLM2-135M-Instruct")
    records = answer(records)
"""
from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, fields
from typing import Callable

from ...errors import InputError
from ...protocols import AnswerVerifier
from ...records import ANSWERS, set_meta
from ..options import CommandSettings
from ...registry import READERS, non_default
from . import options as O
from .grounding import MAX_SPAN_WORDS, Span, candidate_spans, ground, snap_spans
from .questions import (Question, fit_inputs, note_counts, questions_of, record_cq, rerank_questions,
                        revised_question)
from .reader import DEFAULT_READER, GenerativeReader, ReaderOptions
from .support import drop_unsupported, mark_unmatched
from .refuel import refuel_round_trip, refuel_verify, round_trip, verify
from .verifier import verifier_for
from .choice import choose_reader
from .dqs import DQS, distinct_answers, dq_questions, dqs_searcher, fill_dqs
from .text import (MULTI_PROMPT, SINGLE_PROMPT, VERIFY_QUERY, clean_answer, passage_block,
                   shown_passages, split_answers)

__all__ = ["AnswerConfig", "AnswerStage", "DEFAULT_READER", "GenerativeReader", "MAX_SPAN_WORDS", "MODES",
           "MULTI_PROMPT", "Question", "ReaderOptions", "SINGLE_PROMPT", "Span", "VERIFY_QUERY",
           "answer_batch", "build", "candidate_spans", "choose_reader", "clean_answer", "ground", "passage_block", "record_cq",
           "revised_question", "shown_passages", "snap_spans", "split_answers"]

MODES = ("single", "cq", "multi", "dqs", "long", "dialogue")  # cq's own answer modes (ANSWER_MODES holds plugins' too)
GENERATOR_MODES = ("long", "dialogue")  # modes that write with a generator (--model names a causal LM)


@dataclass
class AnswerConfig(ReaderOptions):
    """The stage's options; the :class:`ReaderOptions` fields are the generative reader's (the
    stage itself reads ``n_passages``: cq mode reranks each revised question's passages down to it)."""

    mode: str = "single"               # single | cq | multi | dqs
    selected: bool = O.selected()      # cq mode: only record["selected_option"]
    revised_question: str = O.revised()  # cq mode: how an option revises the question (cq's, or AskCQ's release)
    rerank_depth: int = O.rerank_depth()  # cq and dqs modes: passages reranked per question
    round_trip: bool = O.round_trip()
    round_trip_method: str = O.round_trip_method()  # title (cq's "Q [title]") | refuel (a DQ per answer, re-asked)
    max_rounds: int = O.max_rounds()
    round_trip_match: str = O.round_trip_match()  # refuel: an answer is new by its normalised text or raw string
    verify: bool = O.verify()
    verify_rule: str = O.verify_rule()  # threshold (cq's) | refuel (keep-best over (DQ, answer) pairs)
    verify_threshold: float = O.verify_threshold()
    index: str | None = O.index()      # dqs mode: the index to retrieve from
    retriever: str = O.retriever()     # dqs mode: its searcher
    hits: int = O.hits()               # dqs mode: passages retrieved per DQ
    batch_size: int = 32
    min_rerank_score: float | None = O.min_rerank()  # no answer from a passage the reranker scored under this

    @property
    def refuel_round_trip(self) -> bool:
        return self.round_trip and self.round_trip_method == "refuel"

    def stage_params(self) -> dict:
        """The stage's own options as written into ``meta.answer`` (after the reader's); a variant's
        name only when it is not the default one."""
        keep: dict = {}
        if self.mode in ("cq", "dqs"):
            keep.update(selected=self.selected, rerank_depth=self.rerank_depth,
                        **non_default(self, "revised_question")) if self.mode == "cq" \
                else keep.update(index=self.index, retriever=self.retriever, hits=self.hits,
                                 rerank_depth=self.rerank_depth)
        if self.round_trip:
            keep.update(round_trip=True, max_rounds=self.max_rounds)
            if self.round_trip_method != "title":
                keep.update(round_trip_method=self.round_trip_method, **non_default(self, "round_trip_match"))
        if self.min_rerank_score is not None:
            keep["min_rerank_score"] = self.min_rerank_score
        if self.verify:
            keep.update(verify=True, verify_threshold=self.verify_threshold)
            if self.verify_rule != "threshold":
                keep["verify_rule"] = self.verify_rule
        return keep


@dataclass
class AnswerStage:
    """A reader (any :class:`cqtools.protocols.Reader`) with the stage's options and, for cq mode,
    the cross-encoder that reranks passages per revised question."""

    config: AnswerConfig
    reader: object
    cross_encoder: object = None
    searcher: object = None            # dqs mode: retrieves for each DQ (a Searcher)
    qd_writer: object = None           # REFUEL's round trip: writes a DQ per answer (refuel.QDWriter)
    verifier: object = None            # --verifier-model: scores answers in the reader's place (verifier.FiDVerifier)

    def meta(self, seed: int | None = None) -> dict:
        """``meta.answer``: the reader's model, the mode, the reader's and the stage's options."""
        info = {**self.reader.info, "mode": self.config.mode, **self.reader.params, **self.config.stage_params()}
        if seed is not None:
            info["seed"] = seed
        if self.cross_encoder is not None:
            info["reranker"] = self.cross_encoder.info["model"]
        if self.qd_writer is not None:
            info.update(qd_model=self.qd_writer.generator.info["model"], **self.qd_writer.params)
        if self.verifier is not None:
            info["verifier_model"] = self.verifier.path
        return info


def build(mode: str = "single", reader: str = CommandSettings.reader, *, seed: int = CommandSettings.seed, config=None,
          **options) -> Callable[[list[dict]], list[dict]]:
    """The answer stage as a batch function (records -> records). ``mode``: an ANSWER_MODES name
    (single, cq, multi, long); ``reader``: a READERS name or ``auto`` (:func:`choose_reader`).
    ``options``: the mode's (its schema: round_trip, verify, selected, reranker, ...) and the reader's
    (model, kind, n_passages, ...), ``batch_size`` (items per model call) and run-configuration
    fields (device, dtype); a name neither takes is an error naming the nearest valid one.
    ``mode="long"`` is Tree of Clarifications' long answer (:mod:`cqtools.stages.long_answer`),
    written by the generative reader's model."""
    from ...registry import ANSWER_MODES, unknown_option
    from ..common import described, split_config

    run_config, options = split_config(config, options)
    chosen_mode = ANSWER_MODES.get(mode)
    params = {"mode": mode, "reader": reader, "seed": seed, **options}
    batch_size = options.pop("batch_size", None) or run_config.model_batch_size
    reader, model = choose_reader(reader, options.pop("model", None), run_config,
                                  generator_only=mode in GENERATOR_MODES or bool(options.get("verify")))
    chosen_reader = READERS.get(reader)
    given = {k: v for k, v in options.items() if v is not None}
    unknown = [k for k in given if chosen_mode.option(k) is None and chosen_reader.option(k) is None]
    if unknown:
        valid = sorted({o.name for o in chosen_mode.options} | {o.name for o in chosen_reader.options})
        raise InputError(unknown_option(unknown[0], f"answer mode {mode} with reader {reader}", valid))
    mode_options = {k: v for k, v in given.items() if chosen_mode.option(k) is not None}
    reader_options = {k: v for k, v in given.items() if k not in mode_options}
    checked = chosen_reader.values(reader_options)  # checked and typed here ("2" from a shared flag is 2)
    reader_options = {k: checked[k] for k in reader_options}
    fn = chosen_mode.build(run_config, reader=reader, model=model, reader_options=reader_options, seed=seed,
                           batch_size=batch_size, **mode_options)
    return described(fn, "answer", params)


def qa_mode(mode: str):
    """The factory of a short-answer mode (single, cq, multi, dqs): the reader, for cq and dqs the
    reranker, for dqs the searcher, for REFUEL's round trip the DQ writer."""

    def factory(options, config, *, reader: str, model: str | None, reader_options: dict, seed, batch_size: int):
        mode_options = dataclasses.asdict(options)
        reranker, qd_model = mode_options.pop("reranker", None), mode_options.pop("qd_model", None)
        verifier_model = mode_options.pop("verifier_model", None)
        qd_settings = {k: mode_options.pop(k) for k in ("qd_layout", "qd_num_beams", "qd_one_answer")
                       if k in mode_options}
        chosen = READERS.get(reader)
        names = {f.name for f in fields(AnswerConfig)}
        stage_options = {k: v for k, v in {**reader_options, **mode_options}.items() if k in names}
        answer_config = AnswerConfig(mode=mode, batch_size=batch_size, **stage_options)
        if answer_config.max_passage_tokens is not None and "n_passages" not in reader_options:
            answer_config.n_passages = None  # an evidence budget: the reader reads every passage that fits
        if answer_config.verify_rule == "refuel" and mode not in ("single", "multi"):
            raise InputError(f"--verify-rule refuel verifies (DQ, answer) pairs of one question's answers (modes single "
                             f"and multi); --mode {mode} answers other questions: use --verify-rule threshold")
        the_reader = chosen.build(config, batch_size=batch_size, **({"model": model} if model else {}),
                                  **reader_options)
        verifier = verifier_for(verifier_model, answer_config.verify, config, batch_size)
        if answer_config.verify and verifier is None and not isinstance(the_reader, AnswerVerifier):
            raise InputError(f"--verify needs a reader that scores answers; {reader!r} does not "
                             "(use --reader generative)")
        if answer_config.max_passage_tokens is not None and not hasattr(the_reader, "evidence"):
            raise InputError(f"--max-passage-tokens needs a reader that fits passages to a budget; {reader!r} does "
                             "not (use --reader generative or extractive)")
        if answer_config.round_trip_method == "refuel" and not answer_config.round_trip:
            raise InputError("--round-trip-method refuel is a way of running the round trip: add --round-trip")
        if answer_config.verify_rule == "refuel" and not answer_config.verify:
            raise InputError("--verify-rule refuel is a way of verifying: add --verify")
        cross_encoder = searcher = qd_writer = None
        if mode in ("cq", "dqs"):
            from ...models.load import load_cross_encoder

            cross_encoder = load_cross_encoder(reranker, config.device, config)
        if mode == "dqs":
            searcher = dqs_searcher(answer_config, config)
        if answer_config.refuel_round_trip:
            qd_writer = qd_writer_for(the_reader, qd_model, config, **qd_settings)
        stage = AnswerStage(answer_config, the_reader, cross_encoder, searcher, qd_writer, verifier)
        return functools.partial(answer_batch, stage=stage, info={"reader": reader, **stage.meta(seed)})

    return factory


def qd_writer_for(reader, qd_model: str | None, config, **settings):
    """REFUEL's DQ writer: ``qd_model``, else the generative reader's own LM, else the default
    question writer of ``cq disambiguate``; ``settings``: its qd_layout, qd_num_beams and qd_one_answer."""
    from ...models.load import load_generator
    from ..disambiguate import DEFAULT_MODEL
    from .refuel import QDWriter

    if qd_model is None and getattr(reader, "generator", None) is not None:
        generator = reader.generator
    else:
        generator = load_generator(qd_model or DEFAULT_MODEL, config.device, config.dtype, config=config)
    return QDWriter(generator, layout=settings.get("qd_layout", "ambigqa"), num_beams=settings.get("qd_num_beams"),
                    one_answer=settings.get("qd_one_answer", "keep"))


def long_mode(options: O.LongOptions, config, *, reader: str, model: str | None, reader_options: dict, seed,
              batch_size: int | None):
    """``mode="long"``: Tree of Clarifications' long answer from the record's DQs (:mod:`..long_answer`)."""
    n_passages, max_new_tokens, prompt = options.n_passages, options.max_new_tokens, options.prompt
    from ...models.load import load_generator
    from .. import templates
    from ..long_answer import long_answer_batch

    if reader != "generative":
        raise InputError("--mode long writes with a generator: it takes --reader generative")
    generator = load_generator(model or DEFAULT_READER, config.device, config.dtype,
                               reader_options.get("kind") or "auto", config=config)
    return functools.partial(long_answer_batch, generator=generator, n_passages=n_passages,
                             max_new_tokens=max_new_tokens, info={**generator.info, "seed": seed},
                             batch_size=batch_size, tpl=templates.load("long", prompt))


def asked_questions(reader, records: list[dict], questions: list[Question]) -> dict:
    """``asked=`` for a reader that takes it (the extractive one): per question read, the question the user
    asked, so a span naming an option's words ("Leonard Cohen" for "Hallelujah (Leonard Cohen song)") is not
    dropped as the question's own words; {} for a reader without it (plugins keep the protocol's signature)."""
    import inspect

    if all(q.option is None for q in questions) or "asked" not in inspect.signature(reader.read).parameters:
        return {}
    return {"asked": [str(records[q.record].get("question") or q.text) if q.option is not None else q.text
                      for q in questions]}


def answer_batch(records: list[dict], stage: AnswerStage, info: dict) -> list[dict]:
    """Answer ``records``. A served model whose server refuses a prompt as over its context, saying the context
    for the first time (a server that does not advertise it: llama-cpp-python's), has the batch read again, its
    passages fitted to what the server said (and counted at the characters a token its refusal showed), up to
    :data:`RETRIES_ON_CONTEXT` times while each refusal teaches cq more."""
    from ...models import served_context
    from ...models.api import ContextTooLong

    again = 0
    while True:
        before = served_context.version()
        try:
            return _answer_batch(records, stage, info)
        except ContextTooLong:
            again += 1
            if served_context.version() == before or again > RETRIES_ON_CONTEXT:  # nothing new learned: the error
                raise


RETRIES_ON_CONTEXT = 3  # readings again of a batch a server refused as over its context, each knowing more


def _answer_batch(records: list[dict], stage: AnswerStage, info: dict) -> list[dict]:
    c, reader = stage.config, stage.reader
    multi = c.mode == "multi"
    if c.mode == "dqs":
        questions = dq_questions(records, stage)
    else:
        questions = questions_of(records, c.mode, c.selected, c.revised_question)
    if c.mode == "cq":
        rerank_questions(questions, stage.cross_encoder, c.rerank_depth, c.n_passages, c.batch_size)
    if c.max_passage_tokens is not None:  # the evidence budget: passages in order, as many as fit
        for q in questions:
            q.passages = reader.evidence(q.text, q.passages, multi)
        note_counts(records, questions, c.mode)
    fit_inputs(records, questions, reader, c.mode)
    found = reader.read([q.text for q in questions], [q.passages for q in questions], multi=multi,
                        **asked_questions(reader, records, questions))
    for q, answers in zip(questions, found):
        q.answers = answers
    drop_unsupported(questions, c.min_rerank_score)
    per_record: list[list[dict]] = [[] for _ in records]
    for q in questions:
        for answer in q.answers[: None if multi else 1]:
            entry = dict(answer)
            if q.option is not None:
                entry.update(option=q.option, question=q.text, **({"option_passage": True} if q.own else {}))
            elif c.mode == "dqs":
                entry["question"] = q.text
            per_record[q.record].append(entry)
    pairs = None
    if c.refuel_round_trip:
        pairs = refuel_round_trip(records, questions, per_record, reader, stage.qd_writer, c.max_rounds, multi,
                                  c.round_trip_match)
    elif c.round_trip and c.mode not in ("cq", "dqs"):
        round_trip(questions, per_record, reader, c.max_rounds)
    if c.verify and c.verify_rule == "refuel":
        pairs = refuel_verify(records, questions, per_record, pairs, stage.verifier or reader, c.verify_threshold)
    elif c.verify:
        verify(questions, per_record, stage.verifier or reader)
    for n, (record, answers) in enumerate(zip(records, per_record)):
        if c.verify and c.verify_rule == "threshold":
            answers = [a for a in answers if a["verify_score"] >= c.verify_threshold]
        if c.mode == "dqs":
            fill_dqs(record, [q for q in questions if q.record == n])
            answers = distinct_answers(answers)
        record[ANSWERS] = mark_unmatched(record, answers)
        if c.refuel_round_trip:
            record[DQS] = pairs[n]
        set_meta(record, "answer", info)
    return records
