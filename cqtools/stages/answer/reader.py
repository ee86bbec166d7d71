"""The generative reader (``cq answer --reader generative``): a prompted Generator, span-grounded.

A reader answers questions from passages; the answer stage (:mod:`cqtools.stages.answer`) decides
which questions (the record's, or one per CQ option) and which passages (reranked per question in
cq mode), and calls :meth:`GenerativeReader.read`. The shape every reader has is
:class:`cqtools.protocols.Reader`; :meth:`GenerativeReader.verify` (REFUEL's LM verification) is
the optional :class:`cqtools.protocols.AnswerVerifier`.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ...records import distinct_texts
from ..evidence import fit, fit_prompt, prompt_room, token_counter
from ..options import beam_args
from .grounding import ground
from .. import templates
from ..prompts import reader_template
from .text import MULTI_STOP, SINGLE_STOP, clean_answer, passage_block, shown_passages, split_answers
from . import options as O
from .options import DEFAULT_READER, READER_PASSAGES, GenerativeOptions  # noqa: F401 (DEFAULT_READER re-exported)


@dataclass
class ReaderOptions:
    """What the generative reader shows and how it answers: the ``cq answer`` options of the same names
    (:class:`GenerativeOptions`), as a run reads them (``n_passages`` None: every passage given)."""

    n_passages: int | None = READER_PASSAGES
    passage_chars: int = O.passage_chars()
    max_new_tokens: int = O.answer_tokens()
    grounding: str = O.grounding()
    max_candidates: int = O.max_candidates()
    prompt: str | None = None
    max_passage_tokens: int | None = None
    passage_cut: str = O.passage_cut()
    num_beams: int = O.beams_option()

    def params(self) -> dict:
        """The options as written into ``meta.answer`` (``passages`` is ``n_passages``)."""
        keep = {"passages": self.n_passages, "passage_chars": self.passage_chars,
                "max_new_tokens": self.max_new_tokens, "grounding": self.grounding}
        if self.grounding == "span":
            keep["max_candidates"] = self.max_candidates
        if self.max_passage_tokens is not None:
            keep["max_passage_tokens"] = self.max_passage_tokens
            if self.passage_cut != "whole":
                keep["passage_cut"] = self.passage_cut
        if self.num_beams != 1:
            keep["num_beams"] = self.num_beams
        return keep


class GenerativeReader:
    """Prompts a Generator for answers and grounds them in the passages shown (:func:`ground`).

    ``batch_size`` is passed to every generate/score call (None: the generator's own); the shared,
    cached generator is never changed."""

    name = "generative"

    def __init__(self, generator, options: ReaderOptions | None = None, batch_size: int | None = None):
        self.generator = generator
        self.options = options if options is not None else ReaderOptions()
        self._per_call = {} if batch_size is None else {"batch_size": batch_size}
        self.batch_size = batch_size
        self.template = reader_template(self.options.prompt)
        self._beams = beam_args(generator, self.options.num_beams)  # an API model refuses beams here, in one line

    @property
    def info(self) -> dict:
        return dict(self.generator.info)

    @property
    def params(self) -> dict:
        return {**self.options.params(), **templates.meta(self.template)}

    def read(self, questions: list[str], passages: list[list[dict]], multi: bool = False) -> list[list[dict]]:
        """Answers ``{text, grounding, generated?}`` for each question, read from its passages.
        Single answers come from the few-shot completion prompt (no chat template); multi lists from
        a chat turn. With ``grounding="span"`` single answers are grounded by :func:`ground` (model
        scoring included), listed answers are only snapped (then deduplicated again)."""
        o = self.options
        part = "multi" if multi else "single"
        prompts = [self.template(part, passages=passage_block(ps, o.n_passages, o.passage_chars), question=q)
                   for q, ps in zip(questions, passages)]
        if multi:
            raw = self.generator.generate(prompts, max_new_tokens=o.max_new_tokens * 3, stop=MULTI_STOP,
                                          **self._per_call, **self._beams)
            found = [split_answers(r) for r in raw]
        else:
            raw = self.generator.generate(prompts, max_new_tokens=o.max_new_tokens, chat=False, stop=SINGLE_STOP,
                                          **self._per_call, **self._beams)
            found = [[clean_answer(r)] for r in raw]
        out = []
        for question, ps, prompt, texts in zip(questions, passages, prompts, found):
            if o.grounding != "span":
                answers = [{"text": t, "grounding": "none"} for t in texts]
            else:
                shown = shown_passages(ps, o.n_passages, o.passage_chars)
                scorer = None if multi else self.generator
                answers = [ground(t, question, shown, scorer, prompt, o.max_candidates, self.batch_size)
                           for t in texts]
            keys = distinct_texts(a["text"] for a in answers)
            out.append([next(a for a in answers if a["text"] == k) for k in keys])
        return out

    def evidence(self, question: str, passages: list[dict], multi: bool = False) -> list[dict]:
        """The passages this reader reads for ``question``: the top ``n_passages``, or with
        ``max_passage_tokens`` as many as fit that budget in order (:func:`cqtools.stages.evidence.fit`;
        the question counts toward it; 0: the model's input length less the prompt and the answer),
        each counted as the prompt shows it."""
        o = self.options
        if o.max_passage_tokens is None:
            return list(passages[:o.n_passages])
        count = token_counter(self.generator)
        budget, used = o.max_passage_tokens, count(question)
        if budget == 0:
            part = "multi" if multi else "single"
            budget = input_length(self.generator) - o.max_new_tokens * (3 if multi else 1)
            prompt = self.template(part, passages="", question=question)
            if multi and getattr(self.generator, "has_chat", False):  # multi lists are asked as a chat turn
                prompt = self.generator.chat_prompt(prompt)
            used = count(prompt)
        return fit(passages, budget, count, used, limit=o.n_passages,
                   render=lambda p: passage_block([p], 1, o.passage_chars) + "\n", cut=o.passage_cut == "last")

    def fit_input(self, question: str, passages: list[dict], multi: bool = False) -> tuple[list[dict], int]:
        """(passages, dropped): ``passages`` as given when the prompt :meth:`read` writes for ``question`` fits the
        model's input, else its shown passages less the last ones, dropped whole until it fits
        (:func:`cqtools.stages.evidence.fit_prompt`), so that the model layer never cuts the prompt's middle."""
        o = self.options
        room = prompt_room(self.generator, o.max_new_tokens * (3 if multi else 1))
        if room is None or not passages:
            return passages, 0
        part = "multi" if multi else "single"
        chat = multi and getattr(self.generator, "has_chat", False)  # multi lists are asked as a chat turn

        def build(ps):
            prompt = self.template(part, passages=passage_block(ps, None, o.passage_chars), question=question)
            return self.generator.chat_prompt(prompt) if chat else prompt

        shown = list(passages[:o.n_passages])
        _, dropped = fit_prompt(build, shown, room, token_counter(self.generator))
        return (shown[:len(shown) - dropped], dropped) if dropped else (passages, 0)

    def verify(self, question: str, passages: list[dict], answers: list[str], end: bool = False) -> list[float]:
        """Summed log p(" answer" | passages + question) for each answer; the passages (prefix) are
        run once, their KV cache shared. ``end``: the answer's end is scored too (REFUEL's LM
        verification scores the answer's tokens and its EOS): the newline that ends an answer line
        of the reader's prompt for a causal LM, the EOS a seq2seq model's target already ends with."""
        return self._score([(question, a) for a in answers], passages, end)

    def verify_pairs(self, pairs: list[tuple[str, str]], passages: list[dict]) -> list[float]:
        """log p(" answer" + its end | passages + question) for each (question, answer) pair over the
        same passages: one scoring call, the passages' KV cache shared (REFUEL's verification)."""
        return self._score(pairs, passages, end=True)

    def _score(self, pairs: list[tuple[str, str]], passages: list[dict], end: bool) -> list[float]:
        o = self.options
        prefix = self.template("verify_context", passages=passage_block(passages, o.n_passages, o.passage_chars)) \
            + "\n\n"
        close = "\n" if end and getattr(self.generator, "kind", "causal") != "seq2seq" else ""
        return self.generator.score([self.template("verify_query", question=q) for q, _ in pairs],
                                    [" " + a + close for _, a in pairs], prefix=prefix, **self._per_call)


def reader_options(options: dict) -> ReaderOptions:
    """The :class:`ReaderOptions` among ``options`` (others, and unset ones, ignored). With an
    evidence budget and no ``n_passages`` given, every passage that fits is read."""
    names = {f.name for f in dataclasses.fields(ReaderOptions)}
    out = ReaderOptions(**{k: v for k, v in options.items() if k in names and v is not None})
    if out.max_passage_tokens is not None and options.get("n_passages") is None:
        out.n_passages = None
    return out


def input_length(model) -> int:
    """The longest input ``model`` takes (its context, or --max-input-tokens when smaller): a served model's is
    what its server advertises, else cq's default with a note (cqtools/models/served_context.py); an InputError
    for a model that says nothing and is not served."""
    from ...errors import InputError
    from ...models.served_context import context_of

    context = context_of(model)
    if not isinstance(context, int):
        name = (getattr(model, "info", None) or {}).get("model", "this model")
        raise InputError(f"--max-passage-tokens 0 reads as many passages as fit the model's input, and {name} "
                         "does not say how long that is; give a number of tokens (e.g. --max-passage-tokens 4096)")
    cap = getattr(model, "input_cap", None)
    return min(context, cap) if isinstance(cap, int) else context


def generative_reader(options: GenerativeOptions, config, batch_size: int | None = None) -> GenerativeReader:
    """Load ``options.model`` (cached per process) and read with it."""
    from ...models.load import load_generator

    generator = load_generator(options.model, config.device, config.dtype, options.kind, config=config)
    return GenerativeReader(generator, reader_options(dataclasses.asdict(options)), batch_size)
