"""``cq view``'s HTTP server: the standard library's ``http.server`` (threaded), routing a fixed set of
paths to pages built from the given runs. Nothing else is served: no file path is ever read from a
request. Every response forbids scripts (Content-Security-Policy); a POST is refused unless it comes
from the viewer's own page, is at most :data:`MAX_BODY` bytes and is a well-formed judgement of an
item of the study; requests naming another host are refused (DNS rebinding)."""
from __future__ import annotations

import logging
import re
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from ..errors import InputError
from . import pages, study_html
from .html import esc, layout
from .index import RunIndex
from .query import Filters
from .study import Rejected, Study, ViewSettings, check_annotator

log = logging.getLogger("cqtools")
MAX_BODY = 64 * 1024
LOCAL_NAMES = ("127.0.0.1", "localhost", "[::1]")
HEADERS = {"Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; "
                                      "frame-ancestors 'none'; base-uri 'none'",
           "X-Content-Type-Options": "nosniff", "Referrer-Policy": "same-origin", "Cache-Control": "no-store",
           "X-Frame-Options": "DENY"}
# same-origin, not no-referrer: under no-referrer a browser sends "Origin: null" with the study's form POST (Fetch's
# origin serialization), which do_POST must refuse as a sandboxed page's; no referrer leaves for another site
RECORD = re.compile(r"^/record/(\d{1,9})$")


class Viewer:
    """What the pages read: the runs (one or two) and the study, if one runs."""

    def __init__(self, runs: list[RunIndex], study: Study | None = None, remote: bool = False):
        self.runs, self.study, self.remote = runs, study, remote

    def fill_metrics(self) -> list[threading.Thread]:
        """Compute the runs' metric contributions in background threads (the pages show the progress)."""
        threads = [threading.Thread(target=run.fill_metrics, daemon=True, name=f"metrics {run.name}")
                   for run in self.runs]
        for thread in threads:
            thread.start()
        return threads


def one(params: dict[str, list[str]]) -> dict[str, str]:
    return {k: v[0] for k, v in params.items() if v}


class Handler(BaseHTTPRequestHandler):
    viewer: Viewer  # set on the subclass make_server builds
    server_version = "cq-view"
    sys_version = ""

    def log_message(self, format, *args):  # noqa: A002 (http.server's name)
        log.debug("view: " + format, *args)

    def send_page(self, status: int, body: bytes, extra: dict | None = None) -> None:
        self.send_response(status)
        for key, value in {**HEADERS, "Content-Type": "text/html; charset=utf-8",
                           "Content-Length": str(len(body)), **(extra or {})}.items():
            self.send_header(key, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def fail(self, status: int, message: str) -> None:
        self.close_connection = True
        self.send_page(status, layout(f"{status} {HTTPStatus(status).phrase}", f"<p>{esc(message)}</p>"))

    def host_ok(self) -> bool:
        if self.viewer.remote:
            return True
        host = self.headers.get("Host") or ""
        return (host if host.endswith("]") else host.rsplit(":", 1)[0]) in LOCAL_NAMES

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        if not self.host_ok():
            return self.fail(421, "this viewer answers only requests for localhost")
        parts = urlsplit(self.path)
        try:
            params = one(parse_qs(parts.query, max_num_fields=20))
        except ValueError:
            return self.fail(400, "a page takes at most 20 query fields")
        try:
            body = self.route(parts.path, params)
        except InputError as err:  # the judgements file changed under the study (another study's, a bad line)
            return self.fail(500, str(err))
        except (OSError, ValueError) as err:  # orjson's JSONDecodeError is a ValueError
            return self.fail(500, f"cannot read the run ({err}): it changed since cq view indexed it; start cq "
                                  "view again")
        except Exception as err:  # a value of a shape no page expected: a page saying so, not a dropped connection
            log.warning("view: %s: %s: %s", parts.path, type(err).__name__, err)
            return self.fail(500, f"cannot show this page: a record holds a value of an unexpected shape "
                                  f"({type(err).__name__}: {err})")
        if body is None:
            return self.fail(404, "no such page")
        self.send_page(200, body)

    def route(self, path: str, params: dict[str, str]) -> bytes | None:
        viewer, runs, study = self.viewer, self.viewer.runs, self.viewer.study is not None
        if path == "/":
            return pages.list_page(runs, Filters.parse(params), study)
        found = RECORD.match(path)
        if found:
            i = int(found.group(1))
            return pages.record_page(runs, i, study) if i < len(runs[0]) else None
        if path == "/compare" and len(runs) == 2:
            return pages.compare_page(runs, params, study)
        if path == "/pair" and len(runs) == 2:
            return pages.pair_page(runs, params.get("id", ""), study)
        if path == "/study" and viewer.study is not None:
            return self.study_page(params)
        return None

    def study_page(self, params: dict[str, str]) -> bytes:
        study = self.viewer.study
        if "annotator" not in params:
            return study_html.name_page(study)
        try:
            name = check_annotator(params["annotator"])
        except Rejected as err:
            return study_html.name_page(study, str(err))
        item = study.next_item(name)
        if item is None:
            return study_html.finished_page(study, name)
        return study_html.item_page(study, name, item, len(study.log.judged(name)))

    def do_POST(self):
        if not self.host_ok():
            return self.fail(421, "this viewer answers only requests for localhost")
        origin = self.headers.get("Origin")  # a browser sends it with every form POST ("null" from a sandbox)
        if origin is not None and urlsplit(origin).netloc != self.headers.get("Host"):
            return self.fail(403, "a judgement is accepted only from this viewer's own page")
        if urlsplit(self.path).path != "/judge" or self.viewer.study is None:
            return self.fail(404, "no such page")
        length = self.headers.get("Content-Length")
        if length is None or not length.isdigit():
            return self.fail(411, "a judgement needs a Content-Length")
        if int(length) > MAX_BODY:
            return self.fail(413, f"a judgement is at most {MAX_BODY} bytes")
        if (self.headers.get("Content-Type") or "").split(";")[0].strip() != "application/x-www-form-urlencoded":
            return self.fail(415, "a judgement is a form (application/x-www-form-urlencoded)")
        try:
            form = one(parse_qs(self.rfile.read(int(length)).decode("utf-8"), max_num_fields=20, strict_parsing=True))
            record = self.viewer.study.judgement(form)
        except (UnicodeDecodeError, ValueError) as err:  # Rejected is a ValueError, as parse_qs's are
            return self.fail(400, f"not a judgement of this study: {err}")
        try:
            appended = self.viewer.study.log.append(record)
        except InputError as err:
            return self.fail(500, f"the judgement was not kept: {err}")
        if not appended:
            onward = f"/study?annotator={_quote(record['annotator'])}"
            body = layout("409 Conflict", f"<p>{esc(record['annotator'])} already judged this item; it is kept as "
                                          f'it was. <a href="{esc(onward)}">Continue</a></p>')
            self.close_connection = True
            return self.send_page(409, body)
        self.send_page(303, b"", {"Location": f"/study?annotator={_quote(record['annotator'])}"})


def _quote(text: str) -> str:
    from urllib.parse import quote

    return quote(text, safe="")


def make_server(viewer: Viewer, host: str = ViewSettings.host, port: int = ViewSettings.port) -> ThreadingHTTPServer:
    """A server bound to (host, port) (port 0: a free one; the defaults are cq view's);
    ``server.server_address`` says which."""
    handler = type("ViewHandler", (Handler,), {"viewer": viewer})
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    return server
