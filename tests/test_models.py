"""The model layer: resolve, the Generator contract (causal and seq2seq), cross-encoders,
encoders, `cq models`, and the multi-process stream under accelerate."""
import math
import os
import shutil
import subprocess
import sys

import pytest

from cqtools.cli import cli
from cqtools.errors import ResourceError
from cqtools.models import resolve
from cqtools.models.load import load_cross_encoder, load_encoder, load_generator

from .conftest import ROOT, jsonl, parse_jsonl
from .conftest_models import (MINILM, READER, bm25_index, generator, retrieved, tiny_cross_encoder,  # noqa: F401
                              tiny_seq2seq)


def test_unknown_model_names_what_to_do():
    with pytest.raises(ResourceError, match="pass a local directory"):
        resolve("no-such-org/no-such-model", announce=False)


def test_importing_models_does_not_import_torch():
    code = "import sys, cqtools.models, cqtools.cli.answer, cqtools.cli.rerank; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.stdout.strip() == "False", out.stderr


def test_cq_models_lists_every_role(runner):
    result = runner.invoke(cli, ["models", "--json"])
    assert result.exit_code == 0, result.stderr
    rows = {r["role"]: r for r in parse_jsonl(result.stdout)}
    assert set(rows) >= {"encoder", "reranker", "reader", "detector", "generator"}
    assert rows["reranker"]["model"] == "cross-encoder/ms-marco-MiniLM-L-12-v2"
    assert all(r["usable"] and r["source"] for r in rows.values())


def test_cq_models_unknown_model_exits_1(runner):
    result = runner.invoke(cli, ["models", "--model", "no-such-org/no-such-model"])
    assert result.exit_code == 1
    assert result.stderr.startswith("cq models: error: model 'no-such-org/no-such-model' not found")
    assert result.stderr.count("\n") == 1


@pytest.mark.parametrize("command", [["answer"], ["rerank"], ["answer", "--mode", "cq"]])
def test_unknown_model_in_a_stage_is_one_line(runner, command):
    result = runner.invoke(cli, [*command, "--model", "no-such-org/no-such-model"], input="")
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize("offline", ["1", None])
def test_an_unresolvable_hub_is_asked_once_not_retried(runner, monkeypatch, offline):
    """Without DNS the hub cannot answer: huggingface_hub retried each request five times (23 s and six stderr
    lines per model, the test above took 24 s). cq looks the hub's host up once per process and, where it does
    not resolve, treats the hub as unreachable at once; under HF_HUB_OFFLINE=1 it does not look at all. Only
    cq's own lookups are counted: huggingface_hub looks its host up too (its user-agent registry, once a
    process), which is not a retry (issue 57 item 16: the count was 0 or 2 depending on the environment)."""
    import importlib
    import socket
    import sys

    resolve = importlib.import_module("cqtools.models.resolve")  # the module (cqtools.models.resolve is also a function)
    lookups = []

    def no_dns(host, *args, **kwargs):
        frame = sys._getframe(1)
        while frame is not None and frame.f_code is not resolve._hub_resolves.__wrapped__.__code__:
            frame = frame.f_back
        if frame is not None:
            lookups.append(host)
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    if offline:
        monkeypatch.setenv("HF_HUB_OFFLINE", offline)
    else:
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    resolve._hub_resolves.cache_clear()
    monkeypatch.setattr(socket, "getaddrinfo", no_dns)
    try:
        for command in (["answer"], ["rerank"]):
            result = runner.invoke(cli, [*command, "--model", "no-such-org/no-such-model"], input="")
            assert result.exit_code == 1 and result.stderr.count("\n") == 1, result.stderr
            assert "hub is unreachable" in result.stderr and "Retrying" not in result.stderr
    finally:
        resolve._hub_resolves.cache_clear()
    assert len(lookups) == (0 if offline else 1), lookups


@pytest.mark.slow  # the first load converts the GGUF copy (~30 s), then 0.3 s
def test_generator_is_cached_and_describes_itself(generator):
    assert load_generator(READER, "cpu") is generator
    assert generator.info["model"] == READER and generator.info["device"] == "cpu"
    assert generator.info["source"].startswith(("offline:", "hf-cache", "hub", "local"))
    assert generator.has_chat


@pytest.mark.slow  # the first load converts the GGUF copy (~30 s), then 0.3 s
def test_generate_is_greedy_and_batch_independent(generator):
    prompts = ["What is the capital of France? Reply with one word.", "Name a primary colour."]
    generator.batch_size = 2
    both = generator.generate(prompts, max_new_tokens=6)
    generator.batch_size = 1
    alone = generator.generate(prompts, max_new_tokens=6)
    generator.batch_size = 16
    assert both == alone
    assert "Paris" in both[0]
    assert "Paris" not in generator.generate(prompts[:1], max_new_tokens=8, stop=["Paris"])[0]


@pytest.mark.slow  # the first load converts the GGUF copy (~30 s), then 0.3 s
def test_score_with_prefix_cache_equals_full_pass(generator):
    prefix = "Q: Is the sky blue?\nA: True\n\nQ: Is fire cold?\nA: False\n\n"
    prompts = ["Q: Is water wet?\nA:", "Q: Is Paris in Spain?\nA:", "Q: Is ice cold?\nA:"]
    conts = [" True", " False", " True"]
    cached = generator.score(prompts, conts, prefix=prefix)
    full = generator._score_causal(prompts, conts, prefix, use_cache=False)
    assert cached == pytest.approx(full, abs=1e-3)
    assert all(s < 0 for s in cached)
    # a batch of one gives the same scores as a batch of three
    assert generator.score(prompts[:1], conts[:1], prefix=prefix)[0] == pytest.approx(cached[0], abs=1e-3)


def test_seq2seq_backend_on_a_tiny_local_model(tiny_seq2seq):
    gen = load_generator(tiny_seq2seq, "cpu")
    assert gen.kind == "seq2seq" and gen.info["source"] == "local"
    out = gen.generate(["question: who?", "a longer question: who played the joker?"], max_new_tokens=4)
    assert len(out) == 2 and all(isinstance(o, str) for o in out)
    assert out == gen.generate(["question: who?", "a longer question: who played the joker?"], max_new_tokens=4)
    scores = gen.score(["who played the joker?", "capital?"], ["heath ledger", "paris"], prefix="context: ")
    assert all(math.isfinite(s) and s < 0 for s in scores)
    assert gen.score(["capital?"], ["paris"], prefix="context: ")[0] == pytest.approx(scores[1], abs=1e-4)


def test_kind_causal_on_a_seq2seq_model_is_an_error(tiny_seq2seq):
    with pytest.raises(ResourceError, match="as a causal LM"):
        load_generator(tiny_seq2seq, "cpu", kind="causal")


def test_hf_cross_encoder_returns_raw_logits(tiny_cross_encoder):
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    ce = load_cross_encoder(tiny_cross_encoder, "cpu")
    pairs = [("who played the joker", "Heath Ledger played the Joker."), ("capital", "Paris")]
    scores = ce.predict(pairs)
    tok = AutoTokenizer.from_pretrained(tiny_cross_encoder)
    model = AutoModelForSequenceClassification.from_pretrained(tiny_cross_encoder).eval()
    with torch.inference_mode():
        logits = model(**tok([p[0] for p in pairs], [p[1] for p in pairs], padding=True, return_tensors="pt")).logits
    assert scores == pytest.approx(logits[:, 0].tolist(), abs=1e-4)


@pytest.mark.heavy(reason="loads MiniLM and bge-small")
def test_offline_encoders():
    import numpy as np

    st = load_encoder(MINILM, "cpu")
    vectors = st.encode(["who played the joker", "Joker actor"], normalize_embeddings=True)
    assert vectors.shape == (2, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    bge = load_encoder("BAAI/bge-small-en-v1.5", "cpu")
    v = bge.encode(["who played the joker", "Joker actor", "tax law in France"], normalize_embeddings=True)
    assert v.shape == (3, 384) and float(v[0] @ v[1]) > float(v[0] @ v[2])


# --- several processes -------------------------------------------------------------------------

def _accelerate() -> str:
    path = os.path.join(os.path.dirname(sys.executable), "accelerate")
    return path if os.path.exists(path) else shutil.which("accelerate")


@pytest.mark.slow
@pytest.mark.parametrize("launch", [["--cpu", "--num_processes", "2"], ["--multi_gpu", "--num_processes", "2"]])
def test_order_and_ids_under_accelerate_launch(retrieved, tmp_path, launch):
    """`--cpu --num_processes 2` starts one process on a machine without MPI (accelerate's CPU
    multi-process needs mpirun); `--multi_gpu --num_processes 2` on a GPU-less machine starts two
    torchrun processes on CPU (gloo): the output must equal a single process's, byte for byte."""
    source = tmp_path / "in.jsonl"
    source.write_text(jsonl(retrieved[:9]))
    command = ["-m", "cqtools", "rerank", "--top", "3", "--batch-size", "2"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "CQ_ORT_THREADS": "1"}
    with open(source) as fh:
        single = subprocess.run([sys.executable, *command], stdin=fh, capture_output=True, cwd=ROOT, env=env)
    assert single.returncode == 0, single.stderr.decode()[-2000:]
    with open(source) as fh:
        multi = subprocess.run([_accelerate(), "launch", *launch, "--num_machines", "1", "--mixed_precision", "no",
                                "--dynamo_backend", "no", *command], stdin=fh, capture_output=True, cwd=ROOT,
                               env=env, timeout=300)
    assert multi.returncode == 0, multi.stderr.decode()[-2000:]
    assert multi.stdout == single.stdout
    assert [r["id"] for r in parse_jsonl(multi.stdout.decode())] == [r["id"] for r in retrieved[:9]]
    if "--multi_gpu" in launch:
        assert "rerank: 2 processes" in multi.stderr.decode()
