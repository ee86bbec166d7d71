"""Prompts of ``cq disambiguate`` (``qd``, ``rac``), ``cq oracle --method llm`` and ``cq answer --mode
long``, rendered from cq's templates (``templates/qd.txt``, ``rac.txt``, ``oracle_llm.txt``, ``long.txt``).

The formats follow the published methods (AmbigQA's question disambiguation: a minimal edit of
the prompt question per answer; Tree of Clarifications' retrieval-augmented clarification:
few-shot disambiguations with passages, a True/False self-verification, and a long answer built
from the disambiguations). The wording and the example questions are our own; the facts in them
are well-known public ones. Each function takes the template (``--prompt FILE`` through
:func:`templates.load`); without one, cq's own. Blocks are joined by a blank line.
"""
from __future__ import annotations

from . import templates
from .prompts import BLOCK, lead_part, template_or_builtin, passage_lines
from .templates import Template

# --- built-in few-shot examples of rac (--shots replaces them): (ambiguous question, [(disambiguated question, answer), ...]) --

DISAMBIG_EXAMPLES: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    ("When did London host the Olympics?",
     (("When did London host the Summer Olympics for the first time?", "1908"),
      ("When did London host the Summer Olympics just after the Second World War?", "1948"),
      ("When did London last host the Summer Olympics?", "2012"))),
    ("Who played Willy Wonka?",
     (("Who played Willy Wonka in the 1971 film?", "Gene Wilder"),
      ("Who played Willy Wonka in the 2005 film?", "Johnny Depp"),
      ("Who played the young Willy Wonka in the 2023 film Wonka?", "Timothee Chalamet"))),
    ("How tall is the Eiffel Tower?",
     (("How tall is the Eiffel Tower including its antennas?", "330 metres"),
      ("How tall is the Eiffel Tower without its antennas?", "300 metres"))),
)

# --- AmbigQA question disambiguation (--method qd) --------------------------------------------

QD_LAYOUTS = {"cq": "", "ambigqa": "_ambigqa", "refuel": "_refuel"}  # --layout: the suffix of its shots and query parts


def qd_prefix(tpl: Template | None, layout: str) -> str:
    tpl = template_or_builtin(tpl, "qd")
    shots = tpl.text("shots" + QD_LAYOUTS[layout])
    return lead_part(tpl.text("instruction")) + (shots + BLOCK if shots else "")


def qd_prompt(question: str, answer: str, others: list[str], snippets: list[str], tpl: Template | None,
              layout: str) -> str:
    """``cq``: passages, question, answer, other answers; ``ambigqa``: the released QD input's order
    (target answer, question, other answers, passages; QGData.py @5c8cdb1); ``refuel``: REFUEL's (target
    answer, prompt question, passages; no other answers, QGInferenceData.py:199 @159090e)."""
    tpl = template_or_builtin(tpl, "qd")
    return tpl("query" + QD_LAYOUTS[layout], passages=passage_lines(tpl, snippets), question=question.strip(),
               answer=answer.strip(), others="; ".join(others) or tpl.text("no_others"))


# --- DISAMBIG-FIRST (--method disambig-first) ---------------------------------------------------

def disambig_first_prompt(question: str, tpl: Template | None = None) -> str:
    """Instruction, shots, the question; closed-book (no passages, no answers). The model continues
    after the primer ("1.") with one reading per line."""
    tpl = template_or_builtin(tpl, "disambig_first")
    shots = tpl.text("shots")
    return (lead_part(tpl.text("instruction")) + (shots + BLOCK if shots else "")
            + tpl("query", question=question.strip()) + "\n" + tpl.text("primer"))


# --- Tree of Clarifications: retrieval-augmented clarification (--method rac) -----------------

def rac_shot(question: str, pairs, tpl: Template | None = None) -> str:
    tpl = template_or_builtin(tpl, "rac")
    lines = "".join(tpl("pair", n=n, dq=dq, answer=a) + "\n" for n, (dq, a) in enumerate(pairs, start=1))
    return tpl("query", passages="", question=question) + "\n" + lines + "\n"


def rac_prompt(question: str, snippets: list[str], shots, tpl: Template | None = None) -> str:
    """Instruction, the k shots (question, [(dq, answer)]), then the query; the model continues
    after the primer ("1.") so that it writes the first disambiguation in the shots' form."""
    tpl = template_or_builtin(tpl, "rac")
    return (lead_part(tpl.text("instruction")) + "".join(rac_shot(q, pairs, tpl) for q, pairs in shots)
            + tpl("query", passages=passage_lines(tpl, snippets), question=question.strip()) + "\n"
            + tpl.text("primer"))


# --- self-verification (--prune) ----------------------------------------------------------------

def verify_labels(tpl: Template | None = None) -> tuple[str, str]:
    tpl = template_or_builtin(tpl, "rac")
    return tpl.text("label_true"), tpl.text("label_false")


def verify_prompt(question: str, dq: str, answer: str, passage: str, tpl: Template | None = None) -> str:
    return template_or_builtin(tpl, "rac")("verify", passage=passage, question=question.strip(), answer=answer.strip(),
                            dq=dq.strip())


VERIFY_LABELS = verify_labels()


# --- long answers (cq answer --mode long) -------------------------------------------------------

def long_prompt(question: str, pairs: list[tuple[str, str]], snippets: list[str], tpl: Template | None = None) -> str:
    tpl = template_or_builtin(tpl, "long")
    dqs = "".join(tpl("pair", dq=q, answer=a) + "\n" for q, a in pairs) or tpl.text("no_pairs") + "\n"
    return lead_part(tpl.text("instruction")) + tpl("query", passages=passage_lines(tpl, snippets),
                                                question=question.strip(), dqs=dqs)


# --- the simulated user (cq oracle --method llm) ------------------------------------------------

def oracle_options_prompt(dq: str, cq: str, options: list[str], tpl: Template | None = None) -> str:
    return template_or_builtin(tpl, "oracle_llm")("options", dq=dq.strip(), cq=cq.strip(), options="; ".join(options))


def oracle_free_prompt(question: str, dq: str, cq: str, tpl: Template | None = None) -> str:
    return template_or_builtin(tpl, "oracle_llm")("free", question=question.strip(), dq=dq.strip(), cq=cq.strip())
