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

from ...models.roles import role
from ...records import distinct_texts
from .grounding import ground
from .. import templates
from ..prompts import reader_template
from .text import MULTI_STOP, SINGLE_STOP, clean_answer, passage_block, shown_passages, split_answers

DEFAULT_READER = role("reader").default


@dataclass
class ReaderOptions:
    """What the generative reader shows and how it answers (the ``cq answer`` options of the same names)."""

    n_passages: int = 3                # top passages shown to the reader (--passages)
    passage_chars: int = 600           # each passage's text cut at a word boundary before this many characters
    max_new_tokens: int = 16           # single answers; a multi list gets three times as many
    grounding: str = "span"            # span: snap answers to passage spans (see ground); none: as generated
    max_candidates: int = 30           # span grounding: spans scored when the generation is unusable
    prompt: str | None = None          # a template file replacing parts of templates/reader.txt (--prompt)

    def params(self) -> dict:
        """The options as written into ``meta.answer`` (``passages`` is ``n_passages``)."""
        keep = {"passages": self.n_passages, "passage_chars": self.passage_chars,
                "max_new_tokens": self.max_new_tokens, "grounding": self.grounding}
        if self.grounding == "span":
            keep["max_candidates"] = self.max_candidates
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
                                          **self._per_call)
            found = [split_answers(r) for r in raw]
        else:
            raw = self.generator.generate(prompts, max_new_tokens=o.max_new_tokens, chat=False, stop=SINGLE_STOP,
                                          **self._per_call)
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

    def verify(self, question: str, passages: list[dict], answers: list[str]) -> list[float]:
        """Summed log p(" answer" | passages + question) for each answer; the passages (prefix) are
        run once, their KV cache shared."""
        o = self.options
        prefix = self.template("verify_context", passages=passage_block(passages, o.n_passages, o.passage_chars)) \
            + "\n\n"
        prompts = [self.template("verify_query", question=question)] * len(answers)
        return self.generator.score(prompts, [" " + a for a in answers], prefix=prefix, **self._per_call)


def reader_options(options: dict) -> ReaderOptions:
    """The :class:`ReaderOptions` among ``options`` (others, and unset ones, ignored)."""
    names = {f.name for f in dataclasses.fields(ReaderOptions)}
    return ReaderOptions(**{k: v for k, v in options.items() if k in names and v is not None})


def generative_reader(model: str, kind: str, config, batch_size: int | None = None, **options) -> GenerativeReader:
    """Load ``model`` (cached per process) and read with it; ``options``: :class:`ReaderOptions`."""
    from ...models import load_generator

    return GenerativeReader(load_generator(model, config.device, config.dtype, kind), reader_options(options),
                            batch_size)
