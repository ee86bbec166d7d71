"""Issue 37, item 5: a hosted API model fails at once and in one line, offline or without a key (68 s of
retries and 8 stderr lines before)."""
import time

from cqtools.cli import cli

RECORD = '{"id": "a", "question": "Who?"}\n'


def gen_cq(runner, *args):
    start = time.monotonic()
    result = runner.invoke(cli, ["gen-cq", "--method", "llm", "--all", "-q", *args], input=RECORD)
    return result, time.monotonic() - start


def test_a_hosted_api_without_a_key_fails_before_any_request(runner, monkeypatch):
    for var in ("CQ_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL", "CQ_API_BASE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("CQ_API_BACKOFF", "5")  # a retry would take seconds
    monkeypatch.setenv("CQ_API_RETRIES", "1")  # (ab6d27b: one retry, then the network error)
    result, took = gen_cq(runner, "--model", "openai:gpt-4o-mini")
    assert result.exit_code == 1 and took < 5
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "needs a key" in lines[0] and "CQ_API_KEY or OPENAI_API_KEY" in lines[0]


def test_a_host_name_that_does_not_resolve_is_not_retried(runner, monkeypatch):
    monkeypatch.setenv("CQ_API_KEY", "k")
    monkeypatch.setenv("CQ_API_BACKOFF", "5")
    monkeypatch.setenv("CQ_API_RETRIES", "1")
    result, took = gen_cq(runner, "--model", "openai:m", "--api-base", "http://no-such-host.invalid/v1")
    assert result.exit_code == 1 and "retry" not in result.stderr and took < 30
    assert "cannot resolve the server's host name" in result.stderr.strip().splitlines()[-1]
