"""Shared test fixtures. The JVM starts once per process and models load once: fixtures that
need them are session-scoped and shared by every test module."""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
SHARED = Path(os.environ.get("CQ_SHARED_DATA", ROOT.parent / "shared" / "data"))

# Models installed on this machine ($CQ_MODELS: `make models` exports work/models) change cq's defaults
# (cq answer's reader); every test, and every cq process a test starts, sees an empty directory.
os.environ["CQ_MODELS"] = tempfile.mkdtemp(prefix="cq-test-models-")
os.environ.pop("CQ_GEN_CACHE", None)  # a user's generation cache (cqtools/models/gencache.py) never serves a test


# The test tiers (`make test-fast`, `make test`, `make test-slow`): which tests are heavy, and the
# fast tier's guards against the JVM and real models (tests/tiers.py).
from .tiers import (pytest_collection_modifyitems, pytest_configure, pytest_runtest_call,  # noqa: E402,F401
                    pytest_runtest_setup)



def on_a_terminal(cmd: list[str], env: dict | None = None, timeout: int = 300) -> tuple[int, bytes]:
    """Run ``cmd`` with stderr on a 120-column pseudo-terminal (stdout piped away); (exit code, what the
    terminal showed)."""
    import fcntl
    import pty
    import struct
    import subprocess
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))  # a new pty is 0 columns wide
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=slave, env=env or dict(os.environ))
    os.close(slave)
    shown = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        shown += chunk
    os.close(master)
    return proc.wait(timeout=timeout), shown


def install_plugin(name: str, target: Path) -> str:
    """pip-install the plugin package tests/plugins/NAME into ``target`` (no index, no dependencies): put it on
    PYTHONPATH and cq finds it through its entry points."""
    import subprocess

    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index",
                    "--target", str(target), str(ROOT / "tests" / "plugins" / name)], check=True, capture_output=True)
    return str(target)


def jsonl(records) -> str:
    return "".join(orjson.dumps(r).decode() + "\n" for r in records)


def parse_jsonl(text: str) -> list[dict]:
    return [orjson.loads(line) for line in text.splitlines() if line.strip()]


@pytest.fixture(scope="session")
def questions() -> list[dict]:
    return parse_jsonl((FIXTURES / "questions.jsonl").read_text())


@pytest.fixture(scope="session")
def questions_text() -> str:
    return (FIXTURES / "questions.jsonl").read_text()


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture(scope="session")
def fixture_index(tmp_path_factory) -> str:
    """BM25 + dense index of fixtures/corpus.jsonl, built once per test session."""
    from cqtools.cli import cli

    out = tmp_path_factory.mktemp("index") / "fx"
    result = CliRunner().invoke(cli, ["index", "--corpus", str(FIXTURES / "corpus.jsonl"), "--out", str(out),
                                      "--dense", "--threads", "2"])
    assert result.exit_code == 0, result.output
    return str(out)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED.is_dir():
        pytest.skip(f"real data not found at {SHARED} (set CQ_SHARED_DATA); skipping")
    return SHARED


def _save_tiny_model(out: str, build) -> str:
    """A randomly initialised tiny model with the MiniLM tokenizer, built locally (never downloaded).
    ``build(tokenizer)`` returns the model; seeded so every run builds the same weights."""
    import torch
    from transformers import AutoTokenizer

    from cqtools.models.resolve import resolve
    from cqtools.train.loop import keep_model_inputs

    tok = AutoTokenizer.from_pretrained(resolve("sentence-transformers/all-MiniLM-L6-v2", announce=False).path)
    torch.manual_seed(0)
    model = build(tok)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    keep_model_inputs(out, model)
    return out


@pytest.fixture(scope="session")
def tiny_seq2seq(tmp_path_factory) -> str:
    """A random, tiny 2-layer T5 (offline stand-in for a fine-tuned seq2seq generator). T5, not BART:
    transformers can also load a BART as a causal LM, and a test needs a model it refuses."""
    from transformers import T5Config, T5ForConditionalGeneration

    return _save_tiny_model(str(tmp_path_factory.mktemp("tinyt5")), lambda tok: T5ForConditionalGeneration(
        T5Config(vocab_size=len(tok), d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4,
                 pad_token_id=tok.pad_token_id, eos_token_id=tok.sep_token_id,
                 decoder_start_token_id=tok.pad_token_id)))


@pytest.fixture(scope="session")
def tiny_classifier(tmp_path_factory) -> str:
    """A random, tiny 2-label BERT: what `cq train detect` writes, without the training."""
    from transformers import BertConfig, BertForSequenceClassification

    return _save_tiny_model(str(tmp_path_factory.mktemp("tinyclf")), lambda tok: BertForSequenceClassification(
        BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                   intermediate_size=64, num_labels=2)))


@pytest.fixture(scope="session")
def tiny_cross_encoder(tmp_path_factory) -> str:
    """A random, tiny 1-label BERT in float32: a cross-encoder whose scores do not depend on the CPU's
    instruction set (the offline INT8 reranker's do: onnxruntime picks int8 kernels by AVX2/AVX-512)."""
    from transformers import BertConfig, BertForSequenceClassification

    return _save_tiny_model(str(tmp_path_factory.mktemp("tinyce")), lambda tok: BertForSequenceClassification(
        BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                   intermediate_size=64, num_labels=1)))


@pytest.fixture(scope="session")
def tiny_causal(tmp_path_factory) -> str:
    """A random, tiny Llama (no eos token: [SEP] ends the CQ)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    return _save_tiny_model(str(tmp_path_factory.mktemp("tinyllama")), lambda tok: LlamaForCausalLM(
        LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                    num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=1024,
                    pad_token_id=tok.pad_token_id, bos_token_id=tok.cls_token_id, eos_token_id=tok.sep_token_id)))


@pytest.fixture(scope="module")
def server():
    """tests/openai_server.py in its own process (one per test module): an OpenAI-compatible server
    that logs every request it is sent."""
    from .test_openai_backend import Server

    srv = Server([sys.executable, "-m", "tests.openai_server"])
    yield srv
    srv.stop()
