"""Prompt texts for ``cq disambiguate``, ``cq oracle --method llm`` and ``cq answer --mode long``.

The formats follow the published methods (AmbigQA's question disambiguation: a minimal edit of
the prompt question per answer; Tree of Clarifications' retrieval-augmented clarification:
few-shot disambiguations with passages, a True/False self-verification, and a long answer built
from the disambiguations). The example questions and sentences are our own; the facts in them
are well-known public ones.
"""
from __future__ import annotations

# --- built-in few-shot examples: (ambiguous question, [(disambiguated question, answer), ...]) --

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

QD_INSTRUCTION = (
    "Each question below has several correct answers. Rewrite the question with as small an "
    "edit as possible so that the given answer becomes its only correct answer and the other "
    "answers no longer fit. Keep the wording of the question; add the detail that tells the "
    "answers apart (a year, a film, a place, an edition).\n\n"
)

QD_EXAMPLES: tuple[tuple[str, str, tuple[str, ...], str], ...] = (
    ("Who played Willy Wonka?", "Johnny Depp", ("Gene Wilder",), "Who played Willy Wonka in the 2005 film?"),
    ("When did London host the Olympics?", "1948", ("1908", "2012"),
     "When did London host the Summer Olympics just after the Second World War?"),
    ("How tall is the Eiffel Tower?", "330 metres", ("300 metres",),
     "How tall is the Eiffel Tower including its antennas?"),
)

QD_QUERY = "{passages}Question: {question}\nAnswer: {answer}\nOther answers: {others}\nRewritten question:"


def _passages(snippets) -> str:
    return "".join(f"Passage: {s}\n" for s in snippets)


def qd_prefix() -> str:
    shots = "".join(QD_QUERY.format(passages="", question=q, answer=a, others="; ".join(o) or "none")
                    + f" {dq}\n\n" for q, a, o, dq in QD_EXAMPLES)
    return QD_INSTRUCTION + shots


def qd_prompt(question: str, answer: str, others: list[str], snippets: list[str]) -> str:
    return QD_QUERY.format(passages=_passages(snippets), question=question.strip(), answer=answer.strip(),
                           others="; ".join(others) or "none")


# --- Tree of Clarifications: retrieval-augmented clarification (--method rac) -----------------

RAC_INSTRUCTION = (
    "An ambiguous question can be read in several ways, each with its own answer. Using the "
    "passages, list the readings as disambiguated questions, one per line, each followed by its "
    "short answer.\n\n"
)

RAC_QUERY = "{passages}Question: {question}\nDisambiguations:\n"


def rac_shot(question: str, pairs) -> str:
    lines = "".join(f"{n}. {dq} Answer: {a}\n" for n, (dq, a) in enumerate(pairs, start=1))
    return RAC_QUERY.format(passages="", question=question) + lines + "\n"


def rac_prompt(question: str, snippets: list[str], shots) -> str:
    """Instruction, the k shots (question, [(dq, answer)]), then the query; the model continues
    after "1." so that it writes the first disambiguation in the shots' form."""
    return (RAC_INSTRUCTION + "".join(rac_shot(q, pairs) for q, pairs in shots)
            + RAC_QUERY.format(passages=_passages(snippets), question=question.strip()) + "1.")


# --- self-verification (--prune) ----------------------------------------------------------------

VERIFY_QUERY = (
    "Passage: {passage}\n"
    "Original question: {question}\n"
    "Proposed answer: {answer} (the answer to: {dq})\n"
    "Is the proposed answer a correct answer to one reading of the original question? True or False:"
)
VERIFY_LABELS = (" True", " False")


def verify_prompt(question: str, dq: str, answer: str, passage: str) -> str:
    return VERIFY_QUERY.format(passage=passage, question=question.strip(), answer=answer.strip(), dq=dq.strip())


# --- long answers (cq answer --mode long) -------------------------------------------------------

LONG_INSTRUCTION = (
    "Write a long answer to the ambiguous question. The question has the readings listed under "
    "\"Disambiguations\", each with its answer. Explain each reading and give its answer in one "
    "or two sentences, using the passages. Write plain prose, no lists.\n\n"
)

LONG_QUERY = "{passages}Question: {question}\nDisambiguations:\n{dqs}Long answer:"


def long_prompt(question: str, pairs: list[tuple[str, str]], snippets: list[str]) -> str:
    dqs = "".join(f"- {q} Answer: {a}\n" for q, a in pairs) or "- (none found)\n"
    return LONG_INSTRUCTION + LONG_QUERY.format(passages=_passages(snippets), question=question.strip(), dqs=dqs)


# --- the simulated user (cq oracle --method llm) ------------------------------------------------

ORACLE_OPTIONS = (
    "You asked a question and meant one specific thing by it.\n"
    "What you meant: {dq}\n"
    "The assistant asks: {cq}\n"
    "Your reply (one of: {options}):"
)

ORACLE_FREE = (
    "You asked: {question}\n"
    "What you meant: {dq}\n"
    "The assistant asks: {cq}\n"
    "Reply in a few words with the detail that says what you meant:"
)


def oracle_options_prompt(dq: str, cq: str, options: list[str]) -> str:
    return ORACLE_OPTIONS.format(dq=dq.strip(), cq=cq.strip(), options="; ".join(options))


def oracle_free_prompt(question: str, dq: str, cq: str) -> str:
    return ORACLE_FREE.format(question=question.strip(), dq=dq.strip(), cq=cq.strip())
