"""``cq convert chat-log``: the turns of a ``cq chat --log`` file in CAmbigNQ's layout, so real
interactions can train or test a CQ writer. One item per turn where a clarifying question was asked
and the person picked an option or typed their own reading:

``{"id", "question", "clarification_question", "dqs": [the question revised by the pick (AskCQ's
"AQ revised by CQ")], "clarification_answers": [[the answer the person got]], "passages": [{id,
title, text}] the reader read, "selected_option", "typed": whether the person typed it, "answer"}``.

``dqs`` and ``clarification_answers`` hold the one reading the person chose, aligned as in
CAmbigNQ's cq_train.json, so ``cq convert cambignq`` reads the file back as questions with gold.
Turns with no CQ, or answered for every option or for the question itself, have no pick: they are
left out and counted on stderr."""
from __future__ import annotations

import logging
from typing import Iterator

from ..errors import InputError
from ..records import read_cq

log = logging.getLogger("cqtools")


def _answer_for(record: dict, selected: str) -> str | None:
    """The text of the answer given for ``selected`` (the first answer when none names it)."""
    answers = [a if isinstance(a, dict) else {"text": a} for a in record.get("answers") or []]
    for answer in answers:
        if str(answer.get("option") or "").strip().lower() == selected.strip().lower():
            return str(answer.get("text") or "")
    return str(answers[0].get("text") or "") if answers else None


def cambignq_item(record: dict) -> dict | None:
    """One logged turn in CAmbigNQ's layout, or None when the person picked no reading."""
    from ..stages.answer import revised_question

    selected = record.get("selected_option")
    if record.get("cq") is None or not isinstance(selected, str) or not selected.strip():
        return None
    text, category, _ = read_cq(record["cq"], record.get("id"))
    answer = _answer_for(record, selected)
    passages = [{k: p.get(k) for k in ("id", "title", "text")} for p in record.get("passages") or []
                if isinstance(p, dict)]
    return {"id": str(record["id"]), "question": record["question"], "clarification_question": text,
            "dqs": [revised_question(record["question"], category, selected)],
            "clarification_answers": [[answer] if answer else []], "passages": passages,
            "selected_option": selected, "typed": record.get("clarification_answer") is not None,
            "answer": answer}


def chat_log_items(path: str) -> Iterator[dict]:
    """CAmbigNQ items of the turns of the chat log at ``path`` (see the module docstring)."""
    from .session import read_log

    left_out = 0
    for n, record in enumerate(read_log(path), start=1):
        try:
            item = cambignq_item(record)
        except InputError as err:
            raise InputError(f"{err.message}; is {path} a cq chat --log file?", where=f"{path} turn {n}") from None
        if item is None:
            left_out += 1
            continue
        yield item
    if left_out:
        log.info("convert chat-log: %d turn(s) left out: no clarifying question, or no reading picked", left_out)


# Formats that write another dataset's layout (not cq records): no --join, no --silver-cq (cq convert)
LAYOUT_FORMATS = {"chat-log": chat_log_items}
DESCRIPTIONS = {
    "chat-log": "cq chat --log FILE -> CAmbigNQ's layout (question, CQ, the picked reading as its DQ and the answer "
                "given, passages); cq convert cambignq reads it back",
}
