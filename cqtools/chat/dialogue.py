"""The dialogue of a chat session: :func:`pick`, :func:`chat_loop`, :func:`replay_loop` and
:func:`study_loop` talk to a :class:`Terminal` and append each finished turn to a TurnLog."""
from __future__ import annotations

import random
from typing import Iterable, Protocol

import orjson

from ..errors import CQError
from ..records import ANSWERS, set_meta
from ..stages.options import CommandSettings
from .session import OTHER, SHOW_ALL, Session, TurnLog, options_of, render_answers, render_cq

# --- the dialogue -------------------------------------------------------------------------------

class Terminal(Protocol):
    """What the dialogue needs from a terminal: ``read`` raises EOFError at the end of input
    (Ctrl-D, or the end of a script)."""

    def read(self, prompt: str) -> str: ...

    def write(self, line: str = "") -> None: ...

    def mark(self, text: str) -> str: ...


def pick(term: Terminal, options: list[str], prompt: str = "pick> ", show_all: bool = True) -> tuple[str, str | None]:
    """The person's choice among ``options`` + other (+ show all): (choice, selected). A number or
    an option's text picks it; "other" (or its number) asks for a text."""
    n = len(options)
    while True:
        reply = term.read(prompt).strip()
        number = int(reply) if reply.isdigit() else None
        by_text = [o for o in options if o.lower() == reply.lower()]
        if number is not None and 1 <= number <= n:
            return "option", options[number - 1]
        if by_text:
            return "option", by_text[0]
        if number == n + 1 or reply.lower() in ("other", "o"):
            while True:
                typed = term.read("your interpretation> ").strip()
                if typed:
                    return "other", typed
        if show_all and (number == n + 2 or reply.lower() in ("all", "a", "show all answers")):
            return "all", None
        term.write(f"type a number from 1 to {n + 2 if show_all else n + 1}")


def clarify_and_answer(session: Session, term: Terminal, record: dict) -> dict:
    """Show the turn's CQ (if any), take the person's choice, answer and show the answers."""
    options = options_of(record)
    if options:
        for line in render_cq(record, options):
            term.write(line)
        choice, selected = pick(term, options)
    else:
        if record.get("cq") is not None:
            term.write("(the question looks ambiguous, but no clarifying question with options came out: "
                       "answering it directly)")
        elif isinstance(record.get("no_cq"), str):
            term.write(f"(no clarifying question: {record['no_cq']})")
        choice, selected = "direct", None
    record = session.answer(record, choice, selected)
    for line in render_answers(record, term.mark):
        term.write(line)
    return record


def chat_loop(session: Session, term: Terminal, log: TurnLog) -> None:
    """Questions until the end of input; each finished turn is appended to ``log``. Ctrl-C during a
    turn (a stage working, or the pick prompt) cancels that turn and returns to the question prompt;
    Ctrl-C at the question prompt (or while a cancelled turn is being dropped) ends the session."""
    while True:
        question = term.read("question> ").strip()
        if not question:
            continue
        try:
            record = session.ask(_question_of(question))
            record = clarify_and_answer(session, term, record)
        except CQError as err:  # a question a stage refuses: say why, keep the session
            if getattr(term, "scripted", False):  # the script's next lines were written for this turn: stop
                raise CQError(f"{term.where()}: {err}; a --script session stops at a turn that fails, since the "
                              f"lines after it were written for that turn") from None
            term.write(f"error: {err}")
            continue
        except KeyboardInterrupt:  # this turn only; the next Ctrl-C, at the prompt, ends the session
            term.write()
            term.write("(cancelled)")
            continue
        log.write(record)
        term.write()


def replay_loop(session: Session, term: Terminal, log: TurnLog, turns: Iterable[tuple[dict, str, str | None]]) -> None:
    """Each logged turn again through this session's stages, with the person's recorded choice: a
    recorded option still offered is picked, any other interpretation is taken as typed ("other");
    "show all answers" and direct answers are repeated; a turn answered directly before that now gets
    a CQ is answered for every option (there is no choice to repeat)."""
    for question, choice, selected in turns:
        term.write(f"question> {question['question']}")
        record = session.ask(question)
        options = options_of(record)
        if options:
            for line in render_cq(record, options):
                term.write(line)
        if choice in ("option", "other") and selected is not None:
            matches = [o for o in options if o.lower() == str(selected).lower()]
            choice, selected = ("option", matches[0]) if matches else ("other", str(selected))
            term.write(f"pick> {selected}" if choice == "option" else f"pick> other: {selected}")
        elif options and choice != "all":
            choice = "all"
            term.write("pick> (no recorded choice: show all answers)")
        elif not options:
            choice, selected = "direct", None
        record = session.answer(record, choice, selected)
        for line in render_answers(record, term.mark):
            term.write(line)
        log.write(record)
        term.write()


def _question_of(line: str) -> str | dict:
    """A typed line is the question; a line holding a JSON object is a question record (its id and
    gold kept, so a scripted session can be scored)."""
    if line.startswith("{"):
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError:
            return line
        if isinstance(value, dict):
            return value
    return line


# --- study mode (AskCQ-style human evaluation) -----------------------------------------------------

PRESENTATIONS = ("cq", "answers")


def study_loop(session: Session, term: Terminal, log: TurnLog, questions: Iterable[dict], seed: int = CommandSettings.seed) -> None:
    """For each question: the CQ presentation (pick, then the answer) and the multiple-answers
    presentation (every option's answer), in an order drawn from ``seed``; the person says which
    helped more. The record holds the CQ, the option picked, every option's answers and
    ``study: {order, preferred, cq_answers}`` (preferred: "cq", "answers" or "same")."""
    rng = random.Random(seed)
    questions = list(questions)
    for n, question in enumerate(questions, start=1):
        term.write(f"[{n}/{len(questions)}] question: {question['question']}")
        record = session.ask(question)
        options = options_of(record)
        if not options:
            term.write("(no clarifying question with options came out for this question: skipped)")
            record = session.answer(record, "direct")
            record["study"] = {"order": None, "preferred": None, "skipped": "no CQ options"}
            log.write(record)
            term.write()
            continue
        order = list(PRESENTATIONS)
        rng.shuffle(order)
        shown: dict = {}
        for label, presentation in zip("AB", order):
            term.write(f"--- presentation {label}")
            if presentation == "cq":
                for line in render_cq(record, options)[:-1]:  # no "show all answers": that is the other one
                    term.write(line)
                choice, selected = pick(term, options, show_all=False)
                done = session.answer(dict(record), choice, selected)
                shown["cq"] = (choice, selected, done[ANSWERS])
                for line in render_answers(done, term.mark):
                    term.write(line)
            else:
                done = session.answer(dict(record), "all")
                shown["answers"] = done
                for line in render_answers(done, term.mark):
                    term.write(line)
        preferred = _preference(term, order)
        choice, selected, cq_answers = shown["cq"]
        record = shown["answers"]
        record["selected_option"] = selected
        if choice == "other":
            record["clarification_answer"] = selected
        record["study"] = {"order": order, "preferred": preferred, "cq_choice": choice, "cq_answers": cq_answers}
        set_meta(record, "chat", {"choice": "study", **session.opts.stage_options(), "seed": seed})
        log.write(record)
        term.write()


def _preference(term: Terminal, order: list[str]) -> str:
    term.write("which helped you more?  1) A  2) B  3) no difference")
    while True:
        reply = term.read("prefer> ").strip().lower()
        if reply in ("1", "a"):
            return order[0]
        if reply in ("2", "b"):
            return order[1]
        if reply in ("3", "same", "="):
            return "same"
        term.write("type 1, 2 or 3")
