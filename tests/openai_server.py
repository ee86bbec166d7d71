"""A tiny OpenAI-compatible HTTP server for tests (stdlib only): ``python -m tests.openai_server``.

It prints ``PORT <n>`` on its first stdout line (an OS-chosen port on 127.0.0.1) and serves:

- ``POST /v1/completions``: ``prompt`` (a string), ``max_tokens``, ``stop``, ``echo``, ``logprobs``;
- ``POST /v1/chat/completions``: ``messages``, ``max_tokens``, ``stop``;
- ``GET /v1/models``;
- ``POST /_control`` (JSON): ``{"mode": ..., "faults": [...], "delay": s, "reply": str}`` sets how it answers
  (every key optional; ``"reset": true`` also forgets the request log);
- ``GET /_log``: every API request so far (path, body, Authorization header), the requests in
  flight now and the most it ever held in flight at once.

Text is cut into tokens by :func:`tokenize` (a word with its leading spaces, or a run of spaces),
and token ``t`` has the made-up log-probability :func:`token_logprob` ``(t)`` wherever it occurs,
so a test can compute the exact expected score. A request without ``echo`` lists the tokens of
:data:`VOCAB` as the next token's ``top_logprobs``. Modes: ``echo`` (default: prompt logprobs with
``echo``), ``shifted`` (echoed prompt logprobs that disagree with the next-token ones, as
llama-cpp-python 0.3's are one position off), ``top`` (refuses ``echo`` with 400), ``none`` (never
any logprobs), ``wrongtypes`` (valid JSON with a number where the text is, and logprobs of the wrong
shape). A fault is an HTTP status such as ``429`` or ``500`` (answer
with it), ``sleep:S`` (wait S seconds before answering), ``pass`` (answer normally), ``drip:S`` (send
the headers, then the body one byte every S seconds, after 10,000 bytes of leading whitespace),
``huge:M`` (a valid answer with M MiB of leading whitespace), ``endless`` (headers, then whitespace
without end) or ``cut`` (headers, then half the body, then the connection closed), used up one per API request in order. ``"refuse": TEXT`` answers 400 ("maximum context
length") to every request whose prompt or messages contain TEXT, as a server does to a prompt over its
context; ``"limit": N`` answers 400 ("maximum context length is N tokens") to every request asking for more than
N tokens (its words and max_tokens), without advertising N, as llama-cpp-python's server does.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOKEN = re.compile(r"\s*\S+|\s+")
# the tokens listed as next-token top_logprobs (each with its token_logprob), best first
VOCAB = (" True", " False", " Yes", " No", " story", " the")
DEFAULT_REPLY = " Which one do you mean, the first or the second?\nQuestion: more text"


def tokenize(text: str) -> list[str]:
    return TOKEN.findall(text)


def token_logprob(token: str) -> float:
    """A fixed, made-up log-probability per token text (between -0.1 and -10.0)."""
    return -round(0.1 + int(hashlib.sha1(token.encode()).hexdigest()[:6], 16) % 990 / 100, 2)


def requested(body: dict) -> int:
    """Tokens a request asks for: its prompt's (or its messages' contents') and its max_tokens."""
    text = body.get("prompt") if isinstance(body.get("prompt"), str) else \
        " ".join(str(m.get("content", "")) for m in body.get("messages") or [] if isinstance(m, dict))
    return len(tokenize(text)) + int(body.get("max_tokens") or 0)


class State:
    def __init__(self):
        self.lock = threading.Lock()
        self.mode = "echo"
        self.faults: list[str] = []
        self.delay = 0.0
        self.reply = DEFAULT_REPLY
        self.refuse: str | None = None
        self.log: list[dict] = []
        self.in_flight = 0
        self.max_in_flight = 0


STATE = State()


def _cut(text: str, stop) -> str:
    for s in ([stop] if isinstance(stop, str) else stop or []):
        pos = text.find(s)
        if pos >= 0:
            text = text[:pos]
    return text


def completion(body: dict) -> tuple[int, dict]:
    prompt = body.get("prompt")
    if not isinstance(prompt, str):
        return 400, {"error": {"message": "prompt must be a string", "type": "invalid_request_error"}}
    echo, logprobs = bool(body.get("echo")), body.get("logprobs")
    if echo and STATE.mode == "top":
        return 400, {"error": {"message": "echo is not supported", "type": "invalid_request_error"}}
    generated_tokens = tokenize(STATE.reply)[: int(body.get("max_tokens") or 16)]
    generated = _cut("".join(generated_tokens), body.get("stop"))
    choice = {"index": 0, "text": (prompt if echo else "") + generated, "finish_reason": "stop", "logprobs": None}
    if logprobs is not None and STATE.mode != "none":
        if echo:
            tokens = tokenize(prompt) + tokenize(generated)[:1]
            lp = (lambda t: token_logprob(t + "|after")) if STATE.mode == "shifted" else token_logprob
            values = [None] + [lp(t) for t in tokens[1:]]  # the first prompt token has no context
            offsets, at = [], 0
            for t in tokens:
                offsets.append(at)
                at += len(t)
            choice["logprobs"] = {"tokens": tokens, "token_logprobs": values, "text_offset": offsets,
                                  "top_logprobs": [None] + [{t: v} for t, v in zip(tokens[1:], values[1:])]}
        else:
            listed = dict(sorted(((t, token_logprob(t)) for t in VOCAB), key=lambda kv: -kv[1])[: int(logprobs)])
            first = next(iter(listed))
            choice["logprobs"] = {"tokens": [first], "token_logprobs": [listed[first]], "top_logprobs": [listed],
                                  "text_offset": [len(prompt)]}
    return 200, {"id": "cmpl-test", "object": "text_completion", "created": 0, "model": body.get("model"),
                 "choices": [choice], "usage": {"prompt_tokens": len(tokenize(prompt)), "completion_tokens": 1,
                                                "total_tokens": len(tokenize(prompt)) + 1}}


def chat(body: dict) -> tuple[int, dict]:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return 400, {"error": {"message": "messages must be a non-empty list", "type": "invalid_request_error"}}
    text = _cut("".join(tokenize(STATE.reply)[: int(body.get("max_tokens") or 16)]), body.get("stop"))
    return 200, {"id": "chat-test", "object": "chat.completion", "created": 0, "model": body.get("model"),
                 "choices": [{"index": 0, "finish_reason": "stop",
                              "message": {"role": "assistant", "content": text.strip()}}],
                 "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}


def _mangled(payload: dict) -> dict:
    """Valid JSON of the wrong types where a client reads text and log-probabilities (mode wrongtypes)."""
    for choice in payload["choices"]:
        if "message" in choice:
            choice["message"]["content"] = 5
        else:
            choice["text"] = 5
            choice["logprobs"] = {"tokens": "abc", "token_logprobs": 7, "text_offset": None, "top_logprobs": [3]}
    return payload


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # quiet
        pass

    def _send(self, status: int, payload: dict, headers: dict | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _send_unbounded(self, fault: str, payload: dict) -> None:
        """A body that drips, is huge or never ends (faults drip:S, huge:M, endless)."""
        kind, _, arg = fault.partition(":")
        data = json.dumps(payload).encode()
        if kind == "cut":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data[:len(data) // 2])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(2)  # socket.SHUT_RDWR: the client reads a body cut short
            return
        pad = {"drip": 10_000, "huge": int(float(arg or 0) * (1 << 20))}.get(kind, 1 << 62)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(pad + len(data)))
        self.end_headers()
        try:
            if kind == "drip":
                for _ in range(pad):
                    self.wfile.write(b" ")
                    self.wfile.flush()
                    time.sleep(float(arg))
            else:
                block, sent = b" " * (1 << 20), 0
                while sent < pad:
                    self.wfile.write(block[:min(len(block), pad - sent)])
                    sent += len(block)
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up, as it should
            pass

    def _body(self) -> dict:
        length = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(length) or b"{}")

    def do_GET(self):
        if self.path == "/_log":
            with STATE.lock:
                return self._send(200, {"requests": STATE.log, "max_in_flight": STATE.max_in_flight,
                                        "in_flight": STATE.in_flight})
        if self.path == "/v1/models":
            advertised = {"max_model_len": STATE.context} if getattr(STATE, "context", None) else {}
            return self._send(200, {"object": "list", "data": [{"id": "fake", "object": "model", **advertised}]})
        self._send(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self):
        body = self._body()
        if self.path == "/_control":
            with STATE.lock:
                if body.get("reset"):
                    STATE.log.clear()
                    STATE.max_in_flight = 0
                    STATE.faults, STATE.mode, STATE.delay, STATE.reply = [], "echo", 0.0, DEFAULT_REPLY
                STATE.mode = body.get("mode", STATE.mode)
                STATE.faults = list(body.get("faults", STATE.faults))
                STATE.delay = float(body.get("delay", STATE.delay))
                STATE.reply = body.get("reply", STATE.reply)
                STATE.context = body.get("context", None if body.get("reset") else getattr(STATE, "context", None))
                STATE.refuse = body.get("refuse", None if body.get("reset") else STATE.refuse)
                STATE.limit = body.get("limit", None if body.get("reset") else getattr(STATE, "limit", None))
            return self._send(200, {"ok": True})
        routes = {"/v1/completions": completion, "/v1/chat/completions": chat}
        if self.path not in routes:
            return self._send(404, {"error": {"message": f"no route {self.path}"}})
        with STATE.lock:
            STATE.log.append({"path": self.path, "body": body, "authorization": self.headers.get("Authorization")})
            STATE.in_flight += 1
            STATE.max_in_flight = max(STATE.max_in_flight, STATE.in_flight)
            fault = STATE.faults.pop(0) if STATE.faults else None
            delay = STATE.delay
        try:
            if delay:
                time.sleep(delay)
            if fault == "pass":
                fault = None
            asked = requested(body)
            if getattr(STATE, "limit", None) and asked > STATE.limit:  # as llama-cpp-python words it, not advertised
                status, headers = 400, None
                payload = {"error": {"message": f"This model's maximum context length is {STATE.limit} tokens. "
                                                f"However, you requested {asked} tokens. Please reduce the length "
                                                "of the messages or completion.", "type": "invalid_request_error"}}
            elif STATE.refuse and STATE.refuse in json.dumps(body.get("prompt") or body.get("messages")):
                status, headers = 400, None
                payload = {"error": {"message": "This model's maximum context length is 2048 tokens",
                                     "type": "invalid_request_error"}}
            elif fault and fault.split(":")[0] in ("drip", "huge", "endless", "cut"):
                return self._send_unbounded(fault, routes[self.path](body)[1])
            elif fault and fault.startswith("sleep:"):
                time.sleep(float(fault.split(":", 1)[1]))
                status, payload, headers = routes[self.path](body) + (None,)
            elif fault:
                status = int(fault)
                payload = {"error": {"message": f"injected {status}", "type": "server_error"}}
                if status == 401:  # as real servers do: the refused key, echoed back
                    key = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
                    payload = {"error": {"message": f"Incorrect API key provided: {key}", "type": "invalid_api_key"}}
                headers = {"Retry-After": "0"} if status == 429 else None
            else:
                status, payload, headers = routes[self.path](body) + (None,)
            if STATE.mode == "wrongtypes" and status == 200:
                payload = _mangled(payload)
        finally:
            with STATE.lock:  # done before answering, so the client's next request never overlaps this one
                STATE.in_flight -= 1
        try:
            self._send(status, payload, headers)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout test)
            pass


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    print(f"PORT {server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main(sys.argv[1:])
