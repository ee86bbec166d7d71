"""`cq train` into a full disk (issue 57 item 9): one line that says nothing was lost, not a SafetensorError
traceback; the model already in --out stays byte for byte, and no partly written copy is left beside it."""
import hashlib
import os
import shutil
import subprocess

import pytest

from cqtools.cli import cli

from .conftest import FIXTURES

QUESTIONS = str(FIXTURES / "questions.jsonl")
TRAIN = ["train", "detect", "--train", QUESTIONS, "--dev", QUESTIONS, "--dev-limit", "4", "--limit", "8", "--max-steps", "1", "--batch-size", "8", "--seed", "1"]


def _digest(folder) -> dict:
    return {name: hashlib.sha256((folder / name).read_bytes()).hexdigest() for name in sorted(os.listdir(folder))}


def _one_line_nothing_lost(result):
    assert result.exit_code == 1, result.stderr
    errors = [line for line in result.stderr.splitlines() if "error:" in line]
    assert "Traceback" not in result.stderr and len(errors) == 1, result.stderr
    assert result.stderr.rstrip().endswith(errors[0])  # the last line says it
    assert "no space left" in errors[0] and "nothing was lost" in errors[0]


def test_the_writers_messages_are_known_as_a_full_disk():
    from safetensors import SafetensorError

    from cqtools.outputs import disk_full

    assert disk_full(OSError(28, "No space left on device"))
    assert disk_full(SafetensorError('Error while serializing: IoError(Os { code: 28, kind: StorageFull, '
                                     'message: "No space left on device" })'))
    try:
        try:
            raise OSError(28, "No space left on device")
        except OSError as err:
            raise RuntimeError("saving failed") from err
    except RuntimeError as err:
        assert disk_full(err)
    assert not disk_full(OSError(13, "Permission denied")) and not disk_full(ValueError("bad value"))


@pytest.mark.heavy(reason="trains MiniLM-L6 one step, twice")
def test_a_full_disk_while_saving_is_one_line_and_the_old_model_stays(runner, tmp_path, monkeypatch):
    from safetensors import SafetensorError
    import transformers.modeling_utils

    out = tmp_path / "model"
    assert runner.invoke(cli, [*TRAIN, "--out", str(out)]).exit_code == 0
    before = _digest(out)

    def full(*args, **kwargs):
        raise SafetensorError('Error while serializing: IoError(Os { code: 28, kind: StorageFull, message: '
                              '"No space left on device" })')

    monkeypatch.setattr(transformers.modeling_utils, "safe_save_file", full)  # where save_pretrained writes
    result = runner.invoke(cli, [*TRAIN, "--out", str(out), "--overwrite"])
    _one_line_nothing_lost(result)
    assert "untouched" in result.stderr
    assert _digest(out) == before
    assert sorted(os.listdir(tmp_path)) == ["model"]  # no .model.training-* left


@pytest.mark.heavy(reason="trains MiniLM-L6 one step")
@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("mount") is None, reason="mounting a tmpfs needs root")
def test_a_real_full_disk(runner, tmp_path):
    """A 2 MB tmpfs: the classifier's weights (about 90 MB) cannot fit."""
    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(disk)], capture_output=True).returncode:
        pytest.skip("this machine refuses mount")
    try:
        result = runner.invoke(cli, [*TRAIN, "--out", str(disk / "model")])
        _one_line_nothing_lost(result)
        assert os.listdir(disk) == []
    finally:
        subprocess.run(["umount", str(disk)], capture_output=True)
