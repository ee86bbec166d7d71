"""Records as text for people (``cq show``): question, passages, ambiguity, CQ, answers, errors."""
from __future__ import annotations

import textwrap


def render(record: dict, passages: int) -> str:
    lines = [f"[{record['id']}] {record.get('question', '')}"]
    hits = record.get("passages")
    for hit in hits[:passages] if isinstance(hits, list) and all(isinstance(h, dict) for h in hits) else []:
        text = textwrap.shorten(str(hit.get("text", "")), 90)
        score = hit.get("score")
        score = f"{score:7.3f}" if isinstance(score, (int, float)) else f"{'-':>7}"
        lines.append(f"    {hit.get('rank', '-'):>3}. {score}  {hit.get('title', '')}: {text}")
    amb = record.get("ambiguity")
    if isinstance(amb, dict):
        lines.append(f"    ambiguous: {amb.get('label')} (score {amb.get('score')}, {amb.get('method')})")
    cq = record.get("cq")
    if cq:
        lines.append(f"    clarify: {cq.get('text') if isinstance(cq, dict) else cq}")
    answers = record.get("answers")
    for answer in answers if isinstance(answers, list) else []:
        answer = answer if isinstance(answer, dict) else {"text": answer}
        option = f"{answer['option']}: " if answer.get("option") else ""
        lines.append(f"    answer: {option}{answer.get('text')}")
    if record.get("long_answer"):
        lines.append("    long answer: " + textwrap.shorten(str(record["long_answer"]), 200))
    for stage, reason in (record.get("errors") or {}).items():
        lines.append(f"    error in {stage}: {reason}")
    return "\n".join(lines)
