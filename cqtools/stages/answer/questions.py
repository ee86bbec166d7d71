"""What the answer stage asks: the record's question, or AskCQ's "AQ revised by CQ" per option."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from ...errors import InputError
from ...metrics.cq import INVALID
from ...records import PASSAGES, read_cq, require
from ..evidence import note_cut, note_read
from ..rerank import RUN_RETRIEVE, rerank_lists
from .options import CQModeOptions


@dataclass
class Question:
    """One question to answer for a record: the record's own, or a revision of it."""

    record: int
    text: str
    passages: list[dict]
    option: str | None = None
    answers: list[dict] = field(default_factory=list)  # {text, grounding, generated?}
    own: bool = False  # its passages are only its option's own (the CQ's option_passages)
    cut: int = 0  # passages dropped from its prompt's end to fit the model's input (meta.passages_cut.answer)


def revised_question(question: str, category: str | None, option: str) -> str:
    """AskCQ's "AQ revised by CQ": ``AQ, Which [category]: [option]``.

    ``category`` may be a bare noun ("film") or already a head ("Which film", "In which year", "What year",
    "In terms of what", "Are you referring to": kept as written)."""
    category = (category or "").strip()
    if not category or category == INVALID:  # a free-form CQ has no category to name
        head = "Which one"
    elif re.match(r"^(?:\w+\s+)?which\b", category, re.I) or _named_head(category):
        head = category[0].upper() + category[1:]
    else:
        head = f"Which {category}"
    return f"{question.strip()}, {head}: {option.strip()}"


def released_revision(question: str, category: str | None, option: str) -> str:
    """The revised question as AskCQ's release writes it (CQDataset.py:251 @d8be017): the question, the CQ's category
    as its parser reads it ("Which film"), the option and a question mark, joined by spaces."""
    return f"{question} {(category or 'Which one').strip()} {option}?"


def _named_head(category: str) -> bool:
    """A wh-phrase or lead-in head (gen_cq/form.py's rules: "What year", "In terms of what", "Do you mean")."""
    from ..gen_cq.form import LEAD_HEAD, WH_HEAD

    text = " ".join(category.split())
    return bool(WH_HEAD.fullmatch(text) or LEAD_HEAD.fullmatch(text))


def record_cq(record: dict) -> tuple[str | None, list[str]]:
    """(category, options) of the record's predicted ``cq`` (a dict from cq gen-cq, or its text)."""
    if "cq" not in record:
        raise InputError(f"record {record.get('id')} has no 'cq'; run `cq gen-cq` first (or drop --mode cq)",
                         record_id=record.get("id"))
    if record["cq"] is None:  # gen-cq judged it unambiguous and asked nothing
        return None, []
    _, category, options = read_cq(record["cq"], record.get("id"))
    return category, options


def questions_of(records: list[dict], mode: str, selected: bool = CQModeOptions.selected,
                 revision: str = CQModeOptions.revised_question) -> list[Question]:
    """The questions to answer: one per record, or in cq mode one per option of its CQ (only the
    ``selected_option`` with ``selected``; the question itself when no CQ was asked)."""
    if mode != "cq":
        return [Question(n, str(require(r, "question", "every record needs a question")),
                         list(require(r, PASSAGES, RUN_RETRIEVE))) for n, r in enumerate(records)]
    questions: list[Question] = []
    for n, record in enumerate(records):
        passages = list(require(record, PASSAGES, RUN_RETRIEVE))
        category, options = record_cq(record)
        options = [o for o in options if o and o != INVALID]  # an unreadable CQ offers none
        if record["cq"] is None:  # no clarification asked: answer the question itself (AskCQ, CLAM)
            questions.append(Question(n, record["question"], passages, None))
            continue
        if selected:
            chosen = record.get("selected_option")
            if chosen is None:
                raise InputError(f"record {record.get('id')} has no 'selected_option'; set it (an oracle or a "
                                 f"user's choice) or drop --selected", record_id=record.get("id"))
            options = [chosen]
        if not options:  # a free-form CQ with nothing readable and no reply: the question itself
            questions.append(Question(n, record["question"], passages, None))
            continue
        owned = option_passages(record)
        for option in options:
            text = released_revision(record["question"], category, option) if revision == "askcq" \
                else revised_question(record["question"], category, option)
            ids = owned.get(str(option).strip().lower())
            own = [p for p in passages if isinstance(p, dict) and p.get("id") in ids] if ids else []
            questions.append(Question(n, text, own or passages, option, own=bool(own)))
    return questions


def option_passages(record: dict) -> dict[str, set]:
    """{option (stripped, lowercased): ids of the passages it stands for} from the record's CQ
    (``cq.option_passages``, written by ``cq gen-cq --method pred-answers``): an option offered because a
    passage holds it is answered from that passage alone, so its answer is that passage's (the "Lord of the
    Rings (film series)" option is not answered with the novel's author). Empty for other CQs."""
    cq = record.get("cq")
    if not isinstance(cq, dict) or not isinstance(cq.get("option_passages"), list):
        return {}
    return {str(option).strip().lower(): {i for i in ids if i is not None}
            for option, ids in zip(cq.get("options") or [], cq["option_passages"])
            if isinstance(ids, list) and ids}


def rerank_questions(questions: list[Question], cross_encoder, depth: int, top: int, batch_size: int) -> None:
    """Each question's first ``depth`` passages reranked for it and cut to ``top`` (one model call)."""
    if cross_encoder is None or not questions:
        return
    lists = rerank_lists(cross_encoder, [q.text for q in questions], [q.passages[:depth] for q in questions],
                         top, batch_size)
    for q, passages in zip(questions, lists):
        q.passages = passages


def fit_inputs(records: list[dict], questions: list[Question], reader, mode: str) -> None:
    """Each question's passages as its prompt keeps them whole within the model's input (a reader with
    ``fit_input``: the generative one), the passages dropped noted in ``meta.passages_cut.answer`` (as
    :func:`note_counts` notes those read)."""
    if not hasattr(reader, "fit_input"):
        return
    per: list[list[int]] = [[] for _ in records]
    for q in questions:
        q.passages, q.cut = reader.fit_input(q.text, q.passages, mode == "multi")
        per[q.record].append(q.cut)
    for record, cuts in zip(records, per):
        note_cut(record, "answer", cuts if mode in ("cq", "dqs") else (cuts[0] if cuts else 0))


def note_counts(records: list[dict], questions: list[Question], mode: str) -> None:
    """``meta.passages_read.answer``: how many passages were read, per record (a number), or per
    question it asked (a list: cq mode's options, dqs mode's DQs)."""
    per: list[list[int]] = [[] for _ in records]
    for q in questions:
        per[q.record].append(len(q.passages))
    for record, counts in zip(records, per):
        note_read(record, "answer", counts if mode in ("cq", "dqs") else (counts[0] if counts else 0))
