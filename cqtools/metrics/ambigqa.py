"""AmbigQA / REFUEL metrics: F1_ans, F1_BLEU and F1_EDIT-F1 (Min et al. 2020).

Follows the official ``ambigqa_evaluate_script.py``: every metric of a record is the maximum
over its annotations. Questions reach :func:`qg_scores` already tokenised and normalised
(tokens joined by single spaces): the official scorer runs the PTB tokenizer of pycocoevalcap
and then :func:`~cqtools.metrics.normalize.normalize_answer`; see
:mod:`cqtools.score.tokenizers` for the tokenizers.
"""
from __future__ import annotations

from collections import Counter
from typing import Callable, Sequence

from .bleu import coco_bleu
from .normalize import normalize_answer


def annotation_clusters(annotation: dict) -> list[list[str]]:
    """AmbigNQ annotation -> answer clusters: one for singleAnswer, one per QA pair otherwise."""
    if annotation["type"] == "singleAnswer":
        return [list(annotation["answer"])]
    return [list(pair["answer"]) for pair in annotation["qaPairs"]]


def is_multi(annotations: Sequence[dict]) -> bool:
    """A "multi" record has no singleAnswer annotation (the scorer's ``is_multi``)."""
    return bool(annotations) and not any(a["type"] == "singleAnswer" for a in annotations)


def matches(aliases, prediction) -> bool:
    """Normalised exact match of a prediction (a string or a list of strings) and any alias."""
    preds = prediction if isinstance(prediction, list) else [prediction]
    norm = {normalize_answer(a) for a in aliases}
    return any(normalize_answer(p) in norm for p in preds)


def set_f1(golds: Sequence, preds: Sequence, is_equal: Callable = matches) -> float:
    """The scorer's ``get_f1``: one-to-one greedy matching, gold items in order, each taking the
    first free prediction (in prediction order) equal to it; F1 of the matched shares.
    Zero when either side is empty."""
    if not golds or not preds:
        return 0.0
    used_gold = [False] * len(golds)
    used_pred = [False] * len(preds)
    for i, gold in enumerate(golds):
        for j, pred in enumerate(preds):
            if used_gold[i] or used_pred[j]:
                continue
            if is_equal(gold, pred):
                used_gold[i] = used_pred[j] = True
    recall = sum(used_gold) / len(golds)
    precision = sum(used_pred) / len(preds)
    return 2 * recall * precision / (recall + precision) if recall + precision > 0 else 0.0


def f1_answer(annotations: Sequence[dict], predictions: Sequence[str]) -> float:
    """F1_ans of one record: max over annotations of :func:`set_f1` against its clusters."""
    return max((set_f1(annotation_clusters(a), predictions) for a in annotations), default=0.0)


def edits(prompt: list[str], question: list[str]) -> list[str]:
    """Tokens deleted from the prompt question and added in ``question`` (multisets)."""
    common = Counter(prompt) & Counter(question)
    deleted = Counter(prompt) - common
    added = Counter(question) - common
    return ["[DELETED]" + t for t in _in_order(prompt, deleted)] + ["[ADDED]" + t for t in _in_order(question, added)]


def _in_order(tokens: list[str], keep: Counter) -> list[str]:
    keep = Counter(keep)
    out = []
    for token in reversed(tokens):  # the scorer removes the first occurrences of common tokens
        if keep[token] > 0:
            out.append(token)
            keep[token] -= 1
    return out[::-1]


def edit_f1(generated: str, references: Sequence[str], prompt: str) -> float:
    """EDIT-F1 of a generated question against its references (max over references).

    Inputs are tokenised, normalised strings. F1 between the multisets of edits relative to
    the prompt question; both without edits = 1, exactly one without edits = 0.
    """
    prompt_toks = prompt.split(" ")
    prediction = edits(prompt_toks, generated.split(" "))
    best = 0.0
    for reference in references:
        gold = edits(prompt_toks, reference.split(" "))
        if not gold and not prediction:
            best = 1.0
        elif gold and prediction:
            best = max(best, set_f1(gold, prediction, is_equal=lambda x, y: x == y))
    return best


def qg_scores(
    prompt: str,
    annotations: Sequence[dict],
    pred_pairs: Sequence[tuple[str, object]],
) -> dict:
    """F1_BLEU (BLEU-4) and F1_EDIT-F1 of one record's predicted question-answer pairs.

    ``annotations``: the record's annotations, with each qaPair's "question" replaced by the
    list of its tokenised references (the gold DQ split on "|"). ``pred_pairs``: (tokenised
    question, answer). Only (gold pair, predicted pair) with matching answers count; they
    are picked greedily by score without overlap; value = 2 * sum / (#gold + #pred pairs).
    Max over multipleQAs annotations; 0 when there is none or no predicted pair.
    """
    best = {"f1_bleu": 0.0, "f1_edit_f1": 0.0}
    for annotation in annotations:
        if annotation["type"] != "multipleQAs" or not pred_pairs:
            continue
        pairs = annotation["qaPairs"]
        matching = []
        for i, pair in enumerate(pairs):
            for j, (question, answer) in enumerate(pred_pairs):
                if matches(pair["answer"], answer):
                    refs = pair["question"] or [""]
                    matching.append((i, j, {
                        "f1_bleu": coco_bleu(question, refs)[3],
                        "f1_edit_f1": edit_f1(question, refs, prompt),
                    }))
        for metric in best:
            ranked = sorted(matching, key=lambda m: m[2][metric], reverse=True)
            used_gold, used_pred, total = set(), set(), 0.0
            for i, j, values in ranked:
                if i in used_gold or j in used_pred:
                    continue
                used_gold.add(i)
                used_pred.add(j)
                total += values[metric]
            best[metric] = max(best[metric], 2 * total / (len(pairs) + len(pred_pairs)))
    return best
