"""`cq train reader` and `cq train detect` start from the offline ms-marco MiniLM-L-12 cross-encoder (issue 56 item 1:
an encoder already trained on question-passage relevance): its INT8 ONNX graph is dequantised once to a float32
copy, whose 1-logit relevance head gives way to the trainer's head (span start/end; 2 labels). One step each."""
import json
import os

import pytest

from cqtools.cli import cli

from .conftest import FIXTURES
from .test_train_resume import with_near_passages

CROSS_ENCODER = "cross-encoder/ms-marco-MiniLM-L-12-v2"
pytestmark = pytest.mark.heavy(reason="loads and trains the 12-layer cross-encoder, one step a trainer")


def _report(out) -> dict:
    with open(os.path.join(out, "cq_train.json")) as fh:
        return json.load(fh)


def test_the_reader_trains_from_the_cross_encoder_and_answers(runner, tmp_path):
    records = with_near_passages(tmp_path / "retrieved.jsonl")
    out = str(tmp_path / "reader")
    done = runner.invoke(cli, ["train", "reader", "--model", CROSS_ENCODER, "--train", records, "--holdout", "3",
                               "--batch-size", "4", "--max-steps", "1", "--max-length", "128", "--seed", "0", "-q",
                               "--out", out], env={"CQ_OFFLINE": "1"})
    assert done.exit_code == 0, done.stderr
    saved = _report(out)
    assert saved["steps"] == 1 and CROSS_ENCODER in saved["base_model"] and "ONNX" in saved["base_model"]
    with open(os.path.join(out, "config.json")) as fh:
        config = json.load(fh)
    assert config["num_hidden_layers"] == 12 and config["architectures"] == ["BertForQuestionAnswering"]
    line = open(records).readline()
    answered = runner.invoke(cli, ["answer", "--mode", "single", "--model", out, "-q"], input=line)
    assert answered.exit_code == 0, answered.stderr
    assert "answers" in json.loads(answered.stdout)


def test_the_classifier_trains_from_the_cross_encoder(runner, tmp_path):
    out = str(tmp_path / "detect")
    questions = str(FIXTURES / "questions.jsonl")
    done = runner.invoke(cli, ["train", "detect", "--model", CROSS_ENCODER, "--train", questions, "--dev", questions,
                               "--dev-limit", "4", "--limit", "8", "--max-steps", "1", "--batch-size", "8",
                               "--passages", "0", "--seed", "0", "-q", "--out", out], env={"CQ_OFFLINE": "1"})
    assert done.exit_code == 0, done.stderr
    with open(os.path.join(out, "config.json")) as fh:
        config = json.load(fh)
    assert config["num_labels"] == 2 if "num_labels" in config else len(config["id2label"]) == 2
    assert config["num_hidden_layers"] == 12 and CROSS_ENCODER in _report(out)["base_model"]
    detected = runner.invoke(cli, ["detect", "--method", "classifier", "--model", out, "-q"],
                             input='{"id": "q", "question": "Who played the Joker?"}\n')
    assert detected.exit_code == 0, detected.stderr
    assert 0.0 <= json.loads(detected.stdout)["ambiguity"]["score"] <= 1.0
