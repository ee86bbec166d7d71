"""AmbigQA's question disambiguation (``--method qd``): one minimal edit of the question per predicted answer
(``answers`` from ``cq answer --mode multi``), conditioned on the question, that answer, the other answers and the
passages. A record with one answer keeps the question as its only DQ (``"unchanged": true``); no answer gives no
DQ. By default (cq's own variant) the prompt shows the passages first, then question, answer and at most 5 other
answers; the top passages holding the answer are moved first; and a generation that echoes the question (or repeats
an earlier DQ, or is empty) is replaced by a built-in rewrite, "AQ (title of the passage holding the answer)?",
marked ``"fallback": true``. As AmbigQA's released model reads it (``--preset ambigqa``): ``layout="ambigqa"``
(target answer, question, other answers, passages), ``max_others=0`` (every other answer),
``passage_order="reranked"``, ``max_passage_tokens`` (passages in order up to the budget) and
``duplicates="keep"`` (a DQ stays as generated)."""
from __future__ import annotations

from dataclasses import dataclass

from ...metrics.normalize import normalize_answer
from ...records import PASSAGES, answer_texts, distinct_texts, require, snippets
from ...registry import non_default, option
from .. import prompts_disamb as P
from ..options import beam_args, beams_option
from ..templates import Template
from ..tree import answer_passage
from .parsing import (FIRST_REPEATED, NEED_PASSAGES, clean_question, model_option, passage_words_option,
                      passages_option, repeated_first, template_option, tokens_option)

NEED_ANSWERS = "run `cq answer --mode multi` first: --method qd writes one DQ per predicted answer"


@dataclass(frozen=True)
class QdOptions:
    """one minimal edit of the question per predicted answer (AmbigQA; needs cq answer --mode multi)"""

    model: str = model_option()
    n_passages: int = passages_option()
    passage_words: int = passage_words_option()
    max_new_tokens: int = tokens_option(40)
    prompt: str | None = template_option()
    layout: str = option("cq", "prompt order: cq (passages, question, answer, others), ambigqa (AmbigQA's released "
                               "input: target answer, question, other answers, passages) or refuel (REFUEL's: target "
                               "answer, question, passages; no other answers)", choices=("cq", "ambigqa", "refuel"))
    passage_order: str = option("answer-first", "answer-first (the shown passages holding the answer moved first), "
                                                "reranked (the record's order, as AmbigQA's paper) or first-repeated "
                                                "(the first passage over and over, as AmbigQA's released QD input; "
                                                "a `cq train qd` model reads the order it was trained with)",
                                choices=("answer-first", "reranked", FIRST_REPEATED))
    duplicates: str = option("fallback", "a DQ that echoes the question or an earlier DQ becomes 'AQ (title)?' "
                                         "(fallback) or stays as generated (keep, as AmbigQA)",
                             choices=("fallback", "keep"))
    max_others: int = option(5, "other answers in each prompt (0: all)", min=0)
    one_answer: str = option("keep", "a record with one answer: keep (its DQ is the question, as AmbigQA) or write "
                                     "(a DQ all the same, as REFUEL's round trip writes one for every answer)",
                             choices=("keep", "write"))
    max_passage_tokens: int | None = option(None, "passages in order (at most --passages) while the prompt's "
                                                  "question, answers and passages fit this many tokens [default: no "
                                                  "budget, the top --passages]", min=1)
    num_beams: int = beams_option()

    @property
    def new_tokens(self) -> int:
        return self.max_new_tokens

    def params(self) -> dict:
        """``meta.disambiguate``'s settings; of AmbigQA's input settings only those not at cq's default, so
        records made with the defaults stay as they were."""
        return {"method": "qd", "passages": self.n_passages, "passage_words": self.passage_words,
                "max_new_tokens": self.new_tokens,
                **non_default(self, "layout", "passage_order", "duplicates", "max_others", "max_passage_tokens",
                              "num_beams", "one_answer")}


def distinct_answers(record: dict) -> list[str]:
    """The record's predicted answers without repeats (normalised), stripped."""
    return [text.strip() for text in distinct_texts(answer_texts(record, NEED_ANSWERS))]


def dq_entry(question: str, answer: str, generation: str, passages: list[dict], seen: set[str],
             duplicates: str) -> dict:
    """The DQ ``{question, answer}`` a model wrote for one answer; with ``duplicates="fallback"`` an empty one or
    one repeating the question or an earlier DQ (``seen``, normalised) becomes :func:`fallback_question`'s, the
    generation kept. ``seen`` gains the DQ used."""
    dq = clean_question(generation)
    entry = {"question": dq, "answer": answer}
    if duplicates == "fallback" and (not normalize_answer(dq) or normalize_answer(dq) in seen):
        entry = {"question": fallback_question(question, answer, passages, seen), "answer": answer,
                 "fallback": True, "generated": generation.strip()}
    seen.add(normalize_answer(entry["question"]))
    return entry


def fallback_question(question: str, answer: str, passages: list[dict], used: set[str]) -> str:
    """The built-in rewrite: "AQ (context)?" where context is the title of the first passage
    holding the answer, or the answer itself when there is no such title (or it is taken)."""
    base = question.strip().rstrip("?").strip()
    passage = answer_passage(answer, passages)
    title = (passage or {}).get("title")
    for context in (title, answer):
        if not context:
            continue
        candidate = f"{base} ({context})?"
        if normalize_answer(context) not in normalize_answer(base) and normalize_answer(candidate) not in used:
            return candidate
    return f"{base} ({answer})?"


def qd_batch(records: list[dict], generator, config: QdOptions, tpl: Template | None = None) -> list[tuple[list[dict], int]]:
    """(dqs, model calls) per record: one prompt per predicted answer of a record with several.

    Each prompt conditions on the question, the target answer, the other answers (``max_others``
    of them, 0: all) and passages: the top ``n_passages`` with those holding the answer moved first
    (``passage_order="answer-first"``) or in the record's (reranked) order (``"reranked"``), and with
    ``max_passage_tokens`` only as many as fit that budget beside the question and answers
    (:func:`.evidence.fit`; the count per DQ goes to ``meta.passages_read.disambiguate``). A prompt still
    over the model's input drops its last passages (:func:`.evidence.fit_prompt`; counted per DQ in
    ``meta.passages_cut.disambiguate``). A DQ that echoes the question or an earlier DQ becomes "AQ (title)?"
    (``duplicates="fallback"``) or stays as generated (``"keep"``, as AmbigQA's released model writes it).
    ``num_beams``: the beam search."""
    from .. import evidence

    count = evidence.token_counter(generator) if config.max_passage_tokens else None
    jobs, per_record = _qd_jobs(records, config, tpl, count)
    calls = [0] * len(records)
    prompts, cuts = _qd_prompts(records, jobs, generator, config, tpl)
    beams, tokens = beam_args(generator, config.num_beams), config.new_tokens
    raw = generator.generate(prompts, max_new_tokens=tokens, chat=False, stop=["\n"], **beams) if prompts else []
    used_dqs: dict[int, set[str]] = {}
    read: dict[int, list[int]] = {}
    cut: dict[int, list[int]] = {}
    for (n, answer, _, shown, passages), generation, dropped in zip(jobs, raw, cuts):
        calls[n] += 1
        read.setdefault(n, []).append(len(shown))
        cut.setdefault(n, []).append(dropped)
        question = records[n]["question"]
        seen = used_dqs.setdefault(n, {normalize_answer(question)})
        per_record[n].append(dq_entry(question, answer, generation, passages, seen, config.duplicates))
    for n, record in enumerate(records):
        if count is not None:
            evidence.note_read(record, "disambiguate", read.get(n, []))
        evidence.note_cut(record, "disambiguate", cut.get(n, []))
    return list(zip(per_record, calls))


def _qd_jobs(records: list[dict], config: QdOptions, tpl, count) -> tuple[list[list], list[list[dict]]]:
    """The prompts to write, ``[record index, answer, others, passages shown, the record's passages]`` each, and
    the DQs of the records that need no prompt (one answer: the question unchanged)."""
    from .. import evidence

    jobs = []
    per_record: list[list[dict]] = [[] for _ in records]
    for n, record in enumerate(records):
        answers = distinct_answers(record)
        passages = list(require(record, PASSAGES, NEED_PASSAGES)) if config.n_passages else []
        if len(answers) == 1 and config.one_answer == "keep":
            per_record[n] = [{"question": record["question"], "answer": answers[0], "unchanged": True}]
            continue
        for answer in answers:
            others = [a for a in answers if a != answer]
            others = others[:config.max_others] if config.max_others else others
            if config.passage_order == "answer-first":
                holding = [p for p in passages if answer_passage(answer, [p])]
                ordered = holding + [p for p in passages if p not in holding]
            else:
                ordered = repeated_first(passages, config.passage_order)
            shown = ordered[: config.n_passages]
            if count is not None and shown:
                used = count(P.qd_prompt(record["question"], answer, others, [], tpl, config.layout))
                shown = evidence.fit(shown, config.max_passage_tokens, count, used,
                                     render=lambda p: snippets([p], 1, config.passage_words)[0])
            jobs.append([n, answer, others, shown, passages])
    return jobs, per_record


def _qd_prompts(records: list[dict], jobs: list[list], generator, config: QdOptions, tpl) -> tuple[list[str], list[int]]:
    """Each job's prompt (instruction, shots, query) and how many of its last passages were dropped to fit the
    model's input (:func:`.evidence.fit_prompt`); a job's passages shown become those kept."""
    from .. import evidence

    prefix = P.qd_prefix(tpl, config.layout)
    room = evidence.prompt_room(generator, config.new_tokens)
    count = evidence.token_counter(generator) if room is not None else None
    prompts, cuts = [], []
    for job in jobs:
        n, answer, others, shown, _ = job

        def build(ps, n=n, answer=answer, others=others):
            return prefix + P.qd_prompt(records[n]["question"], answer, others,
                                        snippets(ps, len(ps), config.passage_words), tpl, config.layout)

        prompt, dropped = evidence.fit_prompt(build, shown, room, count)
        job[3] = shown[:len(shown) - dropped]
        prompts.append(prompt)
        cuts.append(dropped)
    return prompts, cuts
