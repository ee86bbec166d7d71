"""The grid on a served model, live (issue 35 item 7): `make compare`'s CLAM slice (`make exp-clam N=1`: seven
cells, every one of which calls the LLM) with MODEL_LLM=openai:NAME and API_BASE pointing at tests/openai_server.py.
Every LLM call of every cell reaches that server and no local language model is loaded. A slice, not the whole smoke
grid: the CLAM cells are the ones whose every stage (detect, gen-cq, oracle, answer) is the LLM; the whole grid
takes tens of minutes on two cores, and the dry run (tests/test_docs_run.py) checks that no cell of it names the
local LLM."""
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
LOCAL_NON_LLM = ("cqtools/shipped/detect", "cqtools/shipped/reader", "cross-encoder/ms-marco-MiniLM-L-12-v2")
LLM_STAGES = ("detect", "gen_cq", "oracle", "answer")


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


def test_the_clam_cells_of_the_grid_send_every_llm_call_to_the_served_model(tmp_path, shared_data, server):
    url, port = server
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "CQ_CONCURRENCY", "MAKEFLAGS",
                                                             "CQ_API_BASE", "CQ_MODEL_DETECT", "CQ_MODEL_GEN_CQ")}
    env.update(CQ_CACHE=str(tmp_path / "cache"), CQ_API_CACHE="0", CQ_SHARED_DATA=str(shared_data))
    work = tmp_path / "w"
    run = subprocess.run(["make", "-C", str(ROOT), "exp-clam", "N=1", "SMOKE_JOBS=1", "GEN_CACHE=", f"WORK={work}",
                          f"CQ_MODELS={tmp_path}/models", f"DATA={shared_data}", "MODEL_LLM=openai:fake",
                          f"API_BASE={url}", "API_CONCURRENCY=2", "CHECK_CHECKOUT=0"],
                         capture_output=True, text=True, timeout=1800, env=env)
    log = run.stdout + run.stderr
    assert run.returncode == 0, log[-3000:]
    loads = re.findall(r"^cq: model (\S+) (.*)$", log, flags=re.MULTILINE)
    served = [m for m, how in loads if m == "openai:fake"]
    assert all(f"via the OpenAI-compatible API at {url} (2 requests at once)" in how
               for m, how in loads if m == "openai:fake")
    assert {m for m, _ in loads} - {"openai:fake"} <= set(LOCAL_NON_LLM), loads  # no local LLM loaded
    cells = sorted(p for p in work.glob("exp-*/clam.*.jsonl") if p.name.count(".") == 2)
    names = {p.name[:-len(".jsonl")] for p in cells}
    assert {"clam.never", "clam.always", "clam.clam", "clam.prompting", "clam.classifier", "clam.fromdqs",
            "clam.openbook"} <= names
    llm_stages = 0
    for path in cells:
        for line in path.read_text().splitlines():
            meta = json.loads(line).get("meta", {})
            for stage in LLM_STAGES:
                info = meta.get(stage)
                if not isinstance(info, dict) or info.get("model") is None:
                    continue
                if info["model"] in LOCAL_NON_LLM:
                    continue
                assert (info["model"], info.get("kind"), info.get("api_base")) == ("openai:fake", "api", url), \
                    (path.name, stage, info)
                llm_stages += 1
    sent = server_requests(port)
    # without the generation and response caches, every LLM stage command sent its own requests to the server
    assert llm_stages and len(served) >= 10 and len(sent) >= len(served), (len(served), len(sent))
    assert {r["path"] for r in sent} <= {"/v1/completions", "/v1/chat/completions"}
