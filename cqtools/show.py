"""Records as text for people (``cq show``): question, passages, ambiguity, CQ, the user's pick,
disambiguations, answers, gold, errors."""
from __future__ import annotations

import textwrap
from dataclasses import dataclass

from .records import GUESS, LOW, answer_confidence, low_note
from .registry import option
from .show_tree import tree_lines


# What `cq show` adds after an answer that is a guess (cqtools.records.answer_confidence; nothing after a sure one).
GUESS_NOTES = {GUESS: "  (a guess: no passage clearly answers it)"}  # low: records.low_note


@dataclass(frozen=True)
class ShowSettings:
    """cq show's settings (its flags are generated from here)."""

    passages: int = option(3, "Passages to print per record.", min=0)


def _score(value) -> str:
    return f"{value:.3f}" if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value)


def render(record: dict, passages: int = ShowSettings.passages, gold: bool = False, as_tree: bool = False) -> str:
    """``record`` for people: ``passages`` of its passages, its gold only with ``gold``, its ToC tree drawn
    (instead of its disambiguations' list) with ``as_tree``."""
    lines = [f"[{record['id']}] {record.get('question', '')}"]
    hits = record.get("passages")
    for hit in hits[:passages] if isinstance(hits, list) and all(isinstance(h, dict) for h in hits) else []:
        text = textwrap.shorten(str(hit.get("text", "")), 90)
        # after `cq rerank` the cross-encoder's score is the one that ordered the passages
        score = hit.get("rerank_score", hit.get("score"))
        score = f"{score:7.3f}" if isinstance(score, (int, float)) else f"{'-':>7}"
        lines.append(f"    {hit.get('rank', '-'):>3}. {score}  {hit.get('title', '')}: {text}")
    amb = record.get("ambiguity")
    if isinstance(amb, dict):
        lines.append(f"    ambiguous: {amb.get('label')} (score {_score(amb.get('score'))}, {amb.get('method')})")
    cq = record.get("cq")
    if cq:
        form = ""
        if isinstance(cq, dict) and "valid" in cq:
            form = f"  ({'options: ' + '; '.join(map(str, cq.get('options') or [])) if cq['valid'] else 'free-form'})"
        lines.append(f"    clarify: {cq.get('text') if isinstance(cq, dict) else cq}{form}")
    elif isinstance(record.get("no_cq"), str):
        lines.append(f"    clarify: none: {record['no_cq']}")
    if record.get("selected_option") is not None:
        lines.append(f"    picked: {record['selected_option']}")
    if record.get("clarification_answer") is not None:
        lines.append(f"    user replied: {record['clarification_answer']}")
    drawn = tree_lines(record.get("tree")) if as_tree else []
    lines += drawn
    dqs = record.get("dqs") if not drawn else None
    for dq in dqs if isinstance(dqs, list) else []:
        if isinstance(dq, dict):
            lines.append(f"    reading: {dq.get('question')} -> {dq.get('answer')}")
    answers = record.get("answers")
    for answer in answers if isinstance(answers, list) else []:
        answer = answer if isinstance(answer, dict) else {"text": answer}
        option = f"{answer['option']}: " if answer.get("option") else ""
        level = answer_confidence(answer)
        note = f"  ({low_note(answer).replace(';', ':', 1)})" if level == LOW else GUESS_NOTES.get(level, "")
        lines.append(f"    answer: {option}{answer.get('text')}{note}")
    if answers == []:
        lines.append("    answer: none (no passage supports one)")
    if record.get("long_answer"):
        lines.append("    long answer: " + textwrap.shorten(str(record["long_answer"]), 200))
    if gold:
        lines += _gold(record.get("gold"))
    for stage, reason in (record.get("errors") or {}).items():
        lines.append(f"    error in {stage}: {reason}")
    return "\n".join(lines)


def _gold(gold) -> list[str]:
    """The gold a scorer compares with: ambiguity, answers, disambiguations, CQ."""
    if not isinstance(gold, dict):
        return []
    parts = []
    if gold.get("ambiguous") is not None:
        parts.append(f"ambiguous {gold['ambiguous']}")
    answers = gold.get("answers")
    if isinstance(answers, list) and answers:
        shown = [" / ".join(map(str, a)) if isinstance(a, list) else str(a) for a in answers[:5]]
        parts.append("answers " + "; ".join(shown) + (" ..." if len(answers) > 5 else ""))
    lines = [f"    gold: {', '.join(parts)}"] if parts else []
    for dq in gold.get("dqs") or []:
        if isinstance(dq, dict) and dq.get("question"):
            lines.append(f"    gold reading: {dq['question']}")
    if isinstance(gold.get("cq"), str):
        lines.append(f"    gold clarify: {gold['cq']}")
    return lines
