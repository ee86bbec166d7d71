"""Disambiguation stage: ``dqs: [{question, answer, ...}]`` per record; one module per method (qd,
disambig-first, rac; ToC's released loop is :mod:`cqtools.stages.toc.run`).

Methods:
  qd   AmbigQA question disambiguation: one minimal edit of the prompt question per predicted
       answer (``answers`` from ``cq answer --mode multi``), conditioned on the question, that
       answer, the other answers and the passages. A record with one answer keeps the question as
       its only DQ (``"unchanged": true``); no answer gives no DQ. By default (cq's own variant) the
       prompt shows the passages first, then question, answer and at most 5 other answers; the top
       passages holding the answer are moved first; and a generation that echoes the question (or
       repeats an earlier DQ, or is empty) is replaced by a built-in rewrite, "AQ (title of the
       passage holding the answer)?", marked ``"fallback": true``. As AmbigQA's released model
       reads it (``--preset ambigqa``): ``layout="ambigqa"`` (target answer, question, other answers,
       passages), ``max_others=0`` (every other answer), ``passage_order="reranked"``,
       ``max_passage_tokens`` (passages in order up to the budget) and ``duplicates="keep"`` (a DQ
       stays as generated).
  disambig-first  AmbigQA's DISAMBIG-FIRST baseline, steps 1-2: a question ``cq detect`` labelled
       ambiguous is rewritten into its readings closed-book (no passages, no answers); any other
       keeps its question as its one DQ. DQs carry no answer (step 3: ``cq answer --mode dqs``).
  rac  Tree of Clarifications' retrieval-augmented clarification: a few-shot prompt (k shots
       picked by question similarity, :mod:`.shots`) with the top passages, answered by a list of
       "DQ? Answer: A" lines. ``tree`` expands every DQ again with the record's passages
       reranked for it (:mod:`.tree`); ``prune`` asks the model whether each node's answer could
       answer the original question, given the best passage holding that answer (log p(" True")
       against log p(" False")), and drops the nodes it rejects. The tree is written to the record
       (``tree``) and ``dqs`` are its surviving nodes in BFS order. With ``reuse_tree`` (CLI
       ``--reuse-tree``) prune reads the tree an earlier ``--tree`` run wrote into the record
       (grown with the same settings, checked against its ``meta.disambiguate``) instead of growing
       it again; each node's passages are reranked again as growth did, so the records are those of
       growing and pruning in one run (``meta.disambiguate.reused_tree`` marks them).

Every LLM prompt (a generation or a True/False verification) counts as one model call; the count
is written to ``meta.disambiguate.model_calls`` per record (ToC promises fewer than 20).
"""
from __future__ import annotations

from typing import Callable

from .disambig_first import DisambigFirstOptions, disambig_first_batch, parse_readings
from .parsing import DEFAULT_MODEL, DQS, NEED_PASSAGES, TREE, clean_question, clean_short, parse_pairs
from .qd import NEED_ANSWERS, QdOptions, distinct_answers, fallback_question, qd_batch
from .rac import Clarifier, RacOptions, grown_tree, rac_batch

__all__ = ["DEFAULT_MODEL", "DQS", "TREE", "NEED_PASSAGES", "NEED_ANSWERS", "QdOptions", "RacOptions",
           "DisambigFirstOptions", "Clarifier", "build", "clean_question", "clean_short", "parse_pairs",
           "parse_readings", "distinct_answers", "fallback_question", "qd_batch", "disambig_first_batch", "rac_batch",
           "grown_tree"]


def build(method: str = "rac", config=None, **options) -> Callable[[list[dict]], list[dict]]:
    """The disambiguate stage as a batch function (records -> records); ``options`` are the method's
    (its schema in the DISAMBIGUATORS registry: n_passages, tree, prune, ...; a misspelled one is an
    error), ``seed`` and ``batch_size`` among them."""
    from ...registry import DISAMBIGUATORS
    from ..common import stage_fn

    return stage_fn(None, "disambiguate", method, DISAMBIGUATORS, config, options, None)
