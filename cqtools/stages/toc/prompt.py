"""The prompts of ``cq disambiguate --method toc`` and the reading of its completions.

Every text comes from the template ``toc`` (cqtools/stages/templates/toc.txt, cq's own wording;
``--prompt FILE`` replaces parts). The layout is that of the released code's dsp template
(docs/audit/toc-clam.md §1.3): four blocks joined by a ``---`` line between blank lines (the
instruction; the demos, each with all its DQ/DA pairs and its long answer, no passages; the
format description; the query with numbered ``[i] «title | text»`` passages), and the
verification prompt's four lines (instruction, ``Context:``, ``Question:`` with the ambiguous
question, ``Proposed Answer:``).
"""
from __future__ import annotations

import re
from typing import Sequence

from ..shots import Shot

# Built-in demos when no --shots file is given: well-known facts, our own sentences.
BUILTIN_DEMOS: tuple[tuple[str, tuple[tuple[str, str], ...], str], ...] = (
    ("What is the capital of Bolivia?",
     (("Which city is the constitutional capital of Bolivia?", "Sucre"),
      ("Which city is the seat of Bolivia's government?", "La Paz")),
     "Bolivia has two capitals in a sense. The constitution names Sucre as the capital, while the "
     "government and parliament sit in La Paz."),
    ("Who sang Hallelujah?",
     (("Who wrote and first recorded the song Hallelujah in 1984?", "Leonard Cohen"),
      ("Who recorded the widely known 1994 cover of Hallelujah?", "Jeff Buckley")),
     "Hallelujah was written and first recorded by Leonard Cohen in 1984; Jeff Buckley's cover from "
     "1994 became the best-known version."),
    ("How tall is the Eiffel Tower?",
     (("How tall is the Eiffel Tower including its antennas?", "330 metres"),
      ("How tall is the Eiffel Tower without its antennas?", "300 metres")),
     "Without its antennas the Eiffel Tower is 300 metres tall; with the antennas on its top it "
     "reaches 330 metres."),
    ("Who played Willy Wonka?",
     (("Who played Willy Wonka in the 1971 film?", "Gene Wilder"),
      ("Who played Willy Wonka in the 2005 film?", "Johnny Depp"),
      ("Who played the young Willy Wonka in the 2023 film Wonka?", "Timothee Chalamet")),
     "Three actors have played Willy Wonka in films: Gene Wilder in 1971, Johnny Depp in 2005, and "
     "Timothee Chalamet as the younger Wonka in the 2023 film Wonka."),
    ("When did London host the Olympics?",
     (("When did London host the Summer Olympics for the first time?", "1908"),
      ("When did London host the Summer Olympics just after the Second World War?", "1948"),
      ("When did London last host the Summer Olympics?", "2012")),
     "London has hosted the Summer Olympics three times: first in 1908, again in 1948 after the "
     "Second World War, and most recently in 2012."),
)


def builtin_demos() -> list[Shot]:
    return [Shot(q, list(pairs), long, f"builtin-{n}") for n, (q, pairs, long) in enumerate(BUILTIN_DEMOS, 1)]


def passage_string(passage: dict) -> str:
    """A passage as the released code holds it (ColBERT's ``long_text``): "title | text", whole."""
    title, text = str(passage.get("title") or "").strip(), str(passage.get("text") or "").strip()
    return f"{title} | {text}" if title else text


def pairs_block(template, pairs: Sequence[tuple[str, str]]) -> str:
    return "\n".join(template("pair", n=n, question=q, answer=a) for n, (q, a) in enumerate(pairs, 1))


def passages_block(template, passages: Sequence[dict]) -> str:
    """Numbered passages; a lone passage has no number (dsp's ``passages2text``)."""
    if len(passages) == 1:
        return template("one_passage", passage=passage_string(passages[0]))
    return "\n".join(template("passage", n=n, passage=passage_string(p)) for n, p in enumerate(passages, 1))


def demo_block(template, shot: Shot) -> str:
    question, pairs = shot
    return template("demo", question=question, pairs=pairs_block(template, pairs),
                    long_answer=getattr(shot, "long_answer", None) or "")


def _prompt(template, demos: Sequence[Shot], query: str) -> str:
    return template("expansion", instruction=template("instruction"), format=template("format"), query=query,
                    demos="\n\n".join(demo_block(template, d) for d in demos))


def expansion_prompt(template, question: str, passages: Sequence[dict], demos: Sequence[Shot]) -> str:
    """The prompt of one node's expansion; the model continues after ``Disambiguations:``."""
    return _prompt(template, demos, template("query", passages=passages_block(template, passages),
                                             question=question.strip()))


def answer_prompt(template, question: str, passages: Sequence[dict], demos: Sequence[Shot],
                  pairs: Sequence[tuple[str, str]]) -> str:
    """The long-answer prompt: the same template with the tree's pairs filled in, ending at ``Answer:``."""
    return _prompt(template, demos, template("final", passages=passages_block(template, passages),
                                             question=question.strip(), pairs=pairs_block(template, pairs)))


def verify_prompt(template, question: str, evidence: dict | None, answer: str) -> str:
    """Instruction, the evidence passage, the ambiguous question (not the DQ), the proposed answer."""
    return template("verify", passage=passage_string(evidence) if evidence else "", question=question.strip(),
                    answer=answer)


# --- reading completions ------------------------------------------------------------------------

_DQ = re.compile(r"DQ\s*\d*:")
_DA = re.compile(r"DA\s*\d*:")
ANSWER_CUE = "\nAnswer:"


def parse_pairs(block: str) -> list[tuple[str, str]]:
    """DQ/DA lines read as the released ``parse_disambig`` does: line pairs (line i holds "DQ", line
    i+1 "DA"), the text after ``DQ n:`` / ``DA n:``; a misaligned pair is skipped, not re-synced."""
    lines = block.split("\n")
    if lines and lines[0] == "":
        lines = lines[1:]
    pairs = []
    for i in range(0, len(lines) - 1, 2):
        question, answer = lines[i], lines[i + 1]
        if "DQ" not in question or "DA" not in answer:
            continue
        q_parts, a_parts = _DQ.split(question), _DA.split(answer)
        if len(q_parts) < 2 or len(a_parts) < 2:
            continue
        pairs.append((q_parts[1].strip(), a_parts[1].strip()))
    return pairs


def read_expansion(completion: str) -> tuple[list[tuple[str, str]], str | None]:
    """(pairs, long answer or None) of an expansion: the text before the first "\\nAnswer:" is the
    DQ/DA block (dsp's field split); when it holds no pair, the answer field's text before a further
    "\\nAnswer:" is read instead (run_toc.py:224-225)."""
    text = completion.strip()
    cut = text.find(ANSWER_CUE)
    if cut < 0:
        return parse_pairs(text), None
    block, answer = text[:cut].strip(), text[cut + len(ANSWER_CUE):].strip()
    pairs = parse_pairs(block) or parse_pairs(answer.split(ANSWER_CUE)[0])
    return pairs, answer
