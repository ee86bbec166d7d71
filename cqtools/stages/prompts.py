"""Prompt texts for the LLM methods of ``cq detect`` and ``cq gen-cq``.

The formats follow the published methods (CLAM's "This question is ambiguous: True/False"
few-shot prompt and its zero-shot clarifying-question prompt; the CAmbigNQ construction prompt
"Which [category]: A, B, or C?"). The example questions and sentences are our own; the facts
in them are well-known public ones.
"""
from __future__ import annotations

# --- detection (CLAM style) -------------------------------------------------------------------

DETECT_EXAMPLES: tuple[tuple[str, bool], ...] = (
    ("Who painted the Mona Lisa?", False),
    ("When did the Olympics take place in London?", True),
    ("What is the boiling point of water at sea level in Celsius?", False),
    ("Who is the voice of Mickey Mouse?", True),
    ("Which planet is closest to the Sun?", False),
)

DETECT_INSTRUCTION = (
    "Decide whether each question is ambiguous, that is, whether it has more than one "
    "reasonable interpretation with different answers.\n\n"
)

DETECT_QUERY = "Q: {question}\nThis question is ambiguous:"
DETECT_LABELS = (" True", " False")


def detect_prefix() -> str:
    """The few-shot text shared by every question (its KV cache is computed once)."""
    shots = "".join(
        f"{DETECT_QUERY.format(question=q)}{DETECT_LABELS[0] if amb else DETECT_LABELS[1]}\n\n"
        for q, amb in DETECT_EXAMPLES
    )
    return DETECT_INSTRUCTION + shots


def detect_prompt(question: str) -> str:
    return DETECT_QUERY.format(question=question.strip())


# --- clarifying questions (CAmbigNQ style) -----------------------------------------------------

# (question, passage snippets, clarifying question); six examples, one per common kind of
# ambiguity: time, edition/version, entity, event type, location, unit/measure.
GENCQ_EXAMPLES: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("Who won the Tour de France?",
     ("Tadej Pogacar won the 2024 Tour de France.", "Jonas Vingegaard took the race in 2023."),
     "Which year: 2024 or 2023?"),
    ("Who played Willy Wonka?",
     ("Gene Wilder starred in the 1971 musical film.", "Johnny Depp took the role in the 2005 adaptation.",
      "Timothee Chalamet played a young Wonka in the 2023 film."),
     "Which film: the 1971 film, the 2005 film, or the 2023 film?"),
    ("How tall is the Eiffel Tower?",
     ("Including antennas, the tower stands 330 metres high.", "Without them, the structure is about 300 metres."),
     "Which height: with antennas or without antennas?"),
    ("When was the Declaration of Independence signed?",
     ("Most delegates signed the Declaration on August 2, 1776.", "Congress adopted the text on July 4, 1776."),
     "Which event: the adoption or the signing by most delegates?"),
    ("What is the population of New York?",
     ("New York City has about 8.3 million residents.", "New York State is home to about 19.6 million people."),
     "Which one: New York City or New York State?"),
    ("Who scored the most goals in a season?",
     ("In the Premier League, Erling Haaland scored 36 goals in 2022-23.",
      "In La Liga, Lionel Messi scored 50 goals in 2011-12.",
      "In the Bundesliga, Robert Lewandowski scored 41 goals in 2020-21."),
     "Which league: the Premier League, La Liga, or the Bundesliga?"),
)

GENCQ_INSTRUCTION = (
    "An ambiguous question has several interpretations. Read the question and the passages, then "
    "write one clarifying question in the form \"Which [category]: [option 1], [option 2], or "
    "[option 3]?\" listing the interpretations as short options.\n\n"
)

GENCQ_QUERY = "Question: {question}\n{passages}Clarifying question:"
# The few-shot prompt ends with the first word of the answer, so the model continues the form.
GENCQ_PRIME = " Which"


def _passage_block(snippets) -> str:
    return "".join(f"Passage: {s}\n" for s in snippets)


def gencq_prefix() -> str:
    shots = "".join(
        GENCQ_QUERY.format(question=q, passages=_passage_block(ps)) + f" {cq}\n\n"
        for q, ps, cq in GENCQ_EXAMPLES
    )
    return GENCQ_INSTRUCTION + shots


def gencq_prompt(question: str, snippets: list[str]) -> str:
    return GENCQ_QUERY.format(question=question.strip(), passages=_passage_block(snippets)) + GENCQ_PRIME


# CLAM's zero-shot prompt: the model is told the question is ambiguous and asked for a CQ.
ZERO_SHOT = (
    "{passages}Question: {question}\n"
    "This question is ambiguous, so I have to ask the following clarifying question:"
)


def zero_shot_prompt(question: str, snippets: list[str]) -> str:
    return ZERO_SHOT.format(question=question.strip(), passages=_passage_block(snippets))


# --- the reader (cq answer --reader generative) -------------------------------------------------

# Few-shot completion prompt (the examples show the answer format: a few words copied from a passage).
SINGLE_PROMPT = (
    "Answer the question with a few words copied exactly from the passages: a name, a date, a number "
    "or a short phrase. Never write a sentence.\n\n"
    "Passages:\n[1] Canberra: Canberra is the capital city of Australia. Founded following the federation "
    "of the colonies of Australia, it is the country's largest inland city.\n"
    "Question: what is the capital of australia\nAnswer: Canberra\n\n"
    "Passages:\n[1] Apollo 11: Apollo 11 was the spaceflight that first landed humans on the Moon. Commander "
    "Neil Armstrong and pilot Buzz Aldrin landed on July 20, 1969.\n"
    "Question: when did humans first land on the moon\nAnswer: July 20, 1969\n\n"
    "Passages:\n{passages}\nQuestion: {question}\nAnswer:"
)
SINGLE_STOP = ["Question:", "Passages:"]  # clean_answer keeps the first non-empty line
MULTI_PROMPT = (
    "Read the passages. The question may have several correct answers, one for each of its "
    "interpretations. List every distinct answer found in the passages, each one to five words, "
    "separated by \" ; \". Reply with the list only.\n\n{passages}\n\nQuestion: {question}\nAnswers:"
)
MULTI_STOP = ["\n\n", "Question:"]
VERIFY_QUERY = "Question: {question}\nAnswer:"
