"""Session-scoped fixtures for the model tests: each real model loads once per test process,
the BM25 index of the fixture corpus is built once (the JVM starts once per process).
Imported by tests/test_models*.py, test_rerank.py and test_answer.py."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

from .conftest import FIXTURES, parse_jsonl, tiny_seq2seq  # noqa: F401  (re-exported: one tiny seq2seq)
from .fakes import FakeCrossEncoder  # noqa: F401  (re-exported for test_rerank)

READER = "HuggingFaceTB/SmolLM2-135M-Instruct"
RERANKER = "cross-encoder/ms-marco-MiniLM-L-12-v2"
MINILM = "sentence-transformers/all-MiniLM-L6-v2"


@pytest.fixture(scope="session")
def bm25_index(tmp_path_factory) -> str:
    from cqtools.cli import cli

    out = tmp_path_factory.mktemp("bm25") / "fx"
    result = CliRunner().invoke(cli, ["index", "--corpus", str(FIXTURES / "corpus.jsonl"), "--out", str(out)])
    assert result.exit_code == 0, result.output
    return str(out)


@pytest.fixture(scope="session")
def retrieved(bm25_index) -> list[dict]:
    """Every fixture question with its top 10 BM25 passages."""
    from cqtools.cli import cli

    text = (FIXTURES / "questions.jsonl").read_text()
    result = CliRunner().invoke(cli, ["retrieve", "--index", bm25_index, "--hits", "10", "-q"], input=text)
    assert result.exit_code == 0, result.stderr
    return parse_jsonl(result.stdout)


@pytest.fixture(scope="session")
def generator():
    from cqtools.models.load import load_generator

    return load_generator(READER, "cpu")


@pytest.fixture(scope="session")
def cross_encoder():
    from cqtools.models.load import load_cross_encoder

    return load_cross_encoder(RERANKER, "cpu")


@pytest.fixture(scope="session")
def tiny_cross_encoder(tmp_path_factory) -> str:
    """A randomly initialised 1-label BERT classifier with MiniLM's tokenizer (the HF path)."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    from cqtools.models import resolve

    tokenizer = AutoTokenizer.from_pretrained(resolve(MINILM, announce=False).path)
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=64, num_labels=1)
    torch.manual_seed(0)
    out = tmp_path_factory.mktemp("ce") / "tiny-ce"
    BertForSequenceClassification(config).save_pretrained(out)
    tokenizer.save_pretrained(out)
    return str(out)
