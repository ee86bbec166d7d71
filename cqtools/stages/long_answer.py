"""Long answers (``cq answer --mode long``): Tree of Clarifications' answer generation.

The model reads the ambiguous question, up to ``max_dqs`` disambiguations (the record's ``dqs``
from ``cq disambiguate``, in BFS order) and up to ``n_passages`` passages that contain one of
their answers, each cut to ``passage_words`` words, and writes ``long_answer``. When fewer than ``min_dqs`` disambiguations survived
``--prune``, the pruned nodes of the record's ``tree`` come back, in BFS order ("undoing the
pruning"), so that the answer still covers several readings. With no answer-containing passage
the top passages are shown instead. What was used is written to ``meta.answer`` per record.
"""
from __future__ import annotations

import logging

from ..errors import InputError
from ..records import PASSAGES, set_meta, snippets
from . import prompts_disamb as P, templates
from .templates import Template
from .tree import answer_passage

LONG_ANSWER = "long_answer"
NEED_DQS = "run `cq disambiguate` first (cq disambiguate --method rac [--tree] | cq answer --mode long)"
log = logging.getLogger("cqtools")
PASSAGE_WORDS = 80  # each passage cut to its first this-many words


def select_dqs(record: dict, max_dqs: int = 10, min_dqs: int = 2) -> tuple[list[tuple[str, str]], int]:
    """(question, answer) pairs for the prompt, and how many pruned tree nodes were restored."""
    dqs = record.get("dqs")
    if dqs is None:
        raise InputError(f"record {record.get('id')} has no 'dqs'; {NEED_DQS}", record_id=record.get("id"))
    if not isinstance(dqs, list) or not all(isinstance(d, dict) for d in dqs):
        raise InputError(f"record {record.get('id')}: 'dqs' must be a list of {{question, answer}} objects "
                         f"(from cq disambiguate)", record_id=record.get("id"))
    pairs = [(str(d.get("question") or ""), str(d.get("answer") or "")) for d in dqs]
    pairs = [(q, a) for q, a in pairs if q and a]
    restored = 0
    tree = record.get("tree")
    if len(pairs) < min_dqs and isinstance(tree, list):
        have = {q for q, _ in pairs}
        for node in tree:  # the tree is written in BFS order
            if isinstance(node, dict) and node.get("pruned") and node.get("answer") and node.get("question") not in have:
                pairs.append((str(node["question"]), str(node["answer"])))
                restored += 1
    return pairs[:max_dqs], restored


def pick_passages(passages: list[dict], answers: list[str], n: int) -> tuple[list[dict], bool]:
    """Up to ``n`` passages holding one of ``answers`` (passage order); the top ``n`` when none does.
    The flag says whether they hold answers."""
    holding = [p for p in passages if any(answer_passage(a, [p]) for a in answers)]
    return (holding[:n], True) if holding else (passages[:n], False)


def written_by_another_stage(record: dict) -> str | None:
    """The stage that wrote ``record``'s long answer when it was not ``cq answer --mode long`` (ToC's released
    loop, ``cq disambiguate --method toc``, writes its own): that answer is the method's output and is kept."""
    meta = record.get("meta")
    by = (meta.get("answer") or {}).get("by") if isinstance(meta, dict) and isinstance(meta.get("answer"), dict) \
        else None
    return by if record.get(LONG_ANSWER) and isinstance(by, str) and not by.startswith("answer") else None


_SAID: set[str] = set()


def _say_kept(records: list[dict]) -> None:
    by = written_by_another_stage(records[0])
    if by not in _SAID:
        _SAID.add(by)
        log.warning(f"answer: kept the long answer `cq {by}` wrote (record {records[0].get('id')} and every other "
                    "that has one): a later stage does not replace a method's own output; delete the key first "
                    "(jq -c 'del(.long_answer)') to write cq's long answer instead")


def long_answer_batch(records: list[dict], generator, *, n_passages: int, max_new_tokens: int, max_dqs: int = 10,
                      min_dqs: int = 2, passage_words: int = PASSAGE_WORDS, info: dict | None = None,
                      batch_size: int | None = None, tpl: Template | None = None) -> list[dict]:
    """Add ``long_answer`` to each record (one prompt per record, one generate call per batch, in
    batches of ``batch_size`` when given); ``n_passages`` and ``max_new_tokens`` are ``cq answer --mode long``'s
    (their defaults: :class:`cqtools.stages.answer.options.LongOptions`)."""
    prompts, used = [], []
    kept = [r for r in records if written_by_another_stage(r)]
    if kept:
        _say_kept(kept)
    todo = [r for r in records if not written_by_another_stage(r)]
    for record in todo:
        pairs, restored = select_dqs(record, max_dqs, min_dqs)
        record_passages = record.get(PASSAGES) or []
        shown, holding = pick_passages(record_passages, [a for _, a in pairs], n_passages)
        prompts.append(P.long_prompt(str(record["question"]), pairs, snippets(shown, n_passages, passage_words), tpl))
        used.append({"dqs_used": len(pairs), "restored_pruned": restored,
                     "passage_ids": [str(p.get("id")) for p in shown], "answer_passages": holding})
    tokens = max_new_tokens
    per_call = {} if batch_size is None else {"batch_size": batch_size}
    raw = generator.generate(prompts, max_new_tokens=tokens, stop=["\nQuestion:", "Disambiguations:"],
                             **per_call) if prompts else []
    base = {**(info or {}), "mode": "long", "max_dqs": max_dqs, "min_dqs": min_dqs, "passages": n_passages,
            "max_new_tokens": tokens, **(templates.meta(tpl) if tpl else {})}
    for record, text, extra in zip(todo, raw, used):
        record[LONG_ANSWER] = " ".join(text.split())
        set_meta(record, "answer", {**base, **extra})
    return records
