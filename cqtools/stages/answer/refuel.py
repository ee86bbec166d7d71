"""REFUEL's extras for multiple answers: the round trip and LM verification (Gao et al. 2021).

``round_trip`` re-asks the question with each new answer's context until no new answer appears;
``verify`` scores log p(answer | passages + question) with a reader that can
(:class:`cqtools.protocols.AnswerVerifier`) and the stage drops weak pairs.
"""
from __future__ import annotations

from ...metrics.normalize import normalize_answer
from .questions import Question


def round_trip(questions: list[Question], per_record: list[list[dict]], reader, max_rounds: int) -> None:
    """REFUEL's round trip with a built-in rewrite: each new answer's question is re-asked as
    "Q [context]" (context: the title of the best passage containing the answer); answers never
    seen before are added, until a round adds none or ``max_rounds`` is reached."""
    base = {q.record: q for q in questions}
    seen = [{normalize_answer(a["text"]) for a in answers} for answers in per_record]
    new = [list(answers) for answers in per_record]
    for _ in range(max_rounds):
        asks: list[Question] = []
        for n, answers in enumerate(new):
            q = base[n]
            for answer in answers:
                context = _context(answer["text"], q.passages)
                if context and context.lower() not in q.text.lower():
                    ordered = sorted(q.passages, key=lambda p: p.get("title") != context)
                    asks.append(Question(n, f"{q.text} [{context}]", ordered))
        if not asks:
            return
        new = [[] for _ in per_record]
        found_lists = reader.read([a.text for a in asks], [a.passages for a in asks], multi=True)
        for ask, found in zip(asks, found_lists):
            for answer in found:
                key = normalize_answer(answer["text"])
                if key and key not in seen[ask.record]:
                    seen[ask.record].add(key)
                    entry = {**answer, "question": ask.text}
                    per_record[ask.record].append(entry)
                    new[ask.record].append(entry)
        if not any(new):
            return


def _context(answer: str, passages: list[dict]) -> str | None:
    key = normalize_answer(answer)
    for p in passages:
        if key and f" {key} " in f" {normalize_answer(p.get('text', ''))} ":
            return p.get("title") or None
    return None


def verify(questions: list[Question], per_record: list[list[dict]], reader) -> None:
    """Adds ``verify_score`` (rounded to 4 places) to every answer: the reader's score of the answer
    for the question it answered (an answer's own ``question``, else its record's first), over that
    question's passages; one verifier call per question."""
    by_text = {(q.record, q.text): q for q in questions}
    base = {}
    for q in questions:
        base.setdefault(q.record, q)
    groups: dict[int, list[tuple[Question, dict]]] = {}
    for n, answers in enumerate(per_record):
        for answer in answers:
            q = by_text.get((n, answer.get("question"))) or base[n]
            if answer.get("question") and q.text != answer["question"]:
                q = Question(n, answer["question"], q.passages)
                by_text[(n, q.text)] = q
            groups.setdefault(id(q), []).append((q, answer))
    for group in groups.values():
        q = group[0][0]
        scores = reader.verify(q.text, q.passages, [a["text"] for _, a in group])
        for (_, answer), score in zip(group, scores):
            answer["verify_score"] = round(score, 4)
