""""No answer" when no passage supports one: answers read from a passage the reranker scored under a
floor are dropped (``cq answer --min-rerank-score``). The cross-encoder's score is a relevance logit:
under 0 it judges the passage irrelevant to the question asked, and an answer read from it is a guess
(the shipped reader always returns its best span, whatever the passage). An answer whose passage has
no ``rerank_score`` (passages not reranked) is kept: there is nothing to hold it to.

And an answer whose question names something none of its record's passages mentions is marked (``unmatched``:
:func:`mark_unmatched`), which makes a sure span a low-confidence reading (records.answer_confidence)."""
from __future__ import annotations

import re

from ...records import PASSAGES
from ...registry import option


def min_rerank_option():
    return option(None, "no answer from a passage the reranker scored under this (cq mode: reranked for the option's "
                        "question) [default: no floor]")


def supported(answer: dict, rerank: dict, floor: float) -> bool:
    score = rerank.get(answer.get("passage_id"))
    return not isinstance(score, (int, float)) or score >= floor


def drop_unsupported(questions, floor: float | None) -> None:
    """Each question's answers without those read from a passage scoring under ``floor``."""
    if floor is None:
        return
    for q in questions:
        rerank = {p.get("id"): p.get("rerank_score") for p in q.passages}
        q.answers = [a for a in q.answers if supported(a, rerank, floor)]


# Words a question is framed with rather than about (function words, wh-words, common verbs and the kinds of
# work or time a question names): never asked of a passage by unmatched_words.
FRAME_WORDS = frozenset("""
a an the of in on at to for from by with about into over under after before between during through and or but nor not
no is are was were be been being am do does did done has have had having will would shall should can could may might
must who whom whose what which when where why how that this these those it its there their they them he she his her
him you your we our us me my one ones as than then so if also any all some many much more most other such own same
very just only first last new old name named called get got make made go went come came take took give gave know
known said says say use used play played plays become became sang sing sings sung singer wrote write writes written
writer long kind type types happen happened happens next movie film song show series episode season book novel album
band group live lives lived die died start starts started begin begins began end ends ended time times year years
date day days place part number people person word mean means meaning stand stands real actually originally original
currently current today now""".split())
WORDS = re.compile(r"[a-z0-9]+")
PREFIX = 4  # a word is held by a passage that has a word beginning with its first 4 letters ("boil" of "boiling")


def unmatched_words(question: str, passages: list[dict]) -> list[str]:
    """The question's words (4 letters or more, not FRAME_WORDS) that none of ``passages`` holds (title or text,
    matched on their first letters): what the question asks about and its passages never mention ("mercury", when
    the passages are about water). A span the reader scores over "no answer here" is then only a low-confidence
    reading (``unmatched`` on the answer, :func:`mark_unmatched`; :func:`cqtools.records.answer_confidence`).
    Measured on held-out dev questions in docs/benchmarks/first-contact.md."""
    held = {w[:PREFIX] for p in passages for w in WORDS.findall(f"{p.get('title', '')} {p.get('text', '')}".lower())}
    out = []
    for word in WORDS.findall(question.lower()):
        if len(word) >= PREFIX and word not in FRAME_WORDS and word[:PREFIX] not in held and word not in out:
            out.append(word)
    return out


def mark_unmatched(record: dict, answers: list[dict]) -> list[dict]:
    """``answers`` (a record's spans) with ``unmatched``: what its question names that none of the record's passages
    mentions (every passage it holds, not only the ones an option's reading read: "city" of "Which city hosted the
    Summer Olympics in the 2000s?" is in one of them)."""
    if not any(a.get("grounding") == "span" for a in answers):
        return answers
    passages = [p for p in record.get(PASSAGES) or [] if isinstance(p, dict)]
    unmatched = unmatched_words(str(record.get("question") or ""), passages)
    return [{**a, "unmatched": unmatched} if unmatched and a.get("grounding") == "span" else a for a in answers]
