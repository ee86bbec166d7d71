"""The grid on a served model, live (issue 35 item 7): the whole smoke grid (`make compare N=5`: 147 cells) with
MODEL_LLM=openai:NAME and API_BASE pointing at tests/openai_server.py. Every LLM stage of every cell names the served
model at that address, the requests reach the server, and no local language model is loaded (2 min 10 s on a quiet
2-core machine: the server answers at once)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from .conftest import ROOT

pytestmark = [pytest.mark.slow, pytest.mark.heavy(reason="runs a slice of make compare against a local server")]

# Models a CLAM cell may load locally: none is a language model (the reranker of the shared prefix, and the
# classifier and reader of the cells that use them instead of the LLM).
LOCAL_NON_LLM = ("cqtools/shipped/detect", "cqtools/shipped/reader", "cross-encoder/ms-marco-MiniLM-L-12-v2",
                 "sentence-transformers/all-MiniLM-L6-v2")
MODEL_KEYS = ("model", "generator", "qd_model")  # where a stage's meta names the model it called


@pytest.fixture()
def server():
    proc = subprocess.Popen([sys.executable, "-m", "tests.openai_server"], cwd=ROOT, stdout=subprocess.PIPE,
                            text=True)
    port = int(proc.stdout.readline().split()[1])
    yield f"http://127.0.0.1:{port}/v1", port
    proc.terminate()
    proc.wait(timeout=10)


def server_requests(port: int) -> list[dict]:
    from urllib.request import urlopen

    with urlopen(f"http://127.0.0.1:{port}/_log", timeout=10) as reply:
        return json.loads(reply.read())["requests"]


def _served_notes(path, url) -> int:
    """How many stage notes of ``path``'s records name the served model; any other language model fails."""
    served = 0
    for line in path.read_text().splitlines():
        for stage, info in json.loads(line).get("meta", {}).items():
            for key in MODEL_KEYS if isinstance(info, dict) else ():
                model = info.get(key)
                if not isinstance(model, str) or model in LOCAL_NON_LLM:
                    continue
                where = (info.get("kind"), info.get("api_base"))  # a note naming another stage's model has none
                assert model == "openai:fake" and where in (("api", url), (None, None)), (path.name, stage, key, info)
                served += 1
    return served


def test_the_smoke_grid_sends_every_llm_call_to_the_served_model(tmp_path, shared_data, server):
    url, port = server
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "CQ_CONCURRENCY", "MAKEFLAGS",
                                                             "CQ_API_BASE", "CQ_MODEL_DETECT", "CQ_MODEL_GEN_CQ")}
    env.update(CQ_CACHE=str(tmp_path / "cache"), CQ_API_CACHE="0", CQ_SHARED_DATA=str(shared_data))
    work = tmp_path / "w"
    run = subprocess.run(["make", "-C", str(ROOT), "compare", "N=5", "GEN_CACHE=", f"WORK={work}",
                          f"CQ_MODELS={tmp_path}/models", f"DATA={shared_data}", "MODEL_LLM=openai:fake",
                          f"API_BASE={url}", "API_CONCURRENCY=2", "CHECK_CHECKOUT=0",
                          f"RESULTS={tmp_path}/results.md"], capture_output=True, text=True, timeout=3600, env=env)
    assert run.returncode == 0, (run.stdout + run.stderr)[-3000:]
    log = "".join(p.read_text() for p in work.glob("exp-*/*.log"))  # each cell's whole stderr (bench/grid/cell.py)
    loads = re.findall(r"cq: model (\S+) (.*)$", log, flags=re.MULTILINE)
    assert {m for m, _ in loads} - {"openai:fake"} <= set(LOCAL_NON_LLM), loads  # no local LLM loaded
    assert all(f"via the OpenAI-compatible API at {url}" in how for m, how in loads if m == "openai:fake")
    served = {p.name: n for p in sorted(work.glob("exp-*/*.jsonl")) if (n := _served_notes(p, url))}
    # every family of LLM cells: CQs, detection, answering, DQs, REFUEL, ToC, CLAM
    for family in ("ambignq.cq.llm", "ambignq.det.llm", "ambignq.cqa.llm", "ambignq.qd", "ambignq.refuel",
                   "ambignq.disambigfirst", "asqa.toc", "asqa.dq", "clam."):
        assert any(name.startswith(family) for name in served), (family, sorted(served))
    sent = server_requests(port)
    assert len(sent) >= sum(served.values()) // 10 > 0 and \
        {r["path"] for r in sent} <= {"/v1/completions", "/v1/chat/completions"}, (len(sent), served)
