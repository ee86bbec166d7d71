"""The generative reader's text: its prompts, the passages as it sees them, and answer cleaning.

Single answers come from a few-shot completion prompt (no chat template: a small chat model
answers a chat turn with a sentence or a title, but continues "Answer:" with a short answer);
multi answers from a list prompt.
"""
from __future__ import annotations

import re

from ...records import distinct_texts
# The reader's prompts live with every other prompt (their digest is the run record's prompts' version).
from ..prompts import MULTI_PROMPT, MULTI_STOP, SINGLE_PROMPT, SINGLE_STOP, VERIFY_QUERY  # noqa: F401


# --- passages as the reader sees them --------------------------------------------------------------

def shown_passages(passages: list[dict], n: int | None, chars: int) -> list[tuple[str, str]]:
    """(title, text) of the top ``n`` passages (None: all) as the reader sees them: text cut at a
    word boundary before ``chars`` characters (0: whole; titles whole)."""
    shown = []
    for p in passages[:n]:
        text = p.get("text", "")
        if chars and len(text) > chars:
            text = text[:chars].rsplit(" ", 1)[0]
        shown.append((p.get("title") or "", text))
    return shown


def passage_block(passages: list[dict], n: int | None, chars: int) -> str:
    """The prompt's passages: "[i] title: text" lines (" ..." where the text was cut)."""
    lines = []
    for i, (title, text) in enumerate(shown_passages(passages, n, chars), start=1):
        full = passages[i - 1].get("text", "")
        more = " ..." if len(full) > len(text) else ""
        lines.append(f"[{i}] {title + ': ' if title else ''}{text}{more}")
    return "\n".join(lines)


# --- answer strings ------------------------------------------------------------------------------

_WRAPPERS = re.compile(
    r"^(?:(?:the\s+)?(?:short\s+)?answers?\s*(?:is|are|was|would be|:)\s*:?|answer\s*:|a\s*:|it\s+(?:is|was)\s+)\s*",
    re.I)
_COPULA = re.compile(r"^.{3,}?\b(?:is|was|are|were|by)\s+(.+)$", re.I)
_MARKER = re.compile(r"^\s*(?:\[\d+\]|[-*•]|\d+[.)](?=\s))\s*")  # "[2] ", "- ", "1. "


def clean_answer(text: str, max_words: int = 5) -> str:
    """A generation cut to its short answer: first line, no "The answer is", no quotes, no
    trailing period; a sentence like "The capital of France is Paris" keeps what follows the verb
    when that is short enough."""
    text = text.strip().splitlines()[0] if text.strip() else ""
    text = _MARKER.sub("", text)
    for _ in range(2):
        text = _WRAPPERS.sub("", text).strip()
    text = text.strip().strip("\"'`*").strip()
    text = re.sub(r"[.!;,:]+$", "", text).strip().strip("\"'`*").strip()
    if len(text.split()) > max_words:
        match = _COPULA.match(text)
        if match and len(match.group(1).split()) <= max_words:
            text = match.group(1).strip().strip("\"'").rstrip(".")
    return text


def split_answers(text: str) -> list[str]:
    """A generated answer list -> distinct clean answers (deduplicated by normalised text)."""
    text = text.strip()
    parts = re.split(r"\s*(?:;|\n|\|)\s*|\s*,\s*(?:and\s+|or\s+)?|\s+(?:and|or)\s+(?=[A-Z0-9])", text)
    return distinct_texts(clean_answer(re.sub(r"^\s*(?:[-*•]|\d+[.)])\s+", "", p)) for p in parts)
