"""HTML building blocks: every value put into a page goes through :func:`esc` (records are untrusted:
a passage holding ``<script>`` or ``onerror=`` shows as text), and every page is :func:`layout`'s,
sent with a Content-Security-Policy that runs no script at all (cqtools/view/server.py)."""
from __future__ import annotations

import html
from urllib.parse import urlencode

STYLE = """body{font:15px/1.45 system-ui,sans-serif;margin:1.5em auto;max-width:72em;padding:0 1em;color:#222}
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:.25em .4em;text-align:left;
vertical-align:top}th{background:#f4f4f4}.num{text-align:right;font-variant-numeric:tabular-nums}.bad{color:#b00}
.good{color:#070}.muted{color:#777}.box{border:1px solid #ccc;border-radius:4px;padding:.6em .9em;margin:.6em 0}
.cols{display:grid;grid-template-columns:1fr 1fr;gap:1em}nav a{margin-right:1em}mark{background:#ffef8a}
form.filters input,form.filters select{margin-right:.6em}textarea{width:100%;min-height:5em}"""


def esc(value) -> str:
    """``value`` as text in HTML (quotes too, so it is safe inside an attribute)."""
    return html.escape("" if value is None else str(value), quote=True)


def url(path: str, **params) -> str:
    """A link to ``path`` with ``params`` (empty ones left out), escaped for an attribute."""
    kept = {k: v for k, v in params.items() if v not in (None, "")}
    return esc(path + ("?" + urlencode(kept) if kept else ""))


def link(path: str, text, **params) -> str:
    return f'<a href="{url(path, **params)}">{esc(text)}</a>'


def number(value, digits: int = 3) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return '<span class="muted">-</span>' if value is None else esc(value)
    return esc(f"{value:.{digits}f}")


def yes_no(value) -> str:
    """yes/no for a bool, - for none, anything else (a list, a dict, a number) as its JSON text."""
    if value is None or isinstance(value, bool):
        return {True: "yes", False: "no"}.get(value, '<span class="muted">-</span>')
    return odd(value)


def odd(value) -> str:
    """A value of an unexpected type, shown as its JSON text (escaped), marked as such."""
    import orjson

    try:
        text = orjson.dumps(value).decode()
    except TypeError:
        text = repr(value)
    return f'<code title="not the expected type">{esc(text)}</code>'



def options(name: str, choices, selected: str, labels: dict | None = None) -> str:
    """A <select> of ``choices``."""
    labels = labels or {}
    items = "".join(f'<option value="{esc(c)}"{" selected" if c == selected else ""}>{esc(labels.get(c, c))}</option>'
                    for c in choices)
    return f'<select name="{esc(name)}">{items}</select>'


def table(head: list[str], rows: list[list[str]]) -> str:
    """A table of already escaped cells (``head`` is plain text)."""
    th = "".join(f"<th>{esc(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


def layout(title: str, body: str, nav: str = "") -> bytes:
    page = (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{esc(title)}</title>'
            f'<style>{STYLE}</style></head><body><nav>{nav}</nav><h1>{esc(title)}</h1>{body}</body></html>')
    return page.encode("utf-8")
