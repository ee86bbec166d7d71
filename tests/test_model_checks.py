"""A model directory is checked for what its format needs before anything loads it (issue 36, item 3
and the model parts of item 11): no tokenizer, cut, random or changed weights, a $CQ_MODELS model that
is not one, compacting a model over itself, and an --out that cannot be written are one-line errors."""
import os
import shutil

import pytest

from cqtools.cli import cli

from .conftest import ROOT, jsonl

SHIPPED = ROOT / "cqtools" / "shipped" / "detect"
QUESTION = jsonl([{"id": "q1", "question": "Who played the Joker?"}])


@pytest.fixture
def detect_copy(tmp_path):
    target = tmp_path / "detect"
    shutil.copytree(SHIPPED, target)
    return target


def _classify(runner, model, **env):
    return runner.invoke(cli, ["detect", "--method", "classifier", "-q", "--model", str(model)], input=QUESTION, env=env)


def _one_line(result, said):
    assert result.exit_code == 1 and said in result.stderr, result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr and result.stdout == ""


def test_a_model_directory_without_a_tokenizer_is_refused(runner, detect_copy):
    os.remove(detect_copy / "tokenizer.json")  # tokenizer_config.json stays: transformers would build a [UNK] one
    _one_line(_classify(runner, detect_copy), "has no tokenizer")


def test_cut_compact_weights_are_a_one_line_error(runner, detect_copy):
    weights = detect_copy / "model.int8.safetensors"
    os.truncate(weights, os.path.getsize(weights) // 2)
    _one_line(_classify(runner, detect_copy), "cut short or damaged")


def test_changed_compact_weights_fail_their_checksum(runner, detect_copy):
    weights = detect_copy / "model.int8.safetensors"
    with open(weights, "r+b") as fh:  # one flipped bit in the last tensor's data
        fh.seek(-100, os.SEEK_END)
        byte = fh.read(1)
        fh.seek(-100, os.SEEK_END)
        fh.write(bytes([byte[0] ^ 1]))
    _one_line(_classify(runner, detect_copy), "do not match their recorded sha256")


def test_random_full_precision_weights_are_a_one_line_error(runner, tiny_classifier, tmp_path):
    target = tmp_path / "clf"
    shutil.copytree(tiny_classifier, target)
    (target / "model.safetensors").write_bytes(os.urandom(4096))
    _one_line(_classify(runner, target), "cannot read the weights")


def test_a_cq_models_detect_that_is_not_a_model_is_not_passed_over(runner, tmp_path):
    (tmp_path / "detect").mkdir()
    shutil.copy(SHIPPED / "tokenizer.json", tmp_path / "detect")  # no config.json
    result = runner.invoke(cli, ["detect"], input=QUESTION, env={"CQ_MODELS": str(tmp_path)})
    _one_line(result, f"{tmp_path / 'detect'} is not a `cq train detect` model")


def test_compacting_a_model_over_itself_is_refused(runner, tiny_classifier, tmp_path):
    target = tmp_path / "clf"
    shutil.copytree(tiny_classifier, target)
    (target / "cq_train.json").write_text("{}")  # a `cq train` model, as `cq train detect` writes it
    result = runner.invoke(cli, ["train", "compact", str(target), "--out", str(target), "--overwrite"])
    _one_line(result, "is SRC itself")
    assert (target / "model.safetensors").exists()


def test_compacting_a_model_into_the_folder_that_holds_it_is_refused(runner, tiny_classifier, tmp_path):
    """--out a model folder that holds SRC: the swap would delete SRC with the old model it replaces."""
    outer = tmp_path / "models"
    shutil.copytree(tiny_classifier, outer)
    (outer / "cq_train.json").write_text("{}")  # a `cq train` model, so --overwrite would replace it
    inner = outer / "detect-full"
    shutil.copytree(tiny_classifier, inner)
    result = runner.invoke(cli, ["train", "compact", str(inner), "--out", str(outer), "--overwrite"])
    _one_line(result, "holds SRC")
    assert (inner / "model.safetensors").exists()


def test_compacting_cut_weights_or_into_an_unwritable_place_is_a_one_line_error(runner, tiny_classifier, tmp_path):
    target = tmp_path / "clf"
    shutil.copytree(tiny_classifier, target)
    unwritable = runner.invoke(cli, ["train", "compact", str(target), "--out", "/proc/cq-test/model"])
    _one_line(unwritable, "cannot write --out /proc/cq-test/model")
    os.truncate(target / "model.safetensors", 1000)
    cut = runner.invoke(cli, ["train", "compact", str(target), "--out", str(tmp_path / "small")])
    _one_line(cut, "cut short or damaged")
