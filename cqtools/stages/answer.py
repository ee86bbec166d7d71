"""Answer stage: short answers from a record's passages with a prompted reader (any Generator).

Modes:
  single  one answer per question (the reader over the top passages);
  cq      AskCQ Task 3: one answer per option of the record's clarifying question, each for the
          "AQ revised by CQ" ("AQ, Which [category]: [option]") over passages reranked for it;
  multi   AmbigQA multiple answers: the reader lists every answer it finds (deduplicated).
Extras (REFUEL): ``round_trip`` re-asks the question with each new answer's context until no new
answer appears; ``verify`` scores log p(answer | passages + question) and drops weak pairs.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..errors import InputError
from ..metrics.normalize import normalize_answer
from ..records import PASSAGES, require, set_meta
from .rerank import RUN_RETRIEVE, rerank_lists

DEFAULT_READER = "HuggingFaceTB/SmolLM2-135M-Instruct"
ANSWERS = "answers"

SINGLE_PROMPT = (
    "Read the passages and answer the question with a short answer of one to five words, "
    "copied from the passages. Reply with the answer only.\n\n{passages}\n\nQuestion: {question}\nAnswer:"
)
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
    batch_size: int = 32

    def params(self) -> dict:
        keep = {"mode": self.mode, "passages": self.passages, "passage_chars": self.passage_chars,
                "max_new_tokens": self.max_new_tokens}
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
    answers: list[str] = field(default_factory=list)


# --- answer strings ------------------------------------------------------------------------------

_WRAPPERS = re.compile(
    r"^(?:(?:the\s+)?(?:short\s+)?answers?\s*(?:is|are|was|would be|:)\s*:?|answer\s*:|a\s*:|it\s+(?:is|was)\s+)\s*",
    re.I)
_COPULA = re.compile(r"^.{3,}?\b(?:is|was|are|were|by)\s+(.+)$", re.I)


def clean_answer(text: str, max_words: int = 5) -> str:
    """A generation cut to its short answer: first line, no "The answer is", no quotes, no
    trailing period; a sentence like "The capital of France is Paris" keeps what follows the verb
    when that is short enough."""
    text = text.strip().splitlines()[0] if text.strip() else ""
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


# --- prompts -------------------------------------------------------------------------------------

def passage_block(passages: list[dict], n: int, chars: int) -> str:
    lines = []
    for i, p in enumerate(passages[:n], start=1):
        text = p.get("text", "")
        if len(text) > chars:
            text = text[:chars].rsplit(" ", 1)[0] + " ..."
        title = f"{p['title']}: " if p.get("title") else ""
        lines.append(f"[{i}] {title}{text}")
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
    cq = record.get("cq")
    if cq is None:
        raise InputError(f"record {record.get('id')} has no 'cq'; run `cq gen-cq` first (or drop --mode cq)",
                         record_id=record.get("id"))
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

    def ask(self, questions: list[Question], multi: bool) -> list[list[str]]:
        c = self.config
        template = MULTI_PROMPT if multi else SINGLE_PROMPT
        prompts = [template.format(passages=passage_block(q.passages, c.passages, c.passage_chars),
                                   question=q.text) for q in questions]
        tokens = c.max_new_tokens * (3 if multi else 1)
        raw = self.generator.generate(prompts, max_new_tokens=tokens, stop=["\n\n", "Question:"])
        if multi:
            return [split_answers(r) for r in raw]
        return [[a] if (a := clean_answer(r)) else [] for r in raw]

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
        for text in q.answers[: None if multi else 1]:
            entry = {"text": text}
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
            for text in found:
                key = normalize_answer(text)
                if key and key not in seen[ask.record]:
                    seen[ask.record].add(key)
                    entry = {"text": text, "question": ask.text}
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
