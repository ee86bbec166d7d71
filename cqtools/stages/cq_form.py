"""The CAmbigNQ form of a clarifying question, "Which [category]: [opt1], [opt2], or [optN]?", and
the repairs that bring a model's text to it (:mod:`cqtools.stages.gen_cq` writes CQs with these)."""
from __future__ import annotations

import re

from ..metrics.cq import parse_cq

INVALID = "invalid form"


def which(category: str) -> str:
    """The head of a CQ for a category noun: ``film`` -> ``Which film``."""
    return f"Which {category.strip() or 'one'}"


def format_cq(head: str, options: list[str]) -> str:
    """``Which film: A, B, or C?`` / ``Which film: A or B?`` / ``Which film: A?`` for head "Which film"."""
    options = [o for o in (opt.strip() for opt in options) if o]
    if len(options) <= 1:
        body = options[0] if options else ""
    elif len(options) == 2:
        body = f"{options[0]} or {options[1]}"
    else:
        body = ", ".join(options[:-1]) + f", or {options[-1]}"
    return f"{head.strip()}: {body}?"


def make_cq(text: str, category: str, options: list[str], method: str, valid: bool, **extra) -> dict:
    return {"text": text, "category": category, "options": list(options), "method": method,
            "valid": valid, **extra}


def canonical_cq(head: str, options: list[str], method: str, **extra) -> dict:
    """A CQ in the canonical form, stored with what the scorer's parser reads back from it
    (``category`` is the parser's: the whole head, "Which film")."""
    text = format_cq(head, options)
    cat, opts = parse_cq(text)
    return make_cq(text, cat, opts, method, cat != INVALID, **extra)


_SEPARATORS = re.compile(r"\s*(?:;|\||/(?!\d)|\s-\s|\band/or\b)\s*")


def repair(raw: str, method: str) -> dict:
    """Turn a model's generation into a canonical CQ.

    First line only, cut after its first "?". If the scorer's parser reads a category and options,
    the CQ is re-written in the canonical form (``valid: true``). Otherwise options are pulled out
    of the free text ("... A or B?") under category "one" (``valid: false, repaired: true``); failing
    that, the CQ is the parser's "invalid form" (``valid: false``). The raw generation is kept.
    """
    line = first_question(raw)
    cleaned = _SEPARATORS.sub(", ", line)
    category, options = parse_cq(cleaned) if cleaned else (INVALID, [INVALID])
    head = canonical_head(category)
    if head and options and all(options):
        return canonical_cq(head, options, method, raw=raw)
    options = extract_options(line)
    if len(options) >= 2:
        cq = canonical_cq(which("one"), options, method, raw=raw)
        cq.update(valid=False, repaired=True)
        return cq
    return make_cq(line or raw.strip(), INVALID, [INVALID], method, False, raw=raw)


def canonical_head(category: str) -> str | None:
    """A parsed head as "(Prep) which X"; a bare noun phrase of up to three words becomes
    "Which x"; anything else (a sentence before the ":") is not a CQ head (None)."""
    category = " ".join(category.split()).strip(" *\"'")
    if not category or category == INVALID:
        return None
    if re.fullmatch(r"(?:\w+\s+)?which(?:\s+[\w'-]+){0,3}", category, re.I):
        return category[0].upper() + category[1:]
    if re.fullmatch(r"[\w'-]+(?:\s+[\w'-]+){0,2}", category) and not re.match(
            r"(?i)(do|did|are|is|was|were|can|could|would|what|who|when|where|how|please)\b", category):
        return which(category.lower())
    return None


def first_question(raw: str) -> str:
    lines = [line.strip() for line in raw.strip().splitlines() if line.strip()]
    if not lines:
        return ""
    line = lines[0]
    cut = line.find("?")
    line = line[: cut + 1] if cut >= 0 else line
    return line.strip(" \"'`*")


_LEAD = re.compile(
    r"^(?:do|did|are|were|is|was|would|could|can)\s+you\s+(?:mean|asking|referring|talking)\s+"
    r"(?:about|to)?\s*|^which\s+[\w\s]*?(?:do you mean|are you asking about)\s*", re.I)


def extract_options(text: str) -> list[str]:
    """Options of a free-form CQ: the parts of "... A, B, or C?" after a leading "Do you mean"."""
    body = _LEAD.sub("", text.strip().rstrip("?").strip())
    if ":" in body:
        body = body.split(":", 1)[1]
    parts = re.split(r",\s*or\s+|,\s*|\s+or\s+", body)
    options = [p.strip(" .\"'") for p in parts if p.strip(" .\"'")]
    return options if len(options) >= 2 else []
