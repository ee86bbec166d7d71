""""No answer" when no passage supports one: answers read from a passage the reranker scored under a
floor are dropped (``cq answer --min-rerank-score``). The cross-encoder's score is a relevance logit:
under 0 it judges the passage irrelevant to the question asked, and an answer read from it is a guess
(the shipped reader always returns its best span, whatever the passage). An answer whose passage has
no ``rerank_score`` (passages not reranked) is kept: there is nothing to hold it to."""
from __future__ import annotations

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
