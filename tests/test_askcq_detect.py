"""AskCQ's No-Answers classifier (--preset askcq): it reads the question with its passages."""
from __future__ import annotations

import logging

import pytest

from cqtools.cli import cli

from .conftest import FIXTURES, jsonl, parse_jsonl


class LoggingClassifier:
    """Stands in for a `cq train detect` model: logs each input pair, says 0.75."""

    pairs: list = []

    def __init__(self, path, config, device="cpu"):
        self.max_length = 512

    def predict(self, pairs, batch_size=32):
        LoggingClassifier.pairs.extend(pairs)
        return [0.75] * len(pairs)


def test_classifier_reads_the_question_with_its_passages_under_the_preset(runner, monkeypatch, tmp_path):
    from cqtools.stages import detect

    monkeypatch.setattr(detect, "SequenceClassifier", LoggingClassifier)
    LoggingClassifier.pairs = []
    passages = [{"id": f"p{i}", "title": f"T{i}", "text": f"text of passage {i}"} for i in range(8)]
    result = runner.invoke(cli, ["detect", "--preset", "askcq", "--model", str(tmp_path)],
                           input=jsonl([{"id": "q1", "question": "Who played Willy Wonka?", "passages": passages}]))
    assert result.exit_code == 0, result.stderr
    [(question, text)] = LoggingClassifier.pairs
    assert question == "Who played Willy Wonka?"
    assert text == " [SEP] ".join(f"T{i}: text of passage {i}" for i in range(8))  # every passage, in order
    [record] = parse_jsonl(result.stdout)
    assert record["ambiguity"]["method"] == "classifier" and record["meta"]["detect"]["passages"] == 100


@pytest.mark.heavy(reason="trains MiniLM")
def test_training_with_passages_on_records_without_them_says_so(runner, tmp_path, caplog):
    """--passages N over records with no passages trains on the question alone: a warning says so."""
    out = str(tmp_path / "m")
    with caplog.at_level(logging.WARNING, logger="cqtools"):
        result = runner.invoke(cli, ["train", "detect", "--train", str(FIXTURES / "questions.jsonl"), "--holdout", "4",
                                     "--limit", "8", "--max-steps", "0", "--max-length", "16", "--passages", "3",
                                     "--out", out])
    assert result.exit_code == 0, result.stderr
    assert "no training record has passages" in caplog.text
    assert parse_jsonl(result.stdout)[0]["train_with_passages"] == 0
