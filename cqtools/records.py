"""The record schema: what ``cq convert`` writes and what each stage reads and adds.

See docs/schema.md for the full description. In short, a record is one question::

    {"id": str, "question": str,
     "gold": {...},            # written by cq convert; read by cq score and cq oracle only
     "passages": [...],        # cq retrieve / cq rerank: {id, title, text, score, rank}
     "ambiguity": {...},       # cq detect: {label, score, method}
     "cq": {...},              # cq gen-cq: {text, category, options, method}
     "answers": [...],         # cq answer: [{text, option?, question?, score?}]
     "meta": {stage: {...}}}   # what produced each key (model, parameters)

No inference stage may read ``gold`` (or ``source_qid`` of a passage).

The accessors below are the one place each of these is read: :func:`answer_texts` /
:func:`distinct_texts` (predicted answers), :func:`passage_text` / :func:`snippets` /
:func:`passage_snippets` (passages as model input), :func:`read_cq` (a clarifying question),
:func:`gold_from_annotations` (AmbigNQ answers, read by :func:`cqtools.metrics.ambigqa.annotation_clusters`).
"""
from __future__ import annotations

from .errors import InputError

GOLD = "gold"
PASSAGES = "passages"
ANSWERS = "answers"
META = "meta"


def require(record: dict, key: str, hint: str) -> object:
    """Return ``record[key]`` or raise an InputError naming the record and what to run first."""
    value = record.get(key)
    if value is None:
        raise InputError(f"record {record.get('id')} has no '{key}'; {hint}", record_id=record.get("id"))
    return value


def set_meta(record: dict, stage: str, info: dict) -> None:
    record.setdefault(META, {})[stage] = info


# --- predicted answers ---------------------------------------------------------------------------

def answer_text(answer, raw: bool = False) -> str:
    """The text of one predicted answer: an ``{text, ...}`` object's ``text`` or a bare string.
    A missing or null text is ''; with ``raw`` the value goes through ``str`` as it is (null ->
    "None": what gen-cq's seq2seq input has always read)."""
    if not isinstance(answer, dict):
        return str(answer)
    return str(answer.get("text", "")) if raw else str(answer.get("text") or "")


def answer_texts(record: dict, hint: str | None = None, raw: bool = False) -> list[str] | None:
    """The texts of the record's predicted ``answers``, in order, duplicates kept.

    A record without ``answers`` gives None, or, with ``hint``, an InputError naming what to run
    first; ``answers`` that is not a list is an InputError. ``raw``: see :func:`answer_text`."""
    answers = record.get(ANSWERS)
    if answers is None:
        if hint is None:
            return None
        raise InputError(f"record {record.get('id')} has no 'answers'; {hint}", record_id=record.get("id"))
    if not isinstance(answers, list):
        raise InputError(f"record {record.get('id')}: 'answers' must be a list of {{text, ...}} objects "
                         "(from cq answer)", record_id=record.get("id"))
    return [answer_text(a, raw) for a in answers]


def distinct_texts(texts) -> list[str]:
    """``texts`` without repeats: the first of each normalised form (SQuAD normalisation) is kept,
    texts that normalise to nothing are dropped."""
    from .metrics.normalize import normalize_answer

    seen, out = set(), []
    for text in texts:
        key = normalize_answer(text)
        if key and key not in seen:
            seen.add(key)
            out.append(text)
    return out


# --- passages as model input ---------------------------------------------------------------------

def passage_text(passage: dict, words: int | None = None, sep: str = ": ") -> str:
    """A passage as a model reads it: ``title<sep>text``, or the text alone when it has no title.

    ``words`` None: title and text verbatim (the text must be there). ``words`` N: the text's first
    N words joined by single spaces, the title stripped (a missing text reads as '')."""
    if words is None:
        title = passage.get("title")
        return f"{title}{sep}{passage['text']}" if title else passage["text"]
    text = " ".join(str(passage.get("text", "")).split()[:words])
    title = str(passage.get("title") or "").strip()
    return f"{title}{sep}{text}" if title else text


def snippets(passages: list, n: int, words: int) -> list[str]:
    """The first ``n`` of ``passages`` as "title: text", each text cut to ``words`` words."""
    out = []
    for p in passages[:n]:
        if not isinstance(p, dict):
            raise InputError("'passages' must be a list of {id, title, text} objects (from cq retrieve)")
        out.append(passage_text(p, words))
    return out


def passage_snippets(record: dict, n: int, words: int) -> list[str]:
    """The record's top ``n`` passages as :func:`snippets`; [] when it has none (or ``n`` is 0)."""
    passages = record.get(PASSAGES)
    if passages is None or n == 0:
        return []
    if not isinstance(passages, list) or not all(isinstance(p, dict) for p in passages):
        raise InputError(f"record {record.get('id')}: 'passages' must be a list of {{title, text}} objects "
                         "(from cq retrieve)")
    return snippets(passages, n, words)


# --- clarifying questions ------------------------------------------------------------------------

def read_cq(cq, record_id: str | None = None) -> tuple[str, str | None, list[str]]:
    """(text, category, options) of a ``cq``: a dict from cq gen-cq, or its text alone.

    Options missing from a dict (or a bare text) are read from the text with the scorer's parser
    (:func:`cqtools.metrics.cq.parse_cq`; an unreadable text gives its "invalid form"); a dict's
    own ``category`` wins over the parsed one."""
    from .metrics.cq import parse_cq

    if isinstance(cq, str):
        category, options = parse_cq(cq)
        return cq, category, list(options)
    if not isinstance(cq, dict):
        raise InputError(f"record {record_id}: 'cq' must be {{text, options, ...}} from cq gen-cq, or null",
                         record_id=record_id)
    text = str(cq.get("text") or "")
    category, options = cq.get("category"), list(cq.get("options") or [])
    if not options and text:
        parsed, options = parse_cq(text)
        category = category or parsed
    return text, category, list(options)


# --- how far an answer is supported ---------------------------------------------------------------

SURE, LOW, GUESS = "sure", "low", "guess"


def answer_confidence(answer: dict) -> str:
    """How far a passage supports a reader's answer (``cq chat`` and ``cq show`` say it alike):

    - ``guess``: no passage span (the generative reader's text picked by likelihood after an unusable
      generation, grounding ``score``, or kept ungrounded, ``none``), or an extractive span its reader scores
      under "no answer here" (score < 0) read from a passage below the first;
    - ``low``: such a low-scored span read from the passage ranked first for its question (``passage_rank`` 0:
      the reranker's first, or ``selected`` by the reader's selection head) or from the passages its option
      stands for (``option_passage``, from ``cq answer --mode cq`` over a pred-answers CQ): a passage the
      question was matched to holds it, the reader is unsure;
    - ``sure``: otherwise (an answer saying nothing of its grounding or score counts as sure), unless the
      question names something none of its passages mentions (``unmatched``, the extractive reader's
      :func:`~cqtools.stages.answer.support.unmatched_words`: "mercury" in passages about water): then ``low``."""
    if answer.get("grounding", "exact") not in ("exact", "span"):
        return GUESS
    score = answer.get("score")
    if not isinstance(score, (int, float)) or score >= 0:
        return LOW if answer.get("unmatched") else SURE
    first = answer.get("passage_rank") == 0 or answer.get("selected") is True
    return LOW if first or answer.get("option_passage") else GUESS


LOW_NOTE = "low reader confidence; read from its question's first passage"


def low_note(answer: dict) -> str:
    """Why an answer of :func:`answer_confidence` ``low`` is one, in a few words (``cq chat``, ``cq show``)."""
    unmatched = answer.get("unmatched")
    if unmatched and isinstance(unmatched, list):
        named = ", ".join(f"'{w}'" for w in unmatched[:3])
        return f"low confidence: no passage it read mentions {named}"
    return LOW_NOTE


# --- gold ----------------------------------------------------------------------------------------

def gold_from_annotations(annotations: list[dict]) -> dict:
    """Gold fields derived from AmbigNQ annotations (several annotators allowed).

    ``ambiguous`` is true when any annotation is multipleQAs; ``answers``/``dqs`` come from the
    first multipleQAs annotation if there is one, else from the first singleAnswer.
    """
    from .metrics.ambigqa import annotation_clusters

    if not annotations:
        raise InputError("no annotations")
    multi = [a for a in annotations if a["type"] == "multipleQAs"]
    first = multi[0] if multi else annotations[0]
    gold = {
        "ambiguous": bool(multi),
        "annotations": annotations,
        "answers": annotation_clusters(first),
        "dqs": [{"question": p["question"], "answers": list(p["answer"])} for p in first.get("qaPairs", [])],
    }
    return gold
