"""Prompts of the LLM methods of ``cq detect`` (``llm``), ``cq gen-cq`` (``llm``) and the generative
reader, rendered from cq's templates (``templates/detect_llm.txt``, ``gencq_llm.txt``, ``reader.txt``).

The formats follow the published methods (CLAM's "This question is ambiguous: True/False" few-shot
prompt and its zero-shot clarifying-question prompt; the CAmbigNQ construction prompt
"Which [category]: A, B, or C?"). The wording and the example questions are our own; the facts in
them are well-known public ones. Each function takes the template (``--prompt FILE`` through
:func:`templates.load`); without one, cq's own. Blocks are joined by a blank line.
"""
from __future__ import annotations

from . import templates
from .templates import Template

BLOCK = "\n\n"


def template_or_builtin(tpl: Template | None, name: str) -> Template:
    return tpl if tpl is not None else templates.builtin(name)


def lead_part(text: str) -> str:
    """An instruction part followed by the blank line, or nothing for an empty one."""
    return text + BLOCK if text else ""


def passage_lines(tpl: Template, snippets) -> str:
    """The template's passage line for each snippet, each ending a line."""
    return "".join(tpl("passage", text=s) + "\n" for s in snippets)


# --- detection (CLAM style) -------------------------------------------------------------------

def detect_template(path: str | None = None) -> Template:
    return templates.load("detect_llm", path)


def detect_examples(tpl: Template | None = None) -> list[tuple[str, bool]]:
    return templates.labelled(template_or_builtin(tpl, "detect_llm"), "examples")


def detect_labels(tpl: Template | None = None) -> tuple[str, str]:
    tpl = template_or_builtin(tpl, "detect_llm")
    return tpl.text("label_true"), tpl.text("label_false")


def detect_prefix(tpl: Template | None = None) -> str:
    """The few-shot text shared by every question (its KV cache is computed once)."""
    tpl = template_or_builtin(tpl, "detect_llm")
    yes, no = detect_labels(tpl)
    shots = "".join(tpl("query", question=q) + (yes if amb else no) + BLOCK for q, amb in detect_examples(tpl))
    return lead_part(tpl.text("instruction")) + shots


def detect_prompt(question: str, tpl: Template | None = None) -> str:
    return template_or_builtin(tpl, "detect_llm")("query", question=question.strip())


DETECT_EXAMPLES = tuple(detect_examples())
DETECT_LABELS = detect_labels()


# --- clarifying questions (CAmbigNQ style) -----------------------------------------------------

def gencq_template(path: str | None = None) -> Template:
    return templates.load("gencq_llm", path)


def gencq_prefix(tpl: Template | None = None, answers: bool = False) -> str:
    """Instruction and the few-shot examples (six, one per common kind of ambiguity); with
    ``answers``, the examples that show each question's answers (part ``shots_answers``)."""
    tpl = template_or_builtin(tpl, "gencq_llm")
    shots = tpl.text("shots_answers" if answers else "shots")
    return lead_part(tpl.text("instruction")) + (shots + BLOCK if shots else "")


def gencq_primer(tpl: Template | None = None) -> str:
    """The first word of the answer the few-shot prompt ends with, so the model continues the form."""
    return template_or_builtin(tpl, "gencq_llm").text("primer")


def answer_line(tpl: Template, answers: list[str] | None) -> str:
    """The template's answers line ending a line, or nothing when no answers are shown."""
    if answers is None:
        return ""
    return tpl("answers", answers=tpl.text("answer_separator").join(answers)) + "\n"


def gencq_prompt(question: str, snippets: list[str], tpl: Template | None, answers: list[str] | None,
                 primer: bool) -> str:
    """The few-shot query: question, answers (when given), passages, then the primer (unless ``primer``
    is False: the model then writes the whole CQ, any head)."""
    tpl = template_or_builtin(tpl, "gencq_llm")
    return tpl("query", question=question.strip(), answers=answer_line(tpl, answers),
               passages=passage_lines(tpl, snippets)) + (gencq_primer(tpl) if primer else "")


def zero_shot_prompt(question: str, snippets: list[str], tpl: Template | None = None,
                     answers: list[str] | None = None) -> str:
    """CLAM's zero-shot prompt: the model is told the question is ambiguous and asked for a CQ."""
    tpl = template_or_builtin(tpl, "gencq_llm")
    return tpl("zero_shot", question=question.strip(), answers=answer_line(tpl, answers),
               passages=passage_lines(tpl, snippets))


GENCQ_PRIME = gencq_primer()


# --- the reader (cq answer --reader generative) -------------------------------------------------

def reader_template(path: str | None = None) -> Template:
    return templates.load("reader", path)


# The single-answer prompt's examples show the format (a few words copied from a passage).
SINGLE_PROMPT = templates.builtin("reader").text("single")
SINGLE_STOP = ["Question:", "Passages:"]  # clean_answer keeps the first non-empty line
MULTI_PROMPT = templates.builtin("reader").text("multi")
MULTI_STOP = ["\n\n", "Question:"]
VERIFY_QUERY = templates.builtin("reader").text("verify_query")
