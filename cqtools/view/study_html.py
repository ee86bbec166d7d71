"""The study's pages: the annotator's name, then one item at a time (blind: the two presentations are
"first" and "second", in the annotator's fixed order), and a form posted to ``/judge``."""
from __future__ import annotations

from .html import esc, layout, table
from .record_html import answers_html
from .study import SIDES, TURN_QUESTIONS, Study


def name_page(study: Study, error: str = "") -> bytes:
    body = (f'<p class="bad">{esc(error)}</p>' if error else "") + (
        f"<p>{len(study.items)} items to judge ({esc(study.kind)}). Your name keeps your judgements apart from "
        "others' and lets you continue later where you stopped.</p>"
        '<form method="get" action="/study"><input name="annotator" placeholder="your name" required>'
        "<button>start</button></form>")
    return layout("Study", body)


def _cq_side(record: dict) -> str:
    cq = record.get("cq")
    text = cq.get("text") if isinstance(cq, dict) else cq
    return f"<p>A clarifying question: <b>{esc(text)}</b></p>{answers_html(record)}"


def _dqs_side(record: dict) -> str:
    dqs = [d for d in record.get("dqs") or [] if isinstance(d, dict)]
    if dqs:
        rows = [[esc(d.get("question")), esc(d.get("answer"))] for d in dqs]
    else:
        gold = record.get("gold") if isinstance(record.get("gold"), dict) else {}
        rows = [[esc(d.get("question")), esc((d.get("answers") or [""])[0])]
                for d in gold.get("dqs") or [] if isinstance(d, dict)]
    return "<p>Each possible reading, answered:</p>" + table(["question", "answer"], rows)


def _turn(record: dict) -> str:
    cq = record.get("cq")
    asked = (cq.get("text") if isinstance(cq, dict) else cq) or ""
    reply = record.get("clarification_answer") or record.get("selected_option")
    return (f"<p>System asked: {esc(asked) if asked else '<i>(no clarifying question)</i>'}</p>"
            f"<p>User replied: {esc(reply) if reply is not None else '<i>(nothing)</i>'}</p>{answers_html(record)}")


def _choice(name: str, value: str, label: str) -> str:
    return f'<label><input type="radio" name="{esc(name)}" value="{esc(value)}" required> {esc(label)}</label> '


def item_page(study: Study, annotator: str, item: str, done: int) -> bytes:
    a = study.runs[0]
    record = a.record(a.position[item])
    hidden = f'<input type="hidden" name="annotator" value="{esc(annotator)}"><input type="hidden" name="item" ' \
             f'value="{esc(item)}">'
    if study.kind in SIDES:
        if study.kind == "pairwise":
            b = study.runs[1]
            sides = {"a": answers_html(record), "b": answers_html(b.record(b.position[item]))}
        else:
            sides = {"cq": _cq_side(record), "dqs": _dqs_side(record)}
        first, second = SIDES[study.kind][::-1] if study.flipped(annotator, item) else SIDES[study.kind]
        shown = (f'<div class="cols"><div class="box"><h2>First</h2>{sides[first]}</div>'
                 f'<div class="box"><h2>Second</h2>{sides[second]}</div></div>')
        asks = ("<p>Which helps the person asking more?</p>" + _choice("label", "first", "first")
                + _choice("label", "second", "second") + _choice("label", "equal", "equal"))
    else:
        shown = f'<div class="box">{_turn(record)}</div>'
        asks = "".join(f"<p>{esc(text)} {_choice(key, 'yes', 'yes')}{_choice(key, 'no', 'no')}</p>"
                       for key, text in TURN_QUESTIONS)
    body = (f"<p>{esc(annotator)}: {done} of {len(study.items)} judged</p>"
            f"<p>Question: <b>{esc(record.get('question', ''))}</b></p>{shown}"
            f'<form method="post" action="/judge">{hidden}{asks}<p>Why (optional):</p>'
            '<textarea name="rationale" maxlength="2000"></textarea><p><button>save and next</button></p></form>')
    return layout("Study", body)


def finished_page(study: Study, annotator: str) -> bytes:
    return layout("Study", f"<p>Thank you, {esc(annotator)}: all {len(study.items)} items are judged. Your "
                           f"judgements are in {esc(study.log.path)}.</p>")
