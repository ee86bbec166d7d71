"""``cq gen-cq --method pred-answers``: a clarifying question grounded in the reader's own answers.

AskCQ (Lee et al. 2023, "Predicted Answers for AQ") gives its CQ generator the answers a QA model
predicts for the ambiguous question; a fine-tuned BART then writes the CQ. cq realises the same input
with a template instead of a generator, so no free text from a small LM reaches the user:

1. the record's ``answers`` (``cq answer --mode multi``; when the record has none, the stage reads them
   itself with the installed extractive reader, the shipped one on a fresh clone, in multi mode);
2. one answer per passage (its best span: the reader lists those first), from passages the reranker
   scored at least ``min_rerank_score`` (0 by default: the cross-encoder's logit, under 0 the passage
   is judged irrelevant to the question) and, with ``min_score``, scoring at least that (the extractive
   reader's margin over "no answer here"; off by default: the small shipped reader puts correct answers
   under 0, e.g. "Canberra" at -4.2); repeats (after the scorer's answer normalisation) are dropped,
   ``max_options`` at most are kept;
3. each answer's option text: the title of the passage it was read from (``option_text=title``),
   the answer itself (``answer``), or ``auto``: the titles when the answers came from passages with
   distinct titles, else the answers (two answers from one article differ by what they answer,
   not by which article they come from);
   ``cq.answers`` lists the answers offered, ``cq.answers_from`` says whether they were the record's
   (``record``) or read here (``reader``);
   an answer read from a passage whose title is itself an answer the reader found is left out (that passage is
   about a candidate answer, not a reading: "Canberra" for "What is the capital of Australia?");
4. fewer than two options: with ``fallback=titles`` (the default), and no relevant passage titled with an
   answer the reader found, the options are the distinct titles of
   the passages the reranker scored at least ``min_rerank_score`` (``cq.options_from``: ``titles``;
   ``cq detect`` judged the question ambiguous, and the relevant articles are what it may be about);
   still fewer than two, or ``fallback=none``: nothing is asked (``cq: null``; ``cq answer --mode cq``
   then answers the question itself). Otherwise "Which one: A, B, or C?" (the category most silver
   CQs have). ``cq detect --method diverse`` calls a question ambiguous only when two answers are
   supported, so on that path the fallback serves only ``--all``.

Where cq differs from AskCQ: no generator (a template), so the category is always "one" and the
options are answers or their passages' titles, never paraphrases; the answers come from cq's reader
over the record's passages (AskCQ's SPANSEQGEN reads the question and relevant passages too), and the
score floor and the "fewer than two: ask nothing" rule are cq's.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...errors import InputError
from ...records import ANSWERS
from ...registry import option
from .form import canonical_cq, distinct, in_form, option_key, which
from ..options import two_options_option

OPTION_TEXTS = ("auto", "title", "answer")
READ_HERE = "_answers_read_here"  # marks a copy whose answers this stage read (never written out)


def supported_answers(record: dict, min_score: float | None, min_rerank_score: float | None) -> list[dict]:
    """One answer per passage, as ``{text, title}``: each passage's first answer in the record's
    ``answers`` (the extractive reader lists each passage's best span first), in order, without
    repeats. Left out: an answer scoring under ``min_score``, and one read from a passage the reranker
    scored under ``min_rerank_score`` (a passage without ``rerank_score``, or an answer without a
    passage, is not held to it)."""
    answers = record.get(ANSWERS)
    if not isinstance(answers, list):
        raise InputError(f"record {record.get('id')}: 'answers' must be a list of {{text, ...}} objects "
                         "(cq answer --mode multi)", record_id=record.get("id"))
    passages = {p.get("id"): p for p in record.get("passages") or [] if isinstance(p, dict)}
    out, seen, used = [], [], set()
    for answer in answers:
        entry = answer if isinstance(answer, dict) else {"text": answer}
        text, pid = str(entry.get("text") or "").strip(), entry.get("passage_id")
        passage = passages.get(pid) or {}
        if not text or (pid is not None and pid in used) or not _supported(entry, passage, min_score,
                                                                          min_rerank_score):
            continue
        kept, _ = distinct([*seen, text])
        if len(kept) == len(seen):  # normalises like an earlier answer (or to nothing)
            continue
        seen = kept
        used.add(pid)
        title = passage.get("title")
        out.append({"text": text, "title": str(title).strip() if title else None, "passage_id": pid})
    return out


def _supported(answer: dict, passage: dict, min_score: float | None, min_rerank_score: float | None) -> bool:
    score, rerank = answer.get("score"), passage.get("rerank_score")
    if min_score is not None and isinstance(score, (int, float)) and score < min_score:
        return False
    return not (min_rerank_score is not None and isinstance(rerank, (int, float)) and rerank < min_rerank_score)


def option_texts(answers: list[dict], option_text: str) -> list[str]:
    """The options for ``answers`` (``{text, title}``) under ``option_text`` (see the module's doc)."""
    titles = [a["title"] for a in answers]
    if option_text == "title" or (option_text == "auto" and all(titles)
                                  and len(distinct(titles)[0]) == len(titles)):
        return [a["title"] or a["text"] for a in answers]
    return [a["text"] for a in answers]


def relevant_passages(record: dict, min_rerank_score: float | None) -> list[dict]:
    """The record's titled passages the reranker scored at least ``min_rerank_score``."""
    return [p for p in record.get("passages") or []
            if isinstance(p, dict) and p.get("title") and _supported({}, p, None, min_rerank_score)]


def relevant_titles(record: dict, min_rerank_score: float | None) -> list[str]:
    """The distinct titles of the record's passages the reranker scored at least ``min_rerank_score``."""
    return distinct([str(p["title"]).strip() for p in relevant_passages(record, min_rerank_score)])[0]


def answer_keys(record: dict) -> set[str]:
    """The normalised texts of every answer the reader found for the record (any passage, any score)."""
    return {option_key(str(a.get("text") if isinstance(a, dict) else a)) for a in record.get(ANSWERS) or []} - {""}


def close_to_top(record: dict, margin: float | None) -> set:
    """The ids of the record's passages the reranker scored within ``margin`` of its best one (none: None)."""
    if margin is None:
        return set()
    scored = [p for p in record.get("passages") or [] if isinstance(p, dict)
              and isinstance(p.get("rerank_score"), (int, float))]
    top = max((p["rerank_score"] for p in scored), default=None)
    return {p.get("id") for p in scored if top is not None and p["rerank_score"] >= top - margin}


def answers_cq(record: dict, max_options: int, option_text: str, min_score: float | None,
               min_rerank_score: float | None, two_options: str, fallback: str,
               title_answer_margin: float | None = None) -> dict | None:
    """The record's CQ from its predicted answers (``fallback="titles"``: from its relevant passages'
    titles when fewer than two answers are supported), or None when there are fewer than two options.

    Options are readings of the question, not candidate answers to one reading: a passage's title that is itself
    an answer the reader found ("Canberra" for "What is the capital of Australia?") is not offered, and when a
    relevant passage is about such an answer, its neighbours' titles are taken as candidate answers too (no
    titles fallback: "Sydney" and "Melbourne" are not readings of that question).
    ``cq.option_passages`` lists, per option, the passages it stands for (cq answer --mode cq reads its answer
    from those)."""
    names, close = answer_keys(record), close_to_top(record, title_answer_margin)
    answers = [a for a in supported_answers(record, min_score, min_rerank_score)
               if option_text == "answer" or option_key(a["title"] or "") not in names
               or a["passage_id"] in close][:max_options]
    if title_answer_margin is not None and sum(a["passage_id"] in close for a in answers) < 2:
        answers = [a for a in answers if option_key(a["title"] or "") not in names or option_text == "answer"]
    texts = option_texts(answers, option_text)
    options, _ = distinct(texts)
    owned = {option: [a["passage_id"] for t, a in zip(texts, answers) if t == option and a["passage_id"]]
             for option in options}
    source = "answers"
    passages = relevant_passages(record, min_rerank_score)
    if len(options) < 2 and fallback == "titles" and not any(option_key(p["title"]) in names for p in passages):
        options, answers, source = distinct([str(p["title"]).strip() for p in passages])[0][:max_options], [], "titles"
        owned = {option: [p.get("id") for p in passages if option_key(p["title"]) == option_key(option)]
                 for option in options}
    if len(options) < 2:
        return None
    cq = canonical_cq(which("one"), options, "pred-answers", whole=True)
    cq["options_from"] = source
    cq["answers"] = [a["text"] for a in answers]
    cq["answers_from"] = "reader" if record.get(READ_HERE) else "record"
    cq["option_passages"] = [owned.get(option, []) for option in options]
    return in_form(cq, two_options)


@dataclass(frozen=True)
class PredAnswersOptions:
    """a template over the reader's distinct supported answers or their passages' titles (AskCQ's Predicted-Answers input; no LM; reads `cq answer --mode multi`'s answers, else reads them)"""

    max_options: int = option(4, "at most this many options", min=2)
    option_text: str = option("auto", "each option: its passage's title, the answer, or auto (titles when they "
                                      "differ, else answers)", choices=OPTION_TEXTS)
    min_rerank_score: float | None = option(0.0, "answers read from a passage the reranker scored under this are "
                                                 "not offered")
    min_score: float | None = option(None, "answers the reader scores under this are not offered (extractive: "
                                           "margin over no-answer) [default: no floor]")
    title_answer_margin: float | None = option(None, "an answer read from a passage titled with an answer the reader "
                                                     "found is offered when its passage's rerank score is within this "
                                                     "of the best passage's, and two such are (Tbilisi and Atlanta "
                                                     "for Georgia's capital) [default: never offered]")
    fallback: str = option("titles", "fewer than two answers: offer the relevant passages' titles, or ask nothing "
                                     "(none)", choices=("titles", "none"))
    two_options: str = two_options_option()


def pred_answers_method(options: PredAnswersOptions, config=None):
    """The ``pred-answers`` CQ method (registered in builtin_methods)."""
    from . import CQWriter

    max_options, option_text, min_score = options.max_options, options.option_text, options.min_score
    min_rerank_score, fallback, two_options = options.min_rerank_score, options.fallback, options.two_options

    if option_text not in OPTION_TEXTS:
        raise InputError(f"option_text={option_text!r}: use one of {', '.join(OPTION_TEXTS)} (--option-text)")
    reader = ReadAnswers(config)

    def run(records):
        return [answers_cq(r, max_options, option_text, min_score, min_rerank_score, two_options, fallback,
                           options.title_answer_margin) for r in reader.with_answers(records)]

    info = {"method": "pred-answers", "reads": "answers", "max_options": max_options, "option_text": option_text,
            "min_score": min_score, "min_rerank_score": min_rerank_score, "fallback": fallback}
    if options.title_answer_margin is not None:
        info["title_answer_margin"] = options.title_answer_margin
    if two_options != "or":
        info["two_options"] = two_options
    return CQWriter("pred-answers", run, info)


class ReadAnswers:
    """Reads ``answers`` (multi mode, the installed extractive reader) for records that have none;
    loaded on the first such record only. The records themselves get no ``answers`` key (the stage adds
    only ``cq``): the answers read are in ``cq.answers``."""

    def __init__(self, config):
        self.config, self.stage = config, None

    def with_answers(self, records: list[dict]) -> list[dict]:
        """``records``, each one without ``answers`` replaced by a copy holding the answers read for it."""
        missing = [n for n, r in enumerate(records) if r.get(ANSWERS) is None]
        if not missing:
            return records
        if self.stage is None:
            from ..answer import build

            self.stage = build(mode="multi", config=self.config)
        copies = self.stage([{k: v for k, v in records[n].items() if k != "meta"} for n in missing])
        out = list(records)
        for n, copy in zip(missing, copies):
            copy[READ_HERE] = True
            out[n] = copy
        return out
