"""ASQA long-answer metrics (Stelmakh et al. 2022; used by Tree of Clarifications).

Follows google-research/language ``asqa/scoring.py``: ROUGE-L is rougeLsum with the Porter
stemmer over lowercased text split into sentences (one per line), the better of the two
references per example; STR-EM is the share of QA pairs with a normalised short answer inside
the normalised long answer; Disambig-F1 is the token F1 of a reader's answer to each
disambiguated question (read from the long answer) against the short answers; DR combines them.
"""
from __future__ import annotations

import math
from typing import Callable, Sequence

from .normalize import any_alias_in, token_f1

SentenceSplitter = Callable[[str], list[str]]


def rouge_text(text: str, split_sentences: SentenceSplitter) -> str:
    """Lowercase, one sentence per line (what rougeLsum reads)."""
    return "\n".join(split_sentences(text.lower()))


def rouge_lsum(prediction: str, references: Sequence[str], scorer, split_sentences: SentenceSplitter) -> float:
    """Best rougeLsum F-measure of ``prediction`` over ``references`` (``scorer`` is a
    ``rouge_score.rouge_scorer.RougeScorer(["rougeLsum"], use_stemmer=True)``)."""
    hyp = rouge_text(prediction, split_sentences)
    return max((scorer.score(rouge_text(ref, split_sentences), hyp)["rougeLsum"].fmeasure for ref in references),
               default=0.0)


def str_em(long_answer: str, answer_sets: Sequence[Sequence[str]], count_empty: bool = True) -> float | None:
    """Share of QA pairs with any short answer in the long answer (None without QA pairs).

    ``count_empty`` (ASQA's ``_exact_presence``, the default): a short answer that normalises to
    "" ("The") is found in every long answer; False ignores such answers (``--str-em cq``).
    """
    if not answer_sets:
        return None
    return sum(any_alias_in(aliases, long_answer, count_empty) for aliases in answer_sets) / len(answer_sets)


def disambig_f1(reader_answers: Sequence[str], answer_sets: Sequence[Sequence[str]]) -> float | None:
    """Mean over QA pairs of the best token F1 between the reader's answer and a short answer."""
    if not answer_sets:
        return None
    total = 0.0
    for answer, aliases in zip(reader_answers, answer_sets):
        total += max((token_f1(alias, answer) for alias in aliases), default=0.0)
    return total / len(answer_sets)


def dr_score(disambig: float | None, rouge_l: float | None) -> float | None:
    """DR = sqrt(Disambig-F1 x ROUGE-L) (both on the same scale, e.g. percentages)."""
    if disambig is None or rouge_l is None:
        return None
    return math.sqrt(disambig * rouge_l)
