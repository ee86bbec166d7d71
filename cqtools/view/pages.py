"""``cq view``'s pages over runs: the list (search, filters, paging), a record's page, and with two
runs the pairs' list (largest metric change first) and a pair's page side by side."""
from __future__ import annotations

from .html import esc, layout, link, number, options, table, yes_no
from .index import RunIndex
from .query import GOLD_CHOICES, SORT_CHOICES, WRONG_CHOICES, Filters, page_of, pairs, select
from .record_html import record_html


def nav(runs: list[RunIndex], study: bool = False) -> str:
    items = [link("/", "records")]
    if len(runs) == 2:
        items.append(link("/compare", "compare"))
    if study:
        items.append(link("/study", "study"))
    return "".join(items)


def progress(run: RunIndex) -> str:
    if run.metrics_done == len(run):
        return ""
    return (f'<p class="muted">metrics computed for {run.metrics_done} of {len(run)} records of {esc(run.name)} so '
            "far (reload to see more)</p>")


def _filters_form(run: RunIndex, f: Filters) -> str:
    metrics = [""] + run.metric_names()
    return ('<form class="filters" method="get" action="/">'
            f'<input name="q" value="{esc(f.q)}" placeholder="search id or question">'
            f'predicted {options("predicted", GOLD_CHOICES, f.predicted)} gold {options("gold", GOLD_CHOICES, f.gold)}'
            f' wrong vs gold {options("wrong", WRONG_CHOICES, f.wrong)}'
            f'sort {options("sort", SORT_CHOICES, f.sort)} by {options("metric", metrics, f.metric, {"": "-"})}'
            '<button>show</button></form>')


def _pager(path: str, page: int, pages: int, params: dict) -> str:
    links = []
    if page > 1:
        links.append(link(path, "previous", **params, page=page - 1))
    links.append(f"page {page} of {pages}")
    if page < pages:
        links.append(link(path, "next", **params, page=page + 1))
    return "<p>" + " | ".join(links) + "</p>"


def list_page(runs: list[RunIndex], f: Filters, study: bool = False) -> bytes:
    run = runs[0]
    chosen = select(run, f)
    shown, pages = page_of(chosen, f.page)
    names = run.metric_names()
    rows = []
    for i in shown:
        entry, values = run.entries[i], run.metrics[i] or {}
        rows.append([esc(i + 1), link(f"/record/{i}", entry.id), esc(entry.question), yes_no(entry.predicted),
                     yes_no(entry.gold), *(number(values.get(m)) for m in names)])
    params = {"q": f.q, "gold": f.gold, "predicted": f.predicted, "wrong": f.wrong, "metric": f.metric, "sort": f.sort}
    body = (f"<p>{len(chosen)} of {len(run)} records of {esc(run.name)}</p>{progress(run)}{_filters_form(run, f)}"
            + table(["#", "id", "question", "ambiguous", "gold ambiguous", *names], rows)
            + _pager("/", min(f.page, pages), pages, params))
    return layout(f"cq view: {run.name}", body, nav(runs, study))


def record_page(runs: list[RunIndex], i: int, study: bool = False) -> bytes:
    run = runs[0]
    record = run.record(i)
    around = [link(f"/record/{i - 1}", "previous")] if i > 0 else []
    around += [link(f"/record/{i + 1}", "next")] if i + 1 < len(run) else []
    if len(runs) == 2 and record["id"] in runs[1].position:
        around.append(link("/pair", "compare with " + runs[1].name, id=record["id"]))
    body = "<p>" + " | ".join(around) + "</p>" + record_html(record, run.metrics[i])
    return layout(f"{run.name} #{i + 1}", body, nav(runs, study))


def compare_page(runs: list[RunIndex], params: dict[str, str], study: bool = False) -> bytes:
    a, b = runs
    every = params.get("all") == "1"
    found = pairs(a, b, only_different=not every, needle=params.get("q", "")[:200])
    try:
        page = max(1, int(params.get("page", "1")))
    except ValueError:
        page = 1
    shown, pages = page_of(found, page)
    names = sorted({m for p in shown for m in p.deltas})
    rows = [[link("/pair", p.id, id=p.id), esc(a.entries[p.a].question), yes_no(p.differ),
             *(number(p.deltas.get(m)) for m in names)] for p in shown]
    only = a.position.keys() - b.position.keys()
    toggle = link("/compare", "only where they differ" if every else "every pair", q=params.get("q"),
                  all=None if every else "1")
    body = (f"<p>A: {esc(a.name)} ({len(a)} records), B: {esc(b.name)} ({len(b)} records); {len(found)} pairs "
            f"{'' if every else 'that differ '}shown by largest metric change (B - A); {len(only)} ids only in A, "
            f"{len(b.position.keys() - a.position.keys())} only in B. {toggle}</p>{progress(a)}{progress(b)}"
            f'<form class="filters" method="get" action="/compare"><input name="q" value="{esc(params.get("q", ""))}"'
            ' placeholder="search id or question"><button>search</button></form>'
            + table(["id", "question", "predictions differ", *(f"delta {m}" for m in names)], rows)
            + _pager("/compare", min(page, pages), pages, {"q": params.get("q"), "all": "1" if every else None}))
    return layout(f"cq view: {a.name} vs {b.name}", body, nav(runs, study))


def pair_page(runs: list[RunIndex], record_id: str, study: bool = False) -> bytes | None:
    a, b = runs
    if record_id not in a.position or record_id not in b.position:
        return None
    i, j = a.position[record_id], b.position[record_id]
    ma, mb = a.metrics[i], b.metrics[j]
    deltas = [[esc(m), number(ma[m]), number(mb[m]), number(mb[m] - ma[m])]
              for m in (ma or {}) if mb and m in mb]
    body = (table(["metric", "A", "B", "B - A"], deltas) + '<div class="cols">'
            f'<div><h2>A: {link(f"/record/{i}", a.name)}</h2>{record_html(a.record(i), ma)}</div>'
            f'<div><h2>B: {esc(b.name)}</h2>{record_html(b.record(j), mb)}</div></div>')
    return layout(f"{record_id}: {a.name} vs {b.name}", body, nav(runs, study))

