"""Runs and an in-process `cq view` server for tests/test_view*.py."""
import contextlib
import json
import threading
import urllib.error
import urllib.request
from pathlib import Path

import orjson

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "replay" / "pipeline.jsonl"
XSS = {"script": "<script>alert('x')</script>", "img": "<img src=x onerror=alert(1)>"}


def steps() -> dict[str, list[dict]]:
    return {row["step"]: row["records"] for row in map(json.loads, FIXTURE.read_text().splitlines())}


def write_runs(tmp_path) -> tuple[Path, Path]:
    """Run A: the llm CQ writer's records with detect-answers' answers, and one record holding XSS payloads;
    run B: the from-dqs CQ writer's records with answer-multi's answers (same ids but the XSS one)."""
    rows = steps()
    answers_a = {r["id"]: r["answers"] for r in rows["detect-answers"]}
    answers_b = {r["id"]: r["answers"] for r in rows["answer-multi"]}
    a = [dict(r, answers=answers_a[r["id"]]) for r in rows["gen-cq-llm"]]
    b = [dict(r, answers=answers_b[r["id"]]) for r in rows["gen-cq-from-dqs"]]
    evil = dict(a[0], id="xss" + XSS["img"], question="Who? " + XSS["script"])
    evil["passages"] = [dict(evil["passages"][0], title=XSS["img"], text="Heath Ledger " + XSS["script"])]
    evil["answers"] = [{"text": "Heath Ledger", "option": XSS["img"]}]
    evil["cq"] = {"text": XSS["script"], "options": [XSS["img"], "x"]}
    a.append(evil)
    path_a, path_b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    path_a.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in a))
    path_b.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in b))
    return path_a, path_b


@contextlib.contextmanager
def serving(paths, study=None, log=None, seed=0):
    """A server of ``paths`` on a free port of 127.0.0.1 (metrics computed first); yields its base URL."""
    from cqtools.view.index import RunIndex
    from cqtools.view.server import Viewer, make_server
    from cqtools.view.study import Study

    runs = [RunIndex(str(p)) for p in paths]
    viewer = Viewer(runs, Study(study, runs, str(log), seed) if study else None)
    for thread in viewer.fill_metrics():
        thread.join()
    server = make_server(viewer, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", viewer
    finally:
        server.shutdown()
        server.server_close()


def get(url: str, headers: dict | None = None) -> tuple[int, dict, str]:
    """(status, headers, body) of a GET; an error status is returned, not raised."""
    return request(urllib.request.Request(url, headers=headers or {}))


def post(url: str, data: bytes, headers: dict | None = None) -> tuple[int, dict, str]:
    merged = {"Content-Type": "application/x-www-form-urlencoded", **(headers or {})}
    return request(urllib.request.Request(url, data=data, headers=merged, method="POST"))


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def request(req) -> tuple[int, dict, str]:
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        with opener.open(req, timeout=30) as response:
            return response.status, dict(response.headers), response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read().decode()
