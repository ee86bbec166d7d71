"""Requests to an API server are bounded (issue 36, item 6): a total deadline per request (a body that
drips past --api-timeout ends the run with one line), a size cap on an answer (a huge or endless body is
a one-line ServiceError, and nothing of it is cached); a request the server refuses while scoring is the
record's problem (set aside under --on-error skip, never cached), and a run whose every record was
refused exits non-zero."""
from __future__ import annotations

import os
import time

import pytest

from cqtools.cli import cli
from cqtools.models import openai_backend

from .conftest import jsonl, parse_jsonl

QUESTIONS = [{"id": f"q{n}", "question": f"Who played the Joker, take {n}?"} for n in range(3)]


@pytest.fixture(autouse=True)
def api_env(server, tmp_path, monkeypatch):
    server.control(reset=True)
    monkeypatch.setenv("CQ_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("CQ_API_KEY", "sk-test")
    monkeypatch.setenv("CQ_API_BACKOFF", "0.01")
    monkeypatch.setenv("CQ_API_RETRIES", "0")
    for var in ("CQ_API_BASE", "OPENAI_BASE_URL", "CQ_CONCURRENCY", "CQ_API_TIMEOUT", "CQ_API_CACHE", "CQ_DEBUG"):
        monkeypatch.delenv(var, raising=False)
    openai_backend._GENERATORS.clear()
    yield
    openai_backend._GENERATORS.clear()


def _cached(tmp_path) -> list[str]:
    root = tmp_path / "cache" / "api"
    return [os.path.join(d, f) for d, _, files in os.walk(root) for f in files] if root.exists() else []


def _gen_cq(runner, server, *extra, records=QUESTIONS):
    return runner.invoke(cli, ["gen-cq", "--method", "llm", "--all", "--model", "openai:fake", "--api-base",
                               server.url, "--concurrency", "1", "-q", *extra], input=jsonl(records))


def test_a_body_that_drips_past_the_timeout_ends_with_one_line(runner, server, tmp_path):
    server.control(faults=["drip:0.2"])  # headers at once, then a byte every 0.2 s for 10,000 bytes
    start = time.monotonic()
    result = _gen_cq(runner, server, "--api-timeout", "1")
    took = time.monotonic() - start
    assert result.exit_code == 1 and took < 10, (took, result.stderr)
    assert "no whole answer within --api-timeout" in result.stderr and result.stderr.count("\n") == 1
    assert "Traceback" not in result.stderr and _cached(tmp_path) == []


@pytest.mark.parametrize("fault", ["huge:40", "endless"])
def test_a_huge_or_endless_answer_is_refused_and_not_cached(runner, server, tmp_path, fault):
    server.control(faults=[fault])
    result = _gen_cq(runner, server)
    assert result.exit_code == 1 and "the answer is over 32 MiB" in result.stderr, result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert _cached(tmp_path) == []


def _detect(runner, server, records, *extra):
    return runner.invoke(cli, ["detect", "--method", "llm", "--model", "openai:fake", "--api-base", server.url,
                               "--concurrency", "1", "-q", *extra], input=jsonl(records))


def test_a_request_refused_while_scoring_is_the_records_problem_and_not_cached(runner, server, tmp_path):
    records = [dict(r) for r in QUESTIONS]
    records[1]["question"] = "TOO-LONG " + records[1]["question"]
    server.control(refuse="TOO-LONG")
    for _ in range(2):  # a rerun is not stopped by a cached refusal: the refused record is asked again
        server.control(reset=True, refuse="TOO-LONG")
        result = _detect(runner, server, records, "--on-error", "skip")
        assert result.exit_code == 0, result.stderr
        out = parse_jsonl(result.stdout)
        assert [("errors" in r, "ambiguity" in r) for r in out] == [(False, True), (True, False), (False, True)]
        assert "maximum context length" in out[1]["errors"]["detect"]
        assert any("TOO-LONG" in str(r["body"]) for r in server.requests())
    failed = _detect(runner, server, records)
    assert failed.exit_code == 1 and "maximum context length" in failed.stderr and failed.stderr.count("\n") == 1


def test_a_run_whose_every_record_was_refused_exits_non_zero(runner, server):
    server.control(refuse="Joker")
    result = _detect(runner, server, QUESTIONS, "--on-error", "skip")
    assert result.exit_code == 1, result.stderr
    assert len(parse_jsonl(result.stdout)) == 3  # written through, with the reason, and kept
    assert "every one of the 3 records" in result.stderr.strip().splitlines()[-1]


def test_asking_a_server_its_context_has_a_total_deadline_too(caplog):
    """The other request cq sends a server, GET /v1/models for its context length (cq answer
    --max-passage-tokens 0, --preset refuel): a listing that drips past --api-timeout is read as
    saying nothing (cq's default budget, said on stderr) instead of holding the run forever."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from types import SimpleNamespace

    from cqtools.models import served_context

    class Drip(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Length", "100000")
            self.end_headers()
            try:
                for _ in range(100_000):
                    self.wfile.write(b" ")
                    self.wfile.flush()
                    time.sleep(0.05)
            except OSError:  # the client gave up, as it should
                pass

    drip = ThreadingHTTPServer(("127.0.0.1", 0), Drip)
    threading.Thread(target=drip.serve_forever, daemon=True).start()
    model = SimpleNamespace(base=f"http://127.0.0.1:{drip.server_port}/v1", model="dripping", timeout=1.0)
    got = []
    asking = threading.Thread(target=lambda: got.append(served_context.context_of(model)), daemon=True)
    start = time.monotonic()
    try:
        asking.start()
        asking.join(15)
        assert not asking.is_alive(), "still reading the dripping listing after 15 s"
    finally:
        drip.shutdown()
        served_context._KNOWN.pop((model.base, model.model), None)
        served_context._NOTED.discard((model.base, model.model))
    assert got == [served_context.DEFAULT_CONTEXT] and time.monotonic() - start < 10
    assert "no whole answer within 1 s" in caplog.text


@pytest.mark.parametrize("retries", [0, 1])
def test_an_answer_cut_short_is_retried_then_one_line(runner, server, tmp_path, monkeypatch, retries):
    """Issue 48: the bounded reader let httpx's error for a body cut short (the server closing mid-answer)
    through as a traceback, with no retry. Now it is retried as a dropped connection, then one line."""
    monkeypatch.setenv("CQ_API_RETRIES", str(retries))
    server.control(faults=["cut"])
    result = _gen_cq(runner, server)
    assert "Traceback" not in result.stderr
    if retries:
        assert result.exit_code == 0 and len(parse_jsonl(result.stdout)) == len(QUESTIONS), result.stderr
        assert "the answer was cut short" in result.stderr and "retry 1/1" in result.stderr
    else:
        assert result.exit_code == 1 and result.stderr.count("\n") == 1, result.stderr
        assert "the answer was cut short" in result.stderr and "(after 0 retries)" in result.stderr
