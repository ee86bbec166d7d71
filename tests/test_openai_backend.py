"""API models (cqtools/models/openai_backend.py) against real local OpenAI-compatible servers.

The default suite drives the CLI against tests/openai_server.py, a stdlib HTTP server started as
its own process on 127.0.0.1 (an OS-chosen port) with made-up, known logprobs, which can be told
to answer 429/5xx or to stall a bounded number of times. The slow tests serve the offline SmolLM2
GGUF with llama-cpp-python's server (``pip install 'llama-cpp-python[server]'``; skipped without it).
No test talks to anything but the servers it starts.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import orjson
import pytest

from cqtools.cli import cli
from cqtools.models import openai_backend
from cqtools.models.openai_backend import OpenAIGenerator, continuation_logprob

from .conftest import FIXTURES, ROOT, jsonl, parse_jsonl
from .openai_server import VOCAB, token_logprob, tokenize
from .processes import stop

SECRET = "sk-test-DO-NOT-LEAK-1234567890"


class Server:
    """A server process started by a test; ``control`` and ``log`` talk to its test endpoints."""

    def __init__(self, argv: list[str], env: dict | None = None, ready: str = "PORT", timeout: float = 30):
        self.proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                     env={**os.environ, **(env or {})})
        line = self.proc.stdout.readline()
        if not line.startswith(ready):
            self.stop()
            raise RuntimeError(f"server did not start: {line}")
        self.port = int(line.split()[1])
        self.url = f"http://127.0.0.1:{self.port}/v1"

    def _call(self, path: str, payload: dict | None = None) -> dict:
        data = None if payload is None else json.dumps(payload).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=data,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as resp:
            return json.loads(resp.read())

    def control(self, **settings) -> None:
        self._call("/_control", settings)

    def log(self) -> dict:
        return self._call("/_log")

    def requests(self) -> list[dict]:
        return self.log()["requests"]

    def stop(self) -> None:
        stop(self.proc, 10)


@pytest.fixture(autouse=True)
def api_env(server, tmp_path, monkeypatch):
    """A fresh server state, response cache and generator per test; a key in the environment."""
    server.control(reset=True)
    monkeypatch.setenv("CQ_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("CQ_API_KEY", SECRET)
    monkeypatch.setenv("CQ_API_BACKOFF", "0.01")
    for var in ("CQ_API_BASE", "OPENAI_BASE_URL", "CQ_CONCURRENCY", "CQ_API_TIMEOUT", "CQ_API_RETRIES",
                "CQ_API_CACHE", "CQ_MODEL_DETECT", "CQ_MODEL_GEN_CQ", "CQ_DEBUG"):
        monkeypatch.delenv(var, raising=False)
    openai_backend._GENERATORS.clear()
    yield
    openai_backend._GENERATORS.clear()


@pytest.fixture(scope="module")
def questions3() -> str:
    return "".join((FIXTURES / "questions.jsonl").read_text().splitlines(keepends=True)[:3])


def cq(runner, args, input_text, **env):
    return runner.invoke(cli, args, input=input_text, env=env or None, catch_exceptions=False)


def detect(runner, server, questions, *extra, **env):
    return cq(runner, ["detect", "--method", "llm", "--model", "openai:fake", "--api-base", server.url, *extra],
              questions, **env)


def expected_detect_score() -> float:
    return round(token_logprob(" True") - token_logprob(" False"), 4)


# --- requests and arithmetic -------------------------------------------------------------------------------

def test_detect_sends_echo_logprob_requests_and_scores_from_them(runner, server, questions3):
    result = detect(runner, server, questions3)
    assert result.exit_code == 0, result.stderr
    records = parse_jsonl(result.stdout)
    assert len(records) == 3
    for record in records:
        assert record["ambiguity"]["score"] == pytest.approx(expected_detect_score(), abs=1e-3)
        meta = record["meta"]["detect"]
        assert meta["model"] == "openai:fake" and meta["kind"] == "api" and meta["api_base"] == server.url
    sent = server.requests()
    # log p(" True") and log p(" False") per question, and one check of the echoed logprobs
    assert len(sent) == 7
    check = sent.pop(1)["body"]
    assert "echo" not in check and check["logprobs"] == 20 and check["prompt"].endswith("ambiguous:")
    for req in sent:
        body = req["body"]
        assert req["path"] == "/v1/completions"
        assert {k: body[k] for k in ("model", "echo", "logprobs", "max_tokens", "temperature", "seed")} == \
            {"model": "fake", "echo": True, "logprobs": 1, "max_tokens": 1, "temperature": 0, "seed": 0}
        assert body["prompt"].endswith(("ambiguous: True", "ambiguous: False"))
        assert req["authorization"] == f"Bearer {SECRET}"


def test_continuation_logprob_sums_the_tokens_over_its_characters(server):
    gen = OpenAIGenerator("fake", server.url, concurrency=2)
    # prompt "P: one two" + continuation " three four": the last two tokens
    a, b = gen.score(["one two", "one two three"], [" three four", " four"], prefix="P: ")
    assert a == pytest.approx(token_logprob(" three") + token_logprob(" four"))
    assert b == pytest.approx(token_logprob(" four"))
    assert server.requests()[0]["body"]["prompt"] == "P: one two three four"
    assert server.requests()[1]["body"]["prompt"] == "P: one two"  # the echo check: " three" is not listed
    # a token the server merges across the boundary ("ab" + "cd e" -> " abcd", " e") counts whole
    [c] = gen.score(["Q: ab"], ["cd e"])
    assert c == pytest.approx(token_logprob(" abcd") + token_logprob(" e"))
    # an empty continuation is 0 and sends nothing
    before = len(server.requests())
    assert gen.score(["x"], [""]) == [0.0]
    assert len(server.requests()) == before
    with pytest.raises(ValueError):
        gen.score([""], [" x"])


def test_continuation_logprob_offsets():
    tokens = ["<s>", "Q:", " ab", "cd", " e", " gen"]
    values = [None, -1.0, -2.0, -3.0, -4.0, -5.0]
    offsets = [0, 0, 2, 5, 7, 9]
    text = "Q: abcd e"
    assert continuation_logprob(tokens, values, offsets, len("Q: ab"), len(text)) == -7.0  # "cd", " e"
    assert continuation_logprob(tokens, values, offsets, len("Q: a"), len(text)) == -9.0   # " ab" straddles
    assert continuation_logprob(tokens, values, offsets, len("Q:"), len("Q: ab")) == -2.0  # stops at the end
    assert [len(t) for t in tokenize(" a  b\n")] == [2, 3, 1]


def test_generation_bodies_completions_and_chat(server):
    server.control(reply=" Do you mean A or B?\nNext line")
    gen = OpenAIGenerator("fake", server.url)
    stop = ["\n", "X1", "X2", "X3", "X4"]
    assert gen.generate(["Q1", "Q2", "Q1"], max_new_tokens=12, chat=False, stop=stop) == ["Do you mean A or B?"] * 3
    assert gen.generate(["Hello"], max_new_tokens=5, stop=["\n"]) == ["Do you mean A or"]
    sent = sorted(server.requests(), key=lambda r: (r["path"], r["body"].get("prompt", "")))
    assert [r["path"] for r in sent] == ["/v1/chat/completions"] + ["/v1/completions"] * 2  # Q1 sent once
    assert sent[1]["body"] == {"model": "fake", "prompt": "Q1", "max_tokens": 12, "temperature": 0, "seed": 0,
                               "stop": stop[:4]}  # the API takes 4 stop sequences; the 5th is cut here
    assert sent[0]["body"] == {"model": "fake", "messages": [{"role": "user", "content": "Hello"}], "max_tokens": 5,
                               "temperature": 0, "seed": 0, "stop": ["\n"]}


def test_gen_cq_through_the_cli_uses_completions_with_stop(runner, server, questions3):
    server.control(reply=" Which Joker do you mean, the one in Batman or the one in Joker?\nQ: next")
    result = cq(runner, ["gen-cq", "--method", "llm", "--model", "openai:fake", "--api-base", server.url, "--all"],
                questions3)
    assert result.exit_code == 0, result.stderr
    records = parse_jsonl(result.stdout)
    assert all("Joker" in r["cq"]["text"] for r in records), records[0]["cq"]
    sent = server.requests()
    assert len(sent) == 3 and all(r["path"] == "/v1/completions" for r in sent)
    assert all(r["body"]["stop"] == ["\n"] and r["body"]["max_tokens"] == 40 for r in sent)


def test_the_name_picks_the_backend_and_api_base_is_only_the_openai_servers(runner, server, questions3):
    """Issue 58: a model's name says which backend loads it (``openai:NAME`` the openai backend); --api-base
    (CQ_API_BASE) says where that backend's server is, and no longer sends every other name there."""
    result = cq(runner, ["detect", "--method", "llm", "--model", "openai:HuggingFaceTB/SmolLM2-135M-Instruct"],
                questions3, CQ_API_BASE=server.url)
    assert result.exit_code == 0, result.stderr
    assert {r["body"]["model"] for r in server.requests()} == {"HuggingFaceTB/SmolLM2-135M-Instruct"}
    sent = len(server.requests())
    result = cq(runner, ["detect", "--method", "llm", "--model", "no-such-local-model"], questions3,
                CQ_API_BASE=server.url)
    assert result.exit_code != 0 and len(server.requests()) == sent
    assert "a model served at --api-base is named openai:no-such-local-model" in result.stderr, result.stderr


# --- errors and retries -------------------------------------------------------------------------------------

def test_429_and_5xx_are_retried_with_backoff(runner, server, questions3):
    server.control(faults=["429", "500", "503", "502"])
    result = detect(runner, server, questions3, "--concurrency", "1")
    assert result.exit_code == 0, result.stderr
    assert len(server.requests()) == 7 + 4
    assert "HTTP 429, retry 1/6" in result.stderr and "HTTP 502, retry 4/6" in result.stderr
    assert all(r["ambiguity"]["score"] == pytest.approx(expected_detect_score(), abs=1e-3)
               for r in parse_jsonl(result.stdout))


def test_retries_run_out_with_a_one_line_error(runner, server, questions3):
    server.control(faults=["500"] * 3)
    result = detect(runner, server, questions3, "--concurrency", "1", CQ_API_RETRIES="2")
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert lines[-1].startswith("cq detect: error: ") and "HTTP 500 after 2 retries" in lines[-1], result.stderr
    assert "Traceback" not in result.stderr
    assert len(server.requests()) == 3


def test_a_stalled_request_times_out_and_is_retried(runner, server, questions3):
    server.control(faults=["sleep:2"])
    start = time.monotonic()
    result = detect(runner, server, questions3, "--concurrency", "1", "--api-timeout", "0.3")
    assert result.exit_code == 0, result.stderr
    assert "no answer within --api-timeout" in result.stderr
    assert time.monotonic() - start < 2
    assert len(server.requests()) == 8
    while server.log()["in_flight"] and time.monotonic() - start < 10:  # the stalled one ends
        time.sleep(0.1)


def test_a_refused_key_names_the_variables(runner, server, questions3):
    server.control(faults=["401"])
    result = detect(runner, server, questions3)
    assert result.exit_code == 1
    assert "HTTP 401" in result.stderr and "CQ_API_KEY or OPENAI_API_KEY" in result.stderr
    assert SECRET not in result.stderr


def test_no_server_is_a_one_line_error(runner, questions3):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result = cq(runner, ["detect", "--method", "llm", "--model", "openai:fake", "--api-base",
                         f"http://127.0.0.1:{port}/v1"], questions3, CQ_API_RETRIES="1")
    assert result.exit_code == 1
    assert "cannot connect" in result.stderr.strip().splitlines()[-1]


def test_a_server_without_logprobs_is_a_clear_error(runner, server, questions3):
    server.control(mode="none")
    result = detect(runner, server, questions3)
    assert result.exit_code == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("cq detect: error: ") and "openai:fake at " in last, last
    assert "gives no log-probabilities" in last and "vLLM" in last
    assert "Traceback" not in result.stderr
    assert len(server.requests()) == 2  # one echo request, one top_logprobs request, then the error
    # generation still works on that server
    gen = OpenAIGenerator("fake", server.url)
    assert gen.generate(["x"], chat=False, stop=["\n"])


def test_a_request_refused_mid_run_is_a_one_line_error(runner, server, questions3):
    server.control(faults=["pass", "pass", "400"])  # echo works and checks out; the third request is refused
    result = detect(runner, server, questions3, "--concurrency", "1")
    assert result.exit_code == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("cq detect: error: ") and "HTTP 400: injected 400" in last, result.stderr
    assert "Traceback" not in result.stderr


def test_next_token_top_logprobs_when_echo_is_refused(runner, server, questions3):
    server.control(mode="top")
    result = detect(runner, server, questions3)
    assert result.exit_code == 0, result.stderr
    assert "no usable prompt logprobs (HTTP 400: echo is not supported)" in result.stderr
    for record in parse_jsonl(result.stdout):
        assert record["ambiguity"]["score"] == pytest.approx(expected_detect_score(), abs=1e-3)
    bodies = [r["body"] for r in server.requests()]
    assert bodies[0]["echo"] is True and all("echo" not in b and b["logprobs"] == 20 for b in bodies[1:])
    gen = OpenAIGenerator("fake", server.url)
    # token by token: " True" then " story"
    assert gen.score(["Q"], [" True story"]) == [pytest.approx(token_logprob(" True") + token_logprob(" story"))]
    # " zebra" is not among the listed tokens: the lowest listed logprob bounds it
    lowest = min(token_logprob(t) for t in VOCAB)
    assert gen.score(["Q"], [" True zebra"]) == [pytest.approx(token_logprob(" True") + lowest)]


def test_echoed_logprobs_that_disagree_with_next_token_ones_are_not_used(runner, server, questions3):
    """llama-cpp-python 0.3 echoes prompt logprobs one position off; the check finds it."""
    server.control(mode="shifted")
    result = detect(runner, server, questions3)
    assert result.exit_code == 0, result.stderr
    assert "no usable prompt logprobs (its prompt logprob of ' True' is" in result.stderr
    for record in parse_jsonl(result.stdout):
        assert record["ambiguity"]["score"] == pytest.approx(expected_detect_score(), abs=1e-3)
    bodies = [r["body"] for r in server.requests()]
    assert bodies[0].get("echo") is True and not any(b.get("echo") for b in bodies[1:])


# --- cache, concurrency, the key ----------------------------------------------------------------------------

def test_a_repeated_run_is_answered_from_the_cache(runner, server, questions3, tmp_path):
    first = detect(runner, server, questions3)
    assert first.exit_code == 0
    assert len(server.requests()) == 7
    openai_backend._GENERATORS.clear()  # as a new process would
    second = detect(runner, server, questions3)
    assert second.exit_code == 0
    assert second.stdout == first.stdout
    assert len(server.requests()) == 7  # nothing sent twice
    # a resumed run sends only what is new
    out = tmp_path / "out.jsonl"
    lines = (FIXTURES / "questions.jsonl").read_text().splitlines(keepends=True)
    detect(runner, server, "".join(lines[:4]), "--resume", str(out))
    assert len(server.requests()) == 9
    detect(runner, server, "".join(lines[:5]), "--resume", str(out))
    assert len(server.requests()) == 11
    assert len(parse_jsonl(out.read_text())) == 5


def test_cache_is_keyed_by_model_and_parameters(server):
    a = OpenAIGenerator("fake", server.url)
    a.generate(["x"], max_new_tokens=4, chat=False)
    a.generate(["x"], max_new_tokens=5, chat=False)
    OpenAIGenerator("other", server.url).generate(["x"], max_new_tokens=4, chat=False)
    a.generate(["x"], max_new_tokens=4, chat=False)
    assert [(r["body"]["model"], r["body"]["max_tokens"]) for r in server.requests()] == \
        [("fake", 4), ("fake", 5), ("other", 4)]


@pytest.mark.parametrize("concurrency", [1, 3])
def test_concurrency_is_bounded(runner, server, concurrency):
    server.control(delay=0.05)
    lines = (FIXTURES / "questions.jsonl").read_text().splitlines(keepends=True)[:8]
    questions, n = "".join(lines), len(lines)
    result = detect(runner, server, questions, "--concurrency", str(concurrency), "--batch-size", "16")
    assert result.exit_code == 0, result.stderr
    log = server.log()
    assert len(log["requests"]) == 2 * n + 1
    assert log["max_in_flight"] == concurrency


def test_the_key_is_never_written(runner, server, questions3, tmp_path):
    out = tmp_path / "run" / "detect.jsonl"
    result = detect(runner, server, questions3, "--resume", str(out), OPENAI_API_KEY="sk-other-key", CQ_DEBUG="1")
    assert result.exit_code == 0, result.stderr
    assert {r["authorization"] for r in server.requests()} == {f"Bearer {SECRET}"}  # CQ_API_KEY comes first
    written = [out.read_text(), (tmp_path / "run" / "detect.jsonl.cq.json").read_text(), result.stderr,
               result.stdout]
    written += [p.read_text() for p in (tmp_path / "cache").rglob("*.json")]
    assert len(written) == 4 + 7
    for text in written:
        assert SECRET not in text and "sk-other-key" not in text
    run_record = orjson.loads((tmp_path / "run" / "detect.jsonl.cq.json").read_bytes())
    assert run_record["params"]["model"] == "openai:fake"
    assert parse_jsonl(out.read_text())[0]["meta"]["detect"]["api_base"] == server.url


def test_credentials_in_the_url_are_not_written(runner, server, questions3):
    url = server.url.replace("http://", "http://user:pw-in-url@")
    result = cq(runner, ["detect", "--method", "llm", "--model", "openai:fake", "--api-base", url], questions3)
    assert result.exit_code == 0, result.stderr
    assert "pw-in-url" not in result.stdout + result.stderr
    assert parse_jsonl(result.stdout)[0]["meta"]["detect"]["api_base"] == server.url


def test_starting_the_jvm_sets_no_placeholder_key(monkeypatch):
    """Pyserini's placeholder key lives only in `cq pyserini`'s process: cq's own JVM start-up leaves
    OPENAI_API_KEY alone, so an API call never reads a placeholder (and api.py needs no special case)."""
    import cqtools.retrieval.jvm as jvm

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setattr(jvm, "_READY", False)
    jvm.setup()
    assert "OPENAI_API_KEY" not in os.environ


def test_backend_is_registered(server):
    from cqtools.protocols import Generator
    from cqtools.registry import BACKENDS

    assert isinstance(OpenAIGenerator("fake", server.url), Generator)

    assert "openai" in BACKENDS.names()
    assert openai_backend.route("openai:gpt-x") == ("openai", "gpt-x")
    assert openai_backend.route("HuggingFaceTB/SmolLM2-135M-Instruct") is None
    assert openai_backend.route("C:/models/x") is None


# --- slow: llama-cpp-python's OpenAI-compatible server with the offline SmolLM2 GGUF ------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def llama_server():
    pytest.importorskip("llama_cpp", reason="pip install 'llama-cpp-python[server]' to run the llama.cpp tests")
    pytest.importorskip("uvicorn")
    from cqtools.models.resolve import resolve

    model = resolve("HuggingFaceTB/SmolLM2-135M-Instruct", announce=False)
    gguf = Path(model.path) / model.files["gguf_file"]
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--host", "127.0.0.1",
                             "--port", str(port), "--model_alias", "smollm2", "--n_ctx", "2048", "--n_threads", "2",
                             "--verbose", "false"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 120
    while True:
        try:
            with urllib.request.urlopen(f"{url}/models", timeout=2):
                break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError(f"llama_cpp.server did not start: {proc.stderr.read()[-2000:]}")
            time.sleep(0.5)
    yield url
    stop(proc, 20)


@pytest.mark.slow
def test_llama_cpp_server_scores_like_the_local_model(llama_server):
    """Scores through llama.cpp's server equal the local (dequantised) SmolLM2's log p within a
    tolerance. llama-cpp-python 0.3 echoes prompt logprobs one position off (its issue #1983): the
    check against its next-token logprobs catches that and scoring goes token by token."""
    from cqtools.models.load import load_generator

    gen = OpenAIGenerator("smollm2", llama_server, concurrency=2)
    prompts = ["The capital of France is", "Water boils at 100 degrees"]
    conts = [" Paris", " Celsius"]
    api = gen.score(prompts, conts)
    assert all(s < 0 for s in api)
    assert api[0] > gen.score([prompts[0]], [" banana"])[0]
    local = load_generator("HuggingFaceTB/SmolLM2-135M-Instruct", "cpu").score(prompts, conts)
    # the same GGUF weights; llama.cpp computes in its own kernels (Q4_1) and transformers dequantises
    assert api == pytest.approx(local, abs=0.5), (api, local)
    print(f"\nllama.cpp server ({gen._score_mode} scoring): {api}; local transformers: {local}")


@pytest.mark.slow
def test_llama_cpp_server_runs_detect_and_gen_cq(runner, llama_server, questions3):
    start = time.monotonic()
    result = cq(runner, ["detect", "--method", "llm", "--model", "openai:smollm2", "--api-base", llama_server,
                         "--concurrency", "2"], questions3)
    assert result.exit_code == 0, result.stderr
    detected = parse_jsonl(result.stdout)
    assert len(detected) == 3 and all(isinstance(r["ambiguity"]["score"], float) for r in detected)
    result = cq(runner, ["gen-cq", "--method", "llm", "--model", "openai:smollm2", "--api-base", llama_server,
                         "--all"], jsonl(detected))
    assert result.exit_code == 0, result.stderr
    asked = parse_jsonl(result.stdout)
    assert len(asked) == 3 and all("cq" in r for r in asked)
    elapsed = time.monotonic() - start
    # rerun: everything from the cache
    openai_backend._GENERATORS.clear()
    again = time.monotonic()
    result = cq(runner, ["detect", "--method", "llm", "--model", "openai:smollm2", "--api-base", llama_server],
                questions3)
    assert parse_jsonl(result.stdout) == detected
    print(f"\nllama.cpp server: detect + gen-cq on 3 questions {elapsed:.1f} s; cached rerun of detect "
          f"{time.monotonic() - again:.2f} s; scores {[r['ambiguity']['score'] for r in detected]}; "
          f"CQs {[r['cq'] and r['cq'].get('text') for r in asked]}")


# --- answers of the wrong shape (issue 26, item 9) ------------------------------------------------------------

def _no_catch(runner, args, stdin):
    return runner.invoke(cli, args, input=stdin)  # exceptions caught: a traceback shows as result.exception


@pytest.mark.parametrize("args", [
    ["detect", "--method", "llm"],
    ["gen-cq", "--method", "llm", "--all"],
    ["gen-cq", "--method", "clam", "--all"],
])
def test_valid_json_of_the_wrong_types_is_a_one_line_error(runner, server, questions3, args):
    server.control(mode="wrongtypes")
    result = _no_catch(runner, [*args, "--model", "openai:fake", "--api-base", server.url, "-q"], questions3)
    assert result.exit_code == 1 and result.stdout == ""
    assert not isinstance(result.exception, (TypeError, KeyError, IndexError, AttributeError)), result.exception
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"cq {args[0]}: error: openai:fake at "), line


def test_a_cached_answer_of_the_wrong_shape_is_asked_again(server, tmp_path):
    gen = OpenAIGenerator("fake", server.url)
    assert gen.generate(["x"], max_new_tokens=4, chat=False) != [""]
    (entry,) = (tmp_path / "cache").rglob("*.json")
    entry.write_text('["not", "an", "answer"]')
    openai_backend._GENERATORS.clear()
    again = OpenAIGenerator("fake", server.url)
    assert again.generate(["x"], max_new_tokens=4, chat=False) == gen.generate(["x"], max_new_tokens=4, chat=False)
    assert len(server.requests()) == 2  # the broken entry was not used: the request went out again


# --- a wrong --api-base fails at once (issue 25) ---------------------------------------------------------------

def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # closed again when the block ends: nothing listens there


def test_a_wrong_api_base_fails_at_once_without_retries(runner, monkeypatch):
    monkeypatch.setenv("CQ_API_BACKOFF", "5")  # six retries would take minutes: none are made
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    result = runner.invoke(cli, ["gen-cq", "--method", "llm", "--all", "--model", "openai:fake", "--api-base", url],
                           input='{"id": "a", "question": "Who?"}\n')
    assert result.exit_code == 1 and "retry" not in result.stderr
    assert "nothing answers at that address" in result.stderr and "--api-base" in result.stderr


def test_a_server_that_answered_before_and_then_refuses_is_retried(caplog, monkeypatch):
    monkeypatch.setenv("CQ_API_RETRIES", "1")
    own = Server([sys.executable, "-m", "tests.openai_server"])
    gen = OpenAIGenerator("fake", own.url)
    assert gen.generate(["x"], max_new_tokens=2, chat=False)
    own.stop()  # a restart, say: refused connections now
    with caplog.at_level("WARNING", logger="cqtools"), pytest.raises(openai_backend.ApiError, match="after 1 retries"):
        gen.generate(["y"], max_new_tokens=2, chat=False)
    assert any("retry 1/1" in r.getMessage() for r in caplog.records)
