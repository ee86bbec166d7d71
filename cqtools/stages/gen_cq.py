"""Clarifying-question generation: ``cq: {text, category, options, method, valid}`` per record.

Every method ends in the CAmbigNQ form "Which [category]: [opt1], [opt2], or [optN]?" (two
options: "A or B"), parsed with the scorer's own parser (:func:`cqtools.metrics.cq.parse_cq`),
except ``llm --zero-shot`` whose free-form text is kept as the model wrote it.

Methods (the CQ_METHODS registry, cqtools/registry.py; plugins add more; :func:`build` assembles
the stage from Python):
  llm        few-shot prompt over the question and its top passages (CAmbigNQ style);
             with zero_shot: CLAM's "... I have to ask the following clarifying question:"
  seq2seq    a fine-tuned generator (``cq train gen-cq``) over "AQ [SEP] (answers [SEP]) passages"
  from-dqs   a silver CQ built from gold disambiguated questions: reads ``gold`` by design
             (an upper bound, and the training-data builder of ``cq train gen-cq``)
"""
from __future__ import annotations

import difflib
import functools
import re
from dataclasses import dataclass, field
from typing import Callable

from ..errors import InputError
from ..models.registry import role
from ..metrics.cq import parse_cq
from ..records import GOLD, answer_texts as predicted_answer_texts, set_meta
from ..records import passage_snippets as record_snippets
from ..registry import CQ_METHODS
from . import prompts

SEP = " [SEP] "
INVALID = "invalid form"
DEFAULT_LLM = role("generator").default
CAUSAL_SUFFIX = "\nClarifying question:"  # what a fine-tuned causal LM continues with its CQ
PASSAGE_WORDS = 60  # each passage's text is cut to this many words in prompts and seq2seq inputs (no option)


# --- the canonical form ------------------------------------------------------------------------

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


# --- from-dqs: a silver CQ from gold disambiguated questions ----------------------------------

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


# --- passages and answers as model input -------------------------------------------------------

def passage_snippets(record: dict, n: int, words: int = PASSAGE_WORDS) -> list[str]:
    """Top ``n`` passages as "title: text" cut to ``words`` words (:func:`cqtools.records.passage_snippets`)."""
    return record_snippets(record, n, words)


def answer_texts(record: dict, source: str | None) -> list[str] | None:
    """Answers for the input: ``pred`` = the record's ``answers`` (cq answer), ``gold`` = gold.answers
    (the paper's ground-truth-answers upper bound; read only when asked for explicitly)."""
    if source is None:
        return None
    if source == "gold":
        clusters = (record.get(GOLD) or {}).get("answers")
        if clusters is None:
            raise InputError(f"record {record.get('id')} has no gold.answers; --with-answers gold needs gold "
                             "from cq convert")
        return [c[0] if isinstance(c, list) else str(c) for c in clusters if c]
    return predicted_answer_texts(record, "run cq answer --mode multi first, or drop --with-answers", raw=True)


def seq2seq_input(question: str, snippets: list[str], answers: list[str] | None = None) -> str:
    """"AQ [SEP] passages" or "AQ [SEP] answers [SEP] passages" (the AskCQ input formats)."""
    parts = [question.strip()]
    if answers is not None:
        parts.append(" | ".join(answers))
    parts.append(" ".join(snippets))
    return SEP.join(parts)


# --- generators ---------------------------------------------------------------------------------

@dataclass
class CQMethod:
    """One way of writing CQs: ``run(records) -> list of cq dicts``, plus what goes into meta."""

    name: str
    run: Callable[[list[dict]], list[dict]]
    info: dict = field(default_factory=dict)


@CQ_METHODS.register("from-dqs", help="silver CQ built from gold.dqs (reads gold: an upper bound / training data)")
def from_dqs_method() -> CQMethod:
    def run(records):
        out = []
        for record in records:
            category, options = cq_from_dqs(record["question"], gold_dq_questions(record))
            if not options:  # unambiguous in the gold: there is nothing to ask
                out.append(None)
                continue
            out.append(canonical_cq(which(category), options, "from-dqs"))
        return out

    return CQMethod("from-dqs", run, {"method": "from-dqs", "reads": "gold.dqs"})


@CQ_METHODS.register("llm", help="few-shot prompt (CAmbigNQ style), or CLAM's zero-shot one",
                     defaults={"model": DEFAULT_LLM})
def load_llm_method(model: str, n_passages: int = 3, zero_shot: bool = False, max_new_tokens: int = 40,
                    device: str = "auto", dtype: str = "auto") -> CQMethod:
    from ..models.backends import load_generator

    return llm_method(load_generator(model, device, dtype), n_passages, zero_shot, max_new_tokens)


@CQ_METHODS.register("seq2seq", help="a generator from `cq train gen-cq` (AskCQ)")
def load_seq2seq_method(model: str | None, n_passages: int = 3, with_answers: str | None = None,
                        max_new_tokens: int = 40, device: str = "auto", dtype: str = "auto") -> CQMethod:
    if not model:
        raise InputError("--method seq2seq needs --model DIR from `cq train gen-cq`")
    from ..models.backends import load_generator

    return seq2seq_method(load_generator(model, device, dtype), n_passages, with_answers, max_new_tokens)


def llm_method(generator, n_passages: int, zero_shot: bool, max_new_tokens: int) -> CQMethod:
    """Few-shot (CAmbigNQ style) or zero-shot (CLAM) prompting of a :class:`Generator`."""
    name = "llm-zero-shot" if zero_shot else "llm"
    prefix = "" if zero_shot else prompts.gencq_prefix()

    def run(records):
        snippets = [passage_snippets(r, n_passages) for r in records]
        if zero_shot:
            texts = [prompts.zero_shot_prompt(r["question"], s) for r, s in zip(records, snippets)]
        else:
            texts = [prefix + prompts.gencq_prompt(r["question"], s) for r, s in zip(records, snippets)]
        raw = generator.generate(texts, max_new_tokens=max_new_tokens, chat=False, stop=["\n"])
        if zero_shot:
            return [free_form(g, name) for g in raw]
        return [repair(prompts.GENCQ_PRIME.strip() + " " + g.lstrip(), name) for g in raw]

    return CQMethod(name, run, {"method": name, "model": generator.name, **dict(generator.info),
                                "passages": n_passages, "max_new_tokens": max_new_tokens})


def free_form(raw: str, method: str) -> dict:
    """Zero-shot CQs stay as written; category/options filled where they can be read."""
    text = first_question(raw)
    category, options = parse_cq(text) if text else (INVALID, [INVALID])
    if canonical_head(category) and options and all(options):
        return make_cq(text, category, options, method, True, raw=raw)
    options = extract_options(text)
    if options:
        return make_cq(text, "one", options, method, False, raw=raw, repaired=True)
    return make_cq(text, INVALID, [INVALID], method, False, raw=raw)


def seq2seq_method(generator, n_passages: int, with_answers: str | None, max_new_tokens: int) -> CQMethod:
    """A fine-tuned generator (see :mod:`cqtools.stages.train`): a seq2seq model reads the input
    itself, a causal LM reads it followed by :data:`CAUSAL_SUFFIX`; output repaired like ``llm``'s."""
    suffix = CAUSAL_SUFFIX if generator.kind == "causal" else ""

    def run(records):
        inputs = [seq2seq_input(r["question"], passage_snippets(r, n_passages), answer_texts(r, with_answers))
                  + suffix for r in records]
        raw = generator.generate(inputs, max_new_tokens=max_new_tokens, chat=False, stop=["\n"])
        return [repair(g, "seq2seq") for g in raw]

    return CQMethod("seq2seq", run, {"method": "seq2seq", **dict(generator.info), "passages": n_passages,
                                     "with_answers": with_answers, "max_new_tokens": max_new_tokens})


# --- the stage ------------------------------------------------------------------------------

def needs_cq(record: dict) -> bool:
    """True unless ``cq detect`` judged the record unambiguous (no ``ambiguity`` = ambiguous)."""
    ambiguity = record.get("ambiguity")
    if ambiguity is None:
        return True
    if not isinstance(ambiguity, dict) or "label" not in ambiguity:
        raise InputError(f"record {record.get('id')}: 'ambiguity' must be {{label, score, method}} from cq detect")
    return bool(ambiguity["label"])


def build(method: str = "llm", all_records: bool = False, **options) -> Callable[[list[dict]], list[dict]]:
    """The gen-cq stage as a batch function (records -> records), e.g. ``build("from-dqs", all_records=True)``."""
    return functools.partial(gen_cq_batch, method=CQ_METHODS.build(method, **options), all_records=all_records)


def gen_cq_batch(records: list[dict], method: CQMethod, all_records: bool) -> list[dict]:
    todo = [r for r in records if all_records or needs_cq(r)]
    cqs = method.run(todo) if todo else []
    made = {id(r): cq for r, cq in zip(todo, cqs)}
    for record in records:
        record["cq"] = made.get(id(record))
        set_meta(record, "gen_cq", method.info)
    return records
