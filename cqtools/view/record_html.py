"""One record as HTML (``cq view``'s question page): passages with their scores and ranks before and
after reranking, ambiguity against gold, the CQ and its options, each answer with the sentence it
came from, predicted and gold DQs and answers, and what the record adds to each metric."""
from __future__ import annotations

from ..chat.session import evidence
from .html import esc, number, odd, table, yes_no


def _items(value) -> list:
    """``value`` when a list, else none (a page shows a value of another shape as text elsewhere)."""
    return value if isinstance(value, list) else []


def passages_html(record: dict) -> str:
    given = record.get("passages")
    if given is not None and not isinstance(given, list):
        return f'<p class="muted">passages is not a list:</p> {odd(given)}'
    hits = [p for p in given or [] if isinstance(p, dict)]
    if not hits:
        return '<p class="muted">no passages</p>'
    reranked = any("rerank_score" in p for p in hits)
    # cq rerank renumbers `rank`; the order before it is that of the retrieval scores it keeps
    before = sorted(range(len(hits)), key=lambda i: (-_float(hits[i].get("score")), str(hits[i].get("id"))))
    retrieval_rank = {i: n for n, i in enumerate(before, start=1)}
    head = ["rank", "retrieval score"] + (["rank before rerank", "rerank score"] if reranked else []) + ["passage"]
    rows = []
    for i, p in enumerate(hits):
        cells = [esc(p.get("rank", i + 1)), number(p.get("score"))]
        if reranked:
            cells += [esc(retrieval_rank[i]), number(p.get("rerank_score"))]
        cells.append(f"<b>{esc(p.get('title', ''))}</b> <span class=\"muted\">[{esc(p.get('id', ''))}]</span><br>"
                     f"{esc(p.get('text', ''))}")
        rows.append(cells)
    note = ('<p class="muted">rank before rerank: order of the retrieval scores among the passages kept</p>'
            if reranked else "")
    return table(head, rows) + note


def _float(value) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else float("-inf")


def ambiguity_html(record: dict) -> str:
    amb = record.get("ambiguity") if isinstance(record.get("ambiguity"), dict) else {}
    gold = record.get("gold") if isinstance(record.get("gold"), dict) else {}
    label, truth = amb.get("label"), gold.get("ambiguous")
    verdict = ""
    if isinstance(label, bool) and isinstance(truth, bool):
        verdict = ' <span class="good">right</span>' if label == truth else ' <span class="bad">wrong</span>'
    return (f"<p>predicted ambiguous: {yes_no(label)} (score {number(amb.get('score'))}, "
            f"{esc(amb.get('method', '-'))}, threshold {number(amb.get('threshold'))}); gold: {yes_no(truth)}"
            f"{verdict}</p>")


def cq_html(record: dict) -> str:
    cq = record.get("cq")
    if cq is None:
        return '<p class="muted">no clarifying question asked</p>'
    text = cq.get("text") if isinstance(cq, dict) else cq
    opts = cq.get("options") if isinstance(cq, dict) and isinstance(cq.get("options"), list) else []
    items = "".join(f"<li>{esc(o)}</li>" for o in opts)
    picked = ""
    if record.get("selected_option") is not None:
        picked = f"<p>picked: {esc(record['selected_option'])}</p>"
    if record.get("clarification_answer") is not None:
        picked += f"<p>user replied: {esc(record['clarification_answer'])}</p>"
    return f"<p><b>{esc(text)}</b></p><ul>{items}</ul>{picked}"


def answers_html(record: dict) -> str:
    answers = record.get("answers")
    if not isinstance(answers, list):
        return '<p class="muted">no answers</p>'
    rows = []
    for answer in answers:
        answer = answer if isinstance(answer, dict) else {"text": answer}
        found = evidence(record, answer)
        source = ""
        if found is not None:
            passage, sentence, span = found
            shown = esc(sentence) if span is None else (esc(sentence[:span[0]]) + "<mark>" +
                                                        esc(sentence[span[0]:span[1]]) + "</mark>" +
                                                        esc(sentence[span[1]:]))
            source = f"<b>{esc(passage.get('title', ''))}</b> [{esc(passage.get('id', ''))}]: {shown}"
        rows.append([esc(answer.get("option", "")), esc(answer.get("text", "")), source])
    return table(["option", "answer", "evidence sentence"], rows)


def dqs_html(record: dict) -> str:
    gold = record.get("gold") if isinstance(record.get("gold"), dict) else {}
    parts = []
    dqs = [d for d in _items(record.get("dqs")) if isinstance(d, dict)]
    if dqs:
        parts.append("<h3>predicted DQs</h3>" + table(["question", "answer"], [
            [esc(d.get("question")), esc(d.get("answer"))] for d in dqs]))
    gold_dqs = [d for d in _items(gold.get("dqs")) if isinstance(d, dict)]
    if gold_dqs:
        parts.append("<h3>gold DQs</h3>" + table(["question", "answers"], [
            [esc(d.get("question")), esc(" / ".join(map(str, _items(d.get("answers")))))] for d in gold_dqs]))
    elif isinstance(gold.get("answers"), list):
        shown = ["; ".join(map(str, a)) if isinstance(a, list) else str(a) for a in gold["answers"]]
        parts.append("<h3>gold answers</h3><ul>" + "".join(f"<li>{esc(s)}</li>" for s in shown) + "</ul>")
    if isinstance(gold.get("cq"), str):
        parts.append(f"<p>gold CQ: {esc(gold['cq'])}</p>")
    return "".join(parts) or '<p class="muted">no DQs, no gold</p>'


def metrics_html(values: dict | None) -> str:
    if values is None:
        return '<p class="muted">not computed yet (reload in a moment)</p>'
    if not values:
        return '<p class="muted">none (the record lacks the gold or the prediction a metric compares)</p>'
    return table(["metric", "this record"], [[esc(k), number(v)] for k, v in values.items()])


def record_html(record: dict, values: dict | None) -> str:
    """The sections of one record's page (its title is the caller's)."""
    return (f"<p><b>{esc(record.get('question', ''))}</b> <span class=\"muted\">[{esc(record.get('id'))}]</span></p>"
            f"<h2>Ambiguity</h2>{ambiguity_html(record)}<h2>Clarifying question</h2>{cq_html(record)}"
            f"<h2>Answers</h2>{answers_html(record)}<h2>Disambiguations and gold</h2>{dqs_html(record)}"
            f"<h2>Metrics</h2>{metrics_html(values)}<h2>Passages</h2>{passages_html(record)}")
