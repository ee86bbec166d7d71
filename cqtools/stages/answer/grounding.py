"""Span grounding: a reader's answer snapped to a span of the passages it was shown.

Spans are word n-grams (n <= MAX_SPAN_WORDS) that do not run across sentence punctuation,
brackets or quotes. :func:`ground` is the entry point; :func:`snap_spans` and
:func:`candidate_spans` find the spans it chooses from.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from ...metrics.normalize import longest_common_substring, normalize_answer
from .options import GenerativeOptions

MAX_SPAN_WORDS = 6
SNAP_MIN_F1 = 0.5        # a generation is snapped when some span matches it with token F1 >= this
SNAP_CANDIDATES = 5      # best-matching spans kept as score candidates when the generation is unusable
_EDGE = "\"'“”‘’«»()[]{}<>,.;:!?*"   # stripped from both ends of a word
_BREAK_AFTER = tuple(".;:!?)]\"”»")             # a span never runs past a word ending so
_BREAK_BEFORE = tuple("([\"“«")                 # ... nor starts before a word opening so
_CONNECTORS = frozenset("of the de da del di van von der la le du".split())  # inside names: Bank of America
_LEADING = frozenset(("a an the in on at by for from with of to as after before during when while since until "
                      "he she it they we his her its their this that these those there here however although "
                      "but and or also so then according is was are were be been being has have had do does "
                      "did will would can could may might should must who whom whose which what where why how "
                      "not no called named known").split())  # never the first (or, in a snap, last) word
_NUMBER_WORDS = frozenset(("one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
                           "fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy "
                           "eighty ninety hundred thousand million billion").split())
_NUMERIC_Q = re.compile(r"^\s*(?:when|what (?:year|date|age)|which year|in (?:what|which) year|"
                        r"how (?:many|much|long|old|far|tall|big|often|fast|high|deep))\b", re.I)
_PERSON_Q = re.compile(r"^\s*(?:who|whom|whose)\b", re.I)
_POSSESSIVE = re.compile(r"(?<=\w)['’]s$")


def _norm_words(text: str) -> list[str]:
    """Normalised tokens with possessives dropped ("Billy Gordon's" -> billy gordon)."""
    return normalize_answer(" ".join(_POSSESSIVE.sub("", w) for w in text.split())).split()


@dataclass(frozen=True)
class Word:
    text: str          # the word without surrounding punctuation
    start: int         # character offsets in its piece (a passage title or text)
    end: int
    piece: int         # which piece: passage i's title is 2i, its text 2i + 1
    ends_run: bool     # the original word ended with sentence punctuation or a bracket/quote
    comma: bool        # ... or with a comma (ends a run of names, not a span)


@dataclass(frozen=True)
class Span:
    text: str                  # surface form as in the passage
    norm: tuple[str, ...]      # normalised tokens
    order: tuple[int, int, int]  # (piece, start offset, words): ties go to the earliest, shortest


def _segments(shown: list[tuple[str, str]]) -> tuple[list[str], list[list[Word]]]:
    """Pieces (title, text of each passage) and their runs of words that spans may cover."""
    pieces = [piece for title_text in shown for piece in title_text]
    segments: list[list[Word]] = []
    for k, piece in enumerate(pieces):
        current: list[Word] = []
        for m in re.finditer(r"\S+", piece):
            raw = m.group()
            left = len(raw) - len(raw.lstrip(_EDGE))
            word = _POSSESSIVE.sub("", raw.strip(_EDGE))
            if raw.startswith(_BREAK_BEFORE) and current:
                segments.append(current)
                current = []
            if not any(ch.isalnum() for ch in word):  # a dash, a bullet: spans stop here
                if current:
                    segments.append(current)
                current = []
                continue
            start = m.start() + left
            current.append(Word(word, start, start + len(word), k, raw.rstrip("*").endswith(_BREAK_AFTER),
                                raw.endswith(",")))
            if current[-1].ends_run:
                segments.append(current)
                current = []
        if current:
            segments.append(current)
    return pieces, segments


def _span(pieces: list[str], words: list[Word]) -> Span:
    first, last = words[0], words[-1]
    text = pieces[first.piece][first.start:last.end]
    return Span(text, tuple(normalize_answer(text).split()), (first.piece, first.start, len(words)))


def _f1(a: Counter, b: tuple[str, ...]) -> float:
    same = sum((a & Counter(b)).values())
    if not same:
        return 0.0
    precision, recall = same / len(b), same / sum(a.values())
    return 2 * precision * recall / (precision + recall)


def _only_question(norm, question: set[str]) -> bool:
    return all(t in question for t in norm)


def snap_spans(answer: str, shown: list[tuple[str, str]], question: str = "") -> list[tuple[float, Span]]:
    """Passage spans matching ``answer``, best first: by token F1 on the words that are not in the
    question (an answer does not repeat its question: "The Joker was played by Heath Ledger" should
    snap to "Heath Ledger", not "Heath Ledger played the Joker"), then by the longest common
    substring of the normalised strings, then earliest and shortest. Spans made only of question
    words are left out; a span starts and ends with a content word of the answer."""
    tokens = normalize_answer(answer).split()
    qset = set(normalize_answer(question).split())
    content = [t for t in tokens if t not in qset]
    if not content:
        return []
    wanted, bag = set(tokens), Counter(content)
    pieces, segments = _segments(shown)
    found: dict[tuple[str, ...], tuple[float, Span]] = {}
    for words in segments:
        hits = [bool(wanted & set(normalize_answer(w.text).split())) and w.text.lower() not in _LEADING
                for w in words]
        for i in range(len(words)):
            if not hits[i]:
                continue
            for j in range(i, min(len(words), i + MAX_SPAN_WORDS)):
                if not hits[j]:
                    continue
                span = _span(pieces, words[i:j + 1])
                if not span.norm or span.norm in found or _only_question(span.norm, qset):
                    continue
                found[span.norm] = (_f1(bag, tuple(t for t in span.norm if t not in qset)), span)
    key = " ".join(tokens)
    ranked = sorted(found.values(), key=lambda fs: (-round(fs[0], 9),
                                                     -longest_common_substring(key, " ".join(fs[1].norm)),
                                                     fs[1].order))
    return ranked


def candidate_spans(shown: list[tuple[str, str]], question: str, limit: int = 30) -> list[Span]:
    """Answer-like spans of the passages, in passage order: runs of capitalised or numeric words
    (names, titles, dates; "of"/"de"... allowed inside), cut to MAX_SPAN_WORDS, plus the bare years
    inside them. Spans made only of question words are left out; "when"/"how many"
    questions keep numeric spans, "who" questions non-numeric ones (when any are left)."""
    qset = set(normalize_answer(question).split())
    pieces, segments = _segments(shown)
    spans: list[Span] = []
    seen: set[tuple[str, ...]] = set()

    def add(words: list[Word]) -> None:
        while words and words[0].text.lower() in _LEADING:
            words = words[1:]
        words = words[:MAX_SPAN_WORDS]
        while words and words[-1].text.lower() in _CONNECTORS:
            words = words[:-1]
        if not words or (len(words) == 1 and len(words[0].text) == 1 and not words[0].text.isdigit()):
            return  # nothing left, or an initial
        span = _span(pieces, words)
        if span.norm and span.norm not in seen and not _only_question(span.norm, qset):
            seen.add(span.norm)
            spans.append(span)

    def answer_like(w: Word) -> bool:
        return w.text[0].isupper() or any(ch.isdigit() for ch in w.text) or w.text.lower() in _NUMBER_WORDS

    for words in segments:
        run: list[Word] = []
        for n, w in enumerate(words + [None]):
            inside = w is not None and (answer_like(w) or (run and w.text.lower() in _CONNECTORS))
            if inside:
                run.append(w)
                # a comma ends a run, except inside a date: "October 24, 2006"
                nxt = words[n + 1] if n + 1 < len(words) else None
                if w.comma and not (w.text.isdigit() and nxt is not None and nxt.text.isdigit()):
                    inside = False
            if not inside and run:
                add(run)
                if len(run) > 1:
                    for part in run:
                        if part.text.isdigit() and len(part.text) in (3, 4):  # a year inside a date
                            add([part])
                run = []
    numeric = [s for s in spans if any(ch.isdigit() for ch in s.text) or set(s.norm) & _NUMBER_WORDS]
    if _NUMERIC_Q.match(question) and numeric:
        spans = numeric
    elif _PERSON_Q.match(question) and len(numeric) < len(spans):
        spans = [s for s in spans if s not in numeric]
    return spans[:limit]


def ground(answer: str, question: str, shown: list[tuple[str, str]], scorer=None, prompt: str = "",
           max_candidates: int = GenerativeOptions.max_candidates, batch_size: int | None = None) -> dict:
    """Ground a generated ``answer`` in the passages the reader was shown.

    Returns ``{"text", "grounding"}`` (plus ``"generated"`` when the text changed), where grounding is
      ``exact``  the answer already is a passage span: kept as generated;
      ``span``   snapped to the span with the best token F1 (at least SNAP_MIN_F1) that keeps
                 every name and number of the generation (:func:`_keeps_names`);
      ``score``  the generation was unusable (empty, only question words, or no span matches it
                 well): among up to ``max_candidates`` spans (the best-matching ones, then
                 :func:`candidate_spans`) the one with the highest log p(" span\\n" | ``prompt``)
                 under ``scorer`` (a Generator; one call, in batches of ``batch_size`` when given,
                 the prompt's KV cache shared);
      ``none``   nothing to ground to (no scorer, or no candidate): kept as generated.
    Deterministic: ties go to the earlier, shorter span."""
    tokens = _norm_words(answer)
    qset = set(normalize_answer(question).split())
    usable = bool(tokens) and not _only_question(tokens, qset)
    if usable:
        key = " ".join(tokens)
        if any(f" {key} " in f" {' '.join(_norm_words(piece))} " for pair in shown for piece in pair):
            return {"text": answer, "grounding": "exact"}
    snapped = snap_spans(answer, shown, question) if usable else []
    if snapped and snapped[0][0] >= SNAP_MIN_F1 and _keeps_names(answer, snapped[0][1], qset):
        return _grounded(snapped[0][1].text, "span", answer)
    if scorer is None or max_candidates < 1:
        return {"text": answer, "grounding": "none"}
    candidates, seen = [], set()
    for span in [s for f, s in snapped[:SNAP_CANDIDATES] if f > 0] + candidate_spans(shown, question, max_candidates):
        if span.norm not in seen:
            seen.add(span.norm)
            candidates.append(span)
    candidates = candidates[:max_candidates]
    if not candidates:
        return {"text": answer, "grounding": "none"}
    per_call = {} if batch_size is None else {"batch_size": batch_size}
    scores = scorer.score([""] * len(candidates), [f" {s.text}\n" for s in candidates], prefix=prompt, **per_call)
    best = min(range(len(candidates)), key=lambda i: (-scores[i], i))
    return _grounded(candidates[best].text, "score", answer)


def _keeps_names(answer: str, span: Span, qset: set[str]) -> bool:
    """A snap may drop filler words ("the actor Heath Ledger" -> "Heath Ledger") but no capitalised
    or numeric word that is not in the question ("Billy Gordon" -> "Billy", "200 ft" -> "ft" are
    refused: the generation then counts as unusable)."""
    kept = set(span.norm)
    for word in answer.split():
        if (word[:1].isupper() or any(ch.isdigit() for ch in word)) and word.strip(_EDGE).lower() not in _LEADING:
            if any(t not in kept and t not in qset for t in _norm_words(word)):
                return False
    return True


def _grounded(text: str, how: str, generated: str) -> dict:
    out = {"text": text, "grounding": how}
    if text != generated:
        out["generated"] = generated
    return out

