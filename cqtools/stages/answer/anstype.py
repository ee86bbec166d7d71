"""Answer-type fit: a prior on the extractive reader's span choice (``cq answer --type-prior W``).

The question's form says what kind of answer it wants: "who"/"whom"/"whose" a name, "where" a place,
"when"/"what year" a date, "how many"/"how much"/"how long" a number. A span of the wrong kind ("the
singer" for "who sang ...", "1963" for "who ...", "in London" for "how many ...") is penalised by ``W``
(in the reader's score units: start + end logits over "no answer") before the spans are ordered, so a
passage's best span is its best span of the wanted kind when one scores within ``W`` of it. Questions
of any other form ("what", "which", ...) get no prior, and ``W = 0`` (the default) leaves decoding as it
was. The prior is a surface test, with no model: a name or place is a span with a capitalised word and
no digits; a date a span with a digit, a month or a century/decade word; a number a span with a digit
or a number word. Measured in docs/benchmarks/first-contact.md ("Answer-type prior").
"""
from __future__ import annotations

import re

NAME, PLACE, DATE, NUMBER = "name", "place", "date", "number"

_DATE_Q = re.compile(r"(what (year|date|day|month|century|decade|time)|which (year|date|day|month|century|decade))\b")
_NUMBER_Q = re.compile(r"^(how (many|much|long|old|far|tall|high|big|large|fast|deep|often)|what (number|percentage|percent))\b")
_FIRST_WH = re.compile(r"\b(who|whom|whose|where|when|what|which|how)\b")

_MONTHS = ("january february march april may june july august september october november december "
           "jan feb mar apr jun jul aug sep sept oct nov dec").split()
_NUMBER_WORDS = set(("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
                     "sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety "
                     "hundred thousand million billion trillion dozen first second third fourth fifth sixth "
                     "seventh eighth ninth tenth half once twice").split())
_DATE_WORDS = set(_MONTHS) | {"century", "centuries", "decade", "year", "years", "spring", "summer", "autumn",
                              "fall", "winter", "bc", "bce", "ad", "ce"}


def expected_type(question: str) -> str | None:
    """The kind of answer ``question`` asks for: name, place, date, number, or None (no prior).

    The question's first wh-word decides ("the song who sang ..." too); a date form anywhere ("in what year
    ...") is a date; "how many"/"how much"/... at the start a number."""
    q = " ".join(question.lower().replace("?", " ").split())
    if _NUMBER_Q.search(q):
        return NUMBER
    first = _FIRST_WH.search(q)
    if first is None:
        return None
    word = first.group(1)
    if word == "when" or _DATE_Q.match(q, first.start()):
        return DATE
    if word in ("who", "whom", "whose"):
        return NAME
    if word == "where":
        return PLACE
    return None


def _words(text: str) -> list[str]:
    return re.findall(r"[A-Za-z]+", text)


def fits(kind: str | None, text: str) -> bool:
    """Whether span ``text`` is of ``kind`` (always, for None)."""
    if kind is None:
        return True
    lower = [w.lower() for w in _words(text)]
    digit = any(c.isdigit() for c in text)
    if kind in (NAME, PLACE):
        return not digit and any(w[0].isupper() for w in _words(text))
    if kind == DATE:
        return digit or any(w in _DATE_WORDS for w in lower)
    if kind == NUMBER:
        return digit or any(w in _NUMBER_WORDS for w in lower)
    return True


def prior(question: str, weight: float):
    """The score under the prior, as a function of a span (``{text, score}``): its reader score, less
    ``weight`` when it is not of the kind ``question`` asks for (unchanged for a question of no known kind)."""
    kind = expected_type(question) if weight else None
    return lambda span: span["score"] - (0.0 if fits(kind, span["text"]) else weight)


def apply_prior(spans: list[dict], question: str, weight: float) -> list[dict]:
    """``spans`` (best first) re-sorted by their score under the prior (stable: ties keep their order);
    the records themselves are untouched. ``weight`` 0: ``spans`` as they were."""
    if not weight:
        return spans
    score = prior(question, weight)
    return sorted(spans, key=lambda span: -score(span))
