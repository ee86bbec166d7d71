"""Answer stage: short answers from a record's passages with a prompted reader (any Generator).

Modes:
  single  one answer per question (the reader over the top passages);
  cq      AskCQ Task 3: one answer per option of the record's clarifying question, each for the
          "AQ revised by CQ" ("AQ, Which [category]: [option]") over passages reranked for it;
  multi   AmbigQA multiple answers: the reader lists every answer it finds (deduplicated).
Extras (REFUEL): ``round_trip`` re-asks the question with each new answer's context until no new
answer appears; ``verify`` scores log p(answer | passages + question) and drops weak pairs.

Single and cq answers come from a few-shot completion prompt (no chat template: a small chat model
answers a chat turn with a sentence or a title, but continues "Answer:" with a short answer) and
are then grounded (``grounding="span"``, :func:`ground`): snapped to the passage span they best
match, or, when the generation is unusable, replaced by the passage span the model scores highest.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from ..errors import InputError
from ..metrics.normalize import longest_common_substring, normalize_answer
from ..records import PASSAGES, require, set_meta
from .rerank import RUN_RETRIEVE, rerank_lists

DEFAULT_READER = "HuggingFaceTB/SmolLM2-135M-Instruct"
ANSWERS = "answers"

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
VERIFY_QUERY = "Question: {question}\nAnswer:"


@dataclass
class AnswerConfig:
    mode: str = "single"               # single | cq | multi
    passages: int = 3                  # passages shown to the reader
    passage_chars: int = 600           # each passage's text cut to this many characters
    max_new_tokens: int = 16
    selected: bool = False             # cq mode: only record["selected_option"]
    rerank_depth: int = 20             # cq mode: passages reranked per revised question
    round_trip: bool = False
    max_rounds: int = 2
    verify: bool = False
    verify_threshold: float = -8.0
    grounding: str = "span"            # span: snap answers to passage spans (see ground); none: as generated
    max_candidates: int = 30           # span grounding: spans scored when the generation is unusable
    batch_size: int = 32

    def params(self) -> dict:
        keep = {"mode": self.mode, "passages": self.passages, "passage_chars": self.passage_chars,
                "max_new_tokens": self.max_new_tokens, "grounding": self.grounding}
        if self.grounding == "span":
            keep["max_candidates"] = self.max_candidates
        if self.mode == "cq":
            keep.update(selected=self.selected, rerank_depth=self.rerank_depth)
        if self.round_trip:
            keep.update(round_trip=True, max_rounds=self.max_rounds)
        if self.verify:
            keep.update(verify=True, verify_threshold=self.verify_threshold)
        return keep


@dataclass
class Question:
    """One question to answer for a record: the record's own, or a revision of it."""

    record: int
    text: str
    passages: list[dict]
    option: str | None = None
    answers: list[dict] = field(default_factory=list)  # {text, grounding, generated?}


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
    return dedupe(clean_answer(re.sub(r"^\s*(?:[-*•]|\d+[.)])\s+", "", p)) for p in parts)


def dedupe(answers) -> list[str]:
    seen, out = set(), []
    for answer in answers:
        key = normalize_answer(answer)
        if key and key not in seen:
            seen.add(key)
            out.append(answer)
    return out


# --- grounding -----------------------------------------------------------------------------------
#
# A reader's answer is snapped to a span of the passages it was shown. Spans are word n-grams
# (n <= MAX_SPAN_WORDS) that do not run across sentence punctuation, brackets or quotes.

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
           max_candidates: int = 30) -> dict:
    """Ground a generated ``answer`` in the passages the reader was shown.

    Returns ``{"text", "grounding"}`` (plus ``"generated"`` when the text changed), where grounding is
      ``exact``  the answer already is a passage span: kept as generated;
      ``span``   snapped to the span with the best token F1 (at least SNAP_MIN_F1) that keeps
                 every name and number of the generation (:func:`_keeps_names`);
      ``score``  the generation was unusable (empty, only question words, or no span matches it
                 well): among up to ``max_candidates`` spans (the best-matching ones, then
                 :func:`candidate_spans`) the one with the highest log p(" span\\n" | ``prompt``)
                 under ``scorer`` (a Generator; one batched call, the prompt's KV cache shared);
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
    scores = scorer.score([""] * len(candidates), [f" {s.text}\n" for s in candidates], prefix=prompt)
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


# --- prompts -------------------------------------------------------------------------------------

def shown_passages(passages: list[dict], n: int, chars: int) -> list[tuple[str, str]]:
    """(title, text) of the top ``n`` passages as the reader sees them: text cut at a word
    boundary before ``chars`` characters."""
    shown = []
    for p in passages[:n]:
        text = p.get("text", "")
        if len(text) > chars:
            text = text[:chars].rsplit(" ", 1)[0]
        shown.append((p.get("title") or "", text))
    return shown


def passage_block(passages: list[dict], n: int, chars: int) -> str:
    lines = []
    for i, (title, text) in enumerate(shown_passages(passages, n, chars), start=1):
        full = passages[i - 1].get("text", "")
        more = " ..." if len(full) > len(text) else ""
        lines.append(f"[{i}] {title + ': ' if title else ''}{text}{more}")
    return "\n".join(lines)


def revised_question(question: str, category: str | None, option: str) -> str:
    """AskCQ's "AQ revised by CQ": ``AQ, Which [category]: [option]``.

    ``category`` may be a bare noun ("film") or already a head ("Which film", "In which year")."""
    category = (category or "").strip()
    if not category:
        head = "Which one"
    elif re.match(r"^(?:\w+\s+)?which\b", category, re.I):
        head = category[0].upper() + category[1:]
    else:
        head = f"Which {category}"
    return f"{question.strip()}, {head}: {option.strip()}"


def record_cq(record: dict) -> tuple[str | None, list[str]]:
    """(category, options) of the record's predicted ``cq`` (a dict from cq gen-cq, or its text)."""
    if "cq" not in record:
        raise InputError(f"record {record.get('id')} has no 'cq'; run `cq gen-cq` first (or drop --mode cq)",
                         record_id=record.get("id"))
    cq = record["cq"]
    if cq is None:  # gen-cq judged it unambiguous and asked nothing
        return None, []
    if isinstance(cq, str):
        from ..metrics.cq import parse_cq

        category, options = parse_cq(cq)
        return category, options
    options = cq.get("options")
    if not options and cq.get("text"):
        from ..metrics.cq import parse_cq

        category, options = parse_cq(cq["text"])
        return cq.get("category") or category, options
    return cq.get("category"), list(options or [])


# --- the stage -----------------------------------------------------------------------------------

class Reader:
    """Prompts a Generator for answers; the reranker (cq mode) and verification share it."""

    def __init__(self, generator, config: AnswerConfig, cross_encoder=None):
        self.generator = generator
        self.config = config
        self.cross_encoder = cross_encoder

    def ask(self, questions: list[Question], multi: bool) -> list[list[dict]]:
        """Answers ``{text, grounding, generated?}`` for each question. Single answers come from
        the few-shot completion prompt (no chat template); multi lists from a chat turn. With
        ``grounding="span"`` single answers are grounded by :func:`ground` (model scoring
        included), listed answers are only snapped (then deduplicated again)."""
        c = self.config
        template = MULTI_PROMPT if multi else SINGLE_PROMPT
        prompts = [template.format(passages=passage_block(q.passages, c.passages, c.passage_chars),
                                   question=q.text) for q in questions]
        if multi:
            raw = self.generator.generate(prompts, max_new_tokens=c.max_new_tokens * 3, stop=["\n\n", "Question:"])
            found = [split_answers(r) for r in raw]
        else:
            raw = self.generator.generate(prompts, max_new_tokens=c.max_new_tokens, chat=False, stop=SINGLE_STOP)
            found = [[clean_answer(r)] for r in raw]
        out = []
        for q, prompt, texts in zip(questions, prompts, found):
            if c.grounding != "span":
                answers = [{"text": t, "grounding": "none"} for t in texts]
            else:
                shown = shown_passages(q.passages, c.passages, c.passage_chars)
                scorer = None if multi else self.generator
                answers = [ground(t, q.text, shown, scorer, prompt, c.max_candidates) for t in texts]
            keys = dedupe(a["text"] for a in answers)
            out.append([next(a for a in answers if a["text"] == k) for k in keys])
        return out

    def verify(self, items: list[tuple[Question, dict]]) -> None:
        """Adds ``verify_score`` = summed log p(" answer" | passages + question) to each answer;
        items of one question share its passages, whose KV cache is computed once."""
        c = self.config
        groups: dict[int, list[tuple[Question, dict]]] = {}
        for q, answer in items:
            groups.setdefault(id(q), []).append((q, answer))
        for group in groups.values():
            q = group[0][0]
            prefix = "Passages:\n" + passage_block(q.passages, c.passages, c.passage_chars) + "\n\n"
            prompts = [VERIFY_QUERY.format(question=q.text) for q, _ in group]
            scores = self.generator.score(prompts, [" " + a["text"] for _, a in group], prefix=prefix)
            for (_, answer), score in zip(group, scores):
                answer["verify_score"] = round(score, 4)


def answer_batch(records: list[dict], reader: Reader, info: dict) -> list[dict]:
    c = reader.config
    questions = _questions(records, reader)
    multi = c.mode == "multi"
    for q, found in zip(questions, reader.ask(questions, multi)):
        q.answers = found
    per_record: list[list[dict]] = [[] for _ in records]
    for q in questions:
        for answer in q.answers[: None if multi else 1]:
            entry = dict(answer)
            if q.option is not None:
                entry.update(option=q.option, question=q.text)
            per_record[q.record].append(entry)
    if c.round_trip and c.mode != "cq":
        _round_trip(records, questions, per_record, reader)
    if c.verify:
        _verify(records, questions, per_record, reader)
    for record, answers in zip(records, per_record):
        if c.verify:
            answers = [a for a in answers if a["verify_score"] >= c.verify_threshold]
        record[ANSWERS] = answers
        set_meta(record, "answer", info)
    return records


def _questions(records: list[dict], reader: Reader) -> list[Question]:
    c = reader.config
    if c.mode != "cq":
        return [Question(n, str(require(r, "question", "every record needs a question")),
                         list(require(r, PASSAGES, RUN_RETRIEVE))) for n, r in enumerate(records)]
    questions: list[Question] = []
    for n, record in enumerate(records):
        passages = list(require(record, PASSAGES, RUN_RETRIEVE))
        category, options = record_cq(record)
        if record["cq"] is None:  # no clarification asked: answer the question itself (AskCQ, CLAM)
            questions.append(Question(n, record["question"], passages, None))
            continue
        if c.selected:
            chosen = record.get("selected_option")
            if chosen is None:
                raise InputError(f"record {record.get('id')} has no 'selected_option'; set it (an oracle or a "
                                 f"user's choice) or drop --selected", record_id=record.get("id"))
            options = [chosen]
        for option in options:
            questions.append(Question(n, revised_question(record["question"], category, option), passages, option))
    if reader.cross_encoder is not None and questions:
        lists = rerank_lists(reader.cross_encoder, [q.text for q in questions],
                             [q.passages[: c.rerank_depth] for q in questions], c.passages, c.batch_size)
        for q, passages in zip(questions, lists):
            q.passages = passages
    return questions


def _round_trip(records, questions: list[Question], per_record: list[list[dict]], reader: Reader) -> None:
    """REFUEL's round trip with a built-in rewrite: each new answer's question is re-asked as
    "Q [context]" (context: the title of the best passage containing the answer); answers never
    seen before are added, until a round adds none or ``max_rounds`` is reached."""
    base = {q.record: q for q in questions}
    seen = [{normalize_answer(a["text"]) for a in answers} for answers in per_record]
    new = [list(answers) for answers in per_record]
    for _ in range(reader.config.max_rounds):
        asks: list[Question] = []
        for n, answers in enumerate(new):
            q = base[n]
            for answer in answers:
                context = _context(answer["text"], q.passages)
                if context and context.lower() not in q.text.lower():
                    ordered = sorted(q.passages, key=lambda p: p.get("title") != context)
                    asks.append(Question(n, f"{q.text} [{context}]", ordered))
        if not asks:
            return
        new = [[] for _ in per_record]
        for ask, found in zip(asks, reader.ask(asks, multi=True)):
            for answer in found:
                key = normalize_answer(answer["text"])
                if key and key not in seen[ask.record]:
                    seen[ask.record].add(key)
                    entry = {**answer, "question": ask.text}
                    per_record[ask.record].append(entry)
                    new[ask.record].append(entry)
        if not any(new):
            return


def _context(answer: str, passages: list[dict]) -> str | None:
    key = normalize_answer(answer)
    for p in passages:
        if key and f" {key} " in f" {normalize_answer(p.get('text', ''))} ":
            return p.get("title") or None
    return None


def _verify(records, questions: list[Question], per_record: list[list[dict]], reader: Reader) -> None:
    by_text = {(q.record, q.text): q for q in questions}
    base = {}
    for q in questions:
        base.setdefault(q.record, q)
    items = []
    for n, answers in enumerate(per_record):
        for answer in answers:
            q = by_text.get((n, answer.get("question"))) or base[n]
            if answer.get("question") and q.text != answer["question"]:
                q = Question(n, answer["question"], q.passages)
                by_text[(n, q.text)] = q
            items.append((q, answer))
    reader.verify(items)
