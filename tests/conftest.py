"""Shared test fixtures. The JVM starts once per process and models load once: fixtures that
need them are session-scoped and shared by every test module."""
from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
SHARED = Path(os.environ.get("CQ_SHARED_DATA", ROOT.parent / "shared" / "data"))


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
