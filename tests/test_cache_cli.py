"""`cq cache info|clear` (issue 25, item 11): the cache's areas, and clearing them without touching
trained models or data kept under the same folder."""
import orjson
from click.testing import CliRunner

from cqtools.cli import cli


def _lines(text):
    return [orjson.loads(line) for line in text.splitlines()]


def test_info_and_clear_touch_only_the_cache_areas(tmp_path, monkeypatch):
    root = tmp_path / "cqtools"
    (root / "gguf" / "SmolLM2-0123456789ab").mkdir(parents=True)
    (root / "gguf" / "SmolLM2-0123456789ab" / "model.safetensors").write_bytes(b"x" * 100)
    (root / "gguf" / "notes").mkdir()  # not of cq's making: kept
    (root / "gguf" / "notes" / "mine.txt").write_bytes(b"n" * 7)
    (root / "api" / "3f").mkdir(parents=True)
    (root / "api" / "3f" / "3fa9.json").write_bytes(b"y" * 10)
    (root / "api" / "keep.json").write_bytes(b"k")
    (root / "models" / "reader").mkdir(parents=True)
    (root / "models" / "reader" / "model.safetensors").write_bytes(b"m")
    (root / "data" / "ambignq").mkdir(parents=True)
    (root / "data" / "ambignq" / "dev_light.json").write_bytes(b"d")
    monkeypatch.setenv("CQ_CACHE", str(root))
    runner = CliRunner()
    info = {e["area"]: e for e in _lines(runner.invoke(cli, ["cache", "info"]).stdout)}
    assert (info["gguf"]["bytes"], info["gguf"]["files"]) == (100, 1) and (info["api"]["bytes"], info["api"]["files"]) == (10, 1)
    cleared = _lines(runner.invoke(cli, ["cache", "clear", "--area", "api"]).stdout)
    assert [c["area"] for c in cleared] == ["api"] and cleared[0]["removed_bytes"] == 10
    assert not (root / "api" / "3f" / "3fa9.json").exists() and (root / "api" / "keep.json").exists()
    assert (root / "gguf" / "SmolLM2-0123456789ab").exists()
    assert runner.invoke(cli, ["cache", "clear"]).exit_code == 0
    assert not (root / "gguf" / "SmolLM2-0123456789ab").exists() and (root / "gguf" / "notes" / "mine.txt").exists()
    assert (root / "models" / "reader" / "model.safetensors").exists() and (root / "data" / "ambignq" / "dev_light.json").exists()
