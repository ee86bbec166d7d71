"""A silver clarifying question from gold disambiguated questions (AskCQ's options: what each DQ
adds to the ambiguous question). ``cq gen-cq --method from-dqs`` and ``cq convert --silver-cq``
build them; both read ``gold`` by design (an upper bound, and training data for ``cq train gen-cq``)."""
from __future__ import annotations

import difflib
import re

from ...errors import InputError
from ...records import GOLD
from .form import canonical_cq, which


_EDGE_WORDS = {"in", "on", "at", "of", "for", "as", "during", "from", "by", "to", "with", "about",
               "the", "a", "an", "and"}
_NAME_JOINERS = {"of", "the"}
_PUNCT = set("?.,!;:\"“”‘’")
_TOKEN = re.compile(r"\(|\)|[^\s()?,!;:\"“”]+|[?,!;:\"“”]")


def tokenize(text: str) -> list[str]:
    return _TOKEN.findall(text)


def detokenize(tokens: list[str]) -> str:
    out = ""
    for tok in tokens:
        if not out or out.endswith("(") or tok in {")", ",", ";", ":", "?", "!"}:
            out += tok
        else:
            out += " " + tok
    return out.strip()


def _capitalised(token: str) -> bool:
    return token[:1].isupper()


def _balanced(tokens: list[str]) -> list[str]:
    """Drop a "(" or ")" left without its partner at either end."""
    while tokens and (tokens[0] == ")" or (tokens[0] == "(" and ")" not in tokens)):
        tokens = tokens[1:]
    while tokens and (tokens[-1] == "(" or (tokens[-1] == ")" and "(" not in tokens)):
        tokens = tokens[:-1]
    return tokens


def dq_option(question: str, dq: str) -> str:
    """What ``dq`` adds or changes relative to ``question`` (token LCS diff, SequenceMatcher).

    The DQ-side spans of every non-equal block are joined; punctuation, lower-case prepositions
    and articles at the ends are dropped ("in the 2002 film" -> "2002 film"). A span ending in a
    capitalised word is completed with the name it starts ("Cricket" + "World Cup",
    "Republic of the" + "Congo"). A DQ that only deletes words yields the whole DQ.
    """
    aq_tok, dq_tok = tokenize(question), tokenize(dq)
    matcher = difflib.SequenceMatcher(None, [t.lower() for t in aq_tok], [t.lower() for t in dq_tok],
                                      autojunk=False)
    spans = [(j1, j2) for tag, _, _, j1, j2 in matcher.get_opcodes() if tag in ("insert", "replace")]
    pieces = []
    for j1, j2 in spans:
        piece = _clean_span(dq_tok, j1, j2)
        if piece:
            pieces.append(piece)
    if not pieces:
        return detokenize([t for t in dq_tok if t not in _PUNCT])
    return " ".join(pieces)


def _clean_span(tokens: list[str], j1: int, j2: int) -> str:
    span = tokens[j1:j2]
    while span and (span[0] in _PUNCT or span[0] in _EDGE_WORDS):
        span = span[1:]
    stripped = []
    while span and (span[-1] in _PUNCT or span[-1] in _EDGE_WORDS):
        stripped.insert(0, span.pop())
    if span and _capitalised(span[-1]) and set(stripped) <= _NAME_JOINERS:
        follow = []
        for tok in tokens[j2:]:
            if not _capitalised(tok):
                break
            follow.append(tok)
        if follow:
            span = span + stripped + follow
    return detokenize(_balanced(span))


def _is_year(option: str) -> bool:
    return bool(re.fullmatch(r"\d{4}s?", option))


def category_of(options: list[str]) -> tuple[str, list[str]]:
    """Category from the options' common head word, "year" for bare years, else "one".

    A shared lower-case last word becomes the category ("2002 film", "2012 film" -> film:
    2002, 2012), likewise a shared lower-case first word ("season 1", "season 2" -> season: 1, 2).
    """
    words = [o.split() for o in options]
    if len(options) >= 2 and all(len(w) >= 2 for w in words):
        last = {w[-1] for w in words}
        if len(last) == 1 and next(iter(last)).isalpha() and next(iter(last)).islower():
            return words[0][-1], [" ".join(w[:-1]) for w in words]
        first = {w[0] for w in words}
        if len(first) == 1 and next(iter(first)).isalpha() and next(iter(first)).islower():
            return words[0][0], [" ".join(w[1:]) for w in words]
    if options and all(_is_year(o) for o in options):
        return "year", options
    return "one", options


def dq_options(question: str, dqs: list[str]) -> list[str]:
    """The option :func:`cq_from_dqs` builds from each DQ, in the DQs' order (with the category's head
    word taken off as there; a DQ whose option repeats an earlier one's gets the same option)."""
    edits = [dq_option(question, dq) for dq in dqs]
    firsts: dict[str, str] = {}
    for edit in edits:
        if edit:
            firsts.setdefault(edit.lower(), edit)
    unique = list(firsts.values())
    _, stripped = category_of(unique)
    by_edit = {e.lower(): s for e, s in zip(unique, stripped)}
    return [by_edit.get(e.lower(), e) for e in edits]


def cq_from_dqs(question: str, dqs: list[str]) -> tuple[str, list[str]]:
    options: list[str] = []
    seen = set()
    for dq in dqs:
        option = dq_option(question, dq)
        if option and option.lower() not in seen:
            seen.add(option.lower())
            options.append(option)
    return category_of(options)


def gold_dq_questions(record: dict) -> list[str]:
    dqs = (record.get(GOLD) or {}).get("dqs")
    if dqs is None:
        raise InputError(f"record {record.get('id')} has no gold.dqs; --method from-dqs needs AmbigNQ-style "
                         "gold (cq convert ambignq ...)")
    return [d["question"] if isinstance(d, dict) else str(d) for d in dqs]


def add_silver_cq(gold: dict, question: str) -> None:
    """gold.cq from the gold DQs (AskCQ-style options = what each DQ adds), marked as silver; a gold
    CQ already there (CAmbigNQ) is kept and marked as gold."""
    if gold.get("cq") is not None:
        gold.setdefault("cq_source", "gold")
        return
    if gold.get("ambiguous") and len(gold.get("dqs", [])) >= 2:
        category, options = cq_from_dqs(question, [d["question"] for d in gold["dqs"]])
        if options:
            # the CQ from-dqs writes (options the scorer's parser would read twice dropped), so
            # from-dqs stays the exact upper bound against these references
            gold["cq"] = canonical_cq(which(category), options, "from-dqs")["text"]
            gold["cq_source"] = "silver: built from gold DQs by cq gen-cq --method from-dqs"
