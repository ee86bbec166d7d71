"""The CAmbigNQ form of a clarifying question, "Which [category]: [opt1], [opt2], or [optN]?", and
the repairs that bring a model's text to it (:mod:`cqtools.stages.gen_cq` writes CQs with these).

Options are distinct, always: an option that repeats an earlier one after the scorer's answer
normalisation (:func:`cqtools.metrics.normalize.normalize_answer`: case, articles, punctuation,
spaces) is left out of the CQ and listed under ``dropped.repeated``; the text is written from the
options kept, so text, ``options`` and what the scorer's parser reads back agree. A CQ with fewer
than two distinct options is not ``valid``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

from ...metrics.cq import QUOTES, SEPARATORS, parse_cq
from ...metrics.normalize import normalize_answer

INVALID = "invalid form"
_REPARSE = 8  # rounds of write / read back / de-duplicate: two suffice unless quotes split options anew


@dataclass
class CQWriter:
    """One way of writing CQs: ``run(records) -> list of cq dicts``, plus what goes into meta."""

    name: str
    run: Callable[[list[dict]], list[dict]]
    info: dict = field(default_factory=dict)


def which(category: str) -> str:
    """The head of a CQ for a category noun: ``film`` -> ``Which film``."""
    return f"Which {category.strip() or 'one'}"


FORMS = ("or", "comma")  # two options as "A or B" (cq's default) or "A, or B" (AskCQ's: its parser splits at ", or")


def quoted(option: str) -> str:
    """``option`` as one option of a CQ's text: in quotes when it holds a separator the parser splits at
    (a title "Hello, Goodbye" is one option, never "Hello" and "Goodbye"), curly ones when it holds a
    straight double quote; otherwise as it is."""
    if not any(sep in option for sep in SEPARATORS) or option[:1] in QUOTES:
        return option
    return f"\u201c{option}\u201d" if '"' in option else f'"{option}"'


def format_cq(head: str, options: list[str], form: str = "or", whole: bool = False) -> str:
    """``Which film: A, B, or C?`` / ``Which film: A or B?`` / ``Which film: A?`` for head "Which film";
    ``form="comma"`` writes two options as ``A, or B`` (the AskCQ form: its scorer's parser reads
    "A or B" as one option). ``whole``: each option is one reading (a title, an answer), quoted when it
    holds a separator (:func:`quoted`)."""
    options = [quoted(o) if whole else o for o in (opt.strip() for opt in options) if o]
    if len(options) <= 1:
        body = options[0] if options else ""
    elif len(options) == 2:
        body = f"{options[0]}, or {options[1]}" if form == "comma" else f"{options[0]} or {options[1]}"
    else:
        body = ", ".join(options[:-1]) + f", or {options[-1]}"
    return f"{head.strip()}: {body}?"


def make_cq(text: str, category: str, options: list[str], method: str, valid: bool, **extra) -> dict:
    return {"text": text, "category": category, "options": list(options), "method": method,
            "valid": valid, **extra}


def option_key(option: str) -> str:
    """What options are compared by: the scorer's answer normalisation ("The Beatles" and "beatles."
    are one option); an option that normalises to nothing ("The") by its lowercased text."""
    return normalize_answer(option) or option.strip().lower()


def distinct(options: list[str]) -> tuple[list[str], list[str]]:
    """``(kept, repeated)``: each option whose :func:`option_key` an earlier one has is repeated."""
    seen: set[str] = set()
    kept: list[str] = []
    repeated: list[str] = []
    for option in options:
        key = option_key(option)
        (repeated if key in seen else kept).append(option)
        seen.add(key)
    return kept, repeated


def canonical_cq(head: str, options: list[str], method: str, dropped: dict | None = None, whole: bool = False,
                 **extra) -> dict:
    """A CQ in the canonical form, stored with what the scorer's parser reads back from it
    (``category`` is the parser's: the whole head, "Which film").

    Options repeating an earlier one are left out (also those the parser splits out of the text
    written, e.g. "A or B" next to "A") and added to ``dropped["repeated"]``; ``dropped`` is stored
    when it lists anything. Fewer than two distinct options: ``valid: false``; none: the text is
    "Which film?", which the parser reads as "invalid form". ``whole``: every option is one reading, written
    so that it reads back whole (pred-answers' titles: "Hello, Goodbye" is never "Hello" and "Goodbye")."""
    dropped = {reason: list(gone) for reason, gone in (dropped or {}).items()}
    kept, repeated = distinct([o.strip() for o in options if o.strip()])
    for _ in range(_REPARSE):
        text = format_cq(head, kept, whole=whole) if kept else f"{head.strip()}?"
        category, read = parse_cq(text)
        kept, more = distinct(read)
        if not more:
            break
        repeated += more
    if repeated:
        dropped["repeated"] = dropped.get("repeated", []) + repeated
    if dropped:
        extra["dropped"] = dropped
    return make_cq(text, category, read, method, category != INVALID and len(read) >= 2, **extra)


def drop_options(cq: dict, drop: list[bool], reason: str) -> dict:
    """``cq`` without the options flagged in ``drop`` (listed under ``dropped[reason]``), re-written in
    the canonical form from the options kept; a CQ that was not valid stays so. Nothing flagged: ``cq``."""
    if not any(drop):
        return cq
    kept = [o for o, d in zip(cq["options"], drop) if not d]
    dropped = dict(cq.get("dropped") or {})
    dropped[reason] = dropped.get(reason, []) + [o for o, d in zip(cq["options"], drop) if d]
    extra = {k: v for k, v in cq.items() if k not in ("text", "category", "options", "method", "valid", "dropped")}
    out = canonical_cq(canonical_head(cq["category"]) or which("one"), kept, cq["method"], dropped, **extra)
    out["valid"] = out["valid"] and bool(cq["valid"])
    return out


def in_form(cq: dict | None, form: str) -> dict | None:
    """``cq`` with its two options written in ``form`` ("comma": "Which film: A, or B?"), when its text
    is the canonical one (a free-form CQ kept as written stays as it is); the options read back from the
    new text must be the same, else ``cq`` is returned unchanged."""
    if form == "or" or not cq or len(cq.get("options") or []) != 2 or cq.get("category") in (None, INVALID):
        return cq
    whole = cq["text"] != format_cq(cq["category"], cq["options"])
    if whole and cq["text"] != format_cq(cq["category"], cq["options"], whole=True):
        return cq
    text = format_cq(cq["category"], cq["options"], form, whole)
    if parse_cq(text) != (cq["category"], list(cq["options"])):
        return cq
    return {**cq, "text": text}


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


_PREPOSITION = ("in|for|at|of|on|by|during|from|to|as|about|under|with|within|after|before|between|among|"
                "according|regarding")
_AUXILIARY = "is|are|was|were|do|does|did|can|could|would|will|should|has|have|had"
WH_HEAD = re.compile(rf"(?:(?:{_PREPOSITION})(?:\s+[\w'-]+){{0,2}}\s+)?(?:which|what|whose|when|where|who)"
                      rf"(?!\s+(?:{_AUXILIARY})\b)(?:\s+[\w'-]+){{0,3}}", re.I)
LEAD_HEAD = re.compile(r"(?:are|do|did|were)\s+you\s+(?:mean(?:ing)?|referring\s+to|asking\s+about|talking\s+about)",
                        re.I)


def canonical_head(category: str) -> str | None:
    """A parsed head as written when it is a wh-phrase with up to three words before it ("Which film",
    "In which context", "In terms of what", "For which type of questions") or a lead-in ("Are you
    referring to", "Do you mean"), first letter capitalised; a bare noun phrase of up to three words
    becomes "Which x"; anything else (a sentence before the ":") is not a CQ head (None)."""
    category = " ".join(category.split()).strip(" *\"'")
    if not category or category == INVALID:
        return None
    if WH_HEAD.fullmatch(category) or LEAD_HEAD.fullmatch(category):
        return category[0].upper() + category[1:]
    if re.fullmatch(r"[\w'-]+(?:\s+[\w'-]+){0,2}", category) and not re.match(
            r"(?i)(do|did|are|is|was|were|can|could|would|what|who|when|where|how|please)\b", category) \
            and not re.search(r"(?i)\b(?:which|what|whose|when|where|who)\b", category):
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
