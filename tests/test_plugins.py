"""A plugin package from tests/plugins/ adds a detector and a searcher that the CLI uses,
without touching cqtools (installed into a temporary directory, found through its entry points)."""
import os
import subprocess
import sys

import orjson
import pytest

from .conftest import ROOT, install_plugin, jsonl


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory):
    return install_plugin("cq_demo_plugin", tmp_path_factory.mktemp("site"))


def cq(args, plugin_path, input_text=""):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([plugin_path, str(ROOT)]))
    return subprocess.run([sys.executable, "-m", "cqtools", *args], input=input_text, capture_output=True,
                          text=True, cwd=ROOT, env=env)


def test_plugins_lists_what_the_plugin_registers(plugin_path):
    result = cq(["plugins"], plugin_path)
    assert result.returncode == 0, result.stderr
    rows = [orjson.loads(line) for line in result.stdout.splitlines()]
    assert {(r["registry"], r["method"], r["plugin"]) for r in rows} == {
        ("detector", "length", "cq-demo-plugin 0.1"), ("searcher", "overlap", "cq-demo-plugin 0.1"),
        ("CQ method", "fixed", "cq-demo-plugin 0.1"), ("model backend", "echo", "cq-demo-plugin 0.1"),
        ("score task", "long-questions", "cq-demo-plugin 0.1"), ("weight format", "reply-file", "cq-demo-plugin 0.1"),
        ("trainer", "majority", "cq-demo-plugin 0.1")}
    help_text = " ".join(cq(["detect", "--help"], plugin_path).stdout.split())  # wherever click wraps it
    assert "length: more than 8 words" in help_text and "length 8" in help_text


def test_plugin_detector_and_searcher_from_the_cli(plugin_path, fixture_index):
    questions = [{"id": "a", "question": "Which city hosted the 2008 Summer Olympics?"},
                 {"id": "b", "question": "Who played the Joker in the film that came out in 2019?"}]
    retrieved = cq(["retrieve", "--index", fixture_index, "--method", "overlap", "--hits", "2"], plugin_path,
                   jsonl(questions))
    assert retrieved.returncode == 0, retrieved.stderr
    detected = cq(["detect", "--method", "length"], plugin_path, retrieved.stdout)
    assert detected.returncode == 0, detected.stderr
    out = [orjson.loads(line) for line in detected.stdout.splitlines()]
    assert [r["ambiguity"]["label"] for r in out] == [False, True]
    assert [r["ambiguity"]["score"] for r in out] == [7.0, 12.0]
    assert out[0]["meta"]["retrieve"]["plugin"] == "cq-demo-plugin"
    assert out[0]["passages"][0]["title"] == "2008 Summer Olympics"
    assert [p["rank"] for p in out[1]["passages"]] == [1, 2]


def test_a_plugin_adds_a_preset_beside_the_builtin_ones(plugin_path):
    """A plugin's ``register_presets`` hook adds a preset (checked against its method's schema) without hiding
    cq's own; names are case-insensitive."""
    listed = [orjson.loads(line)["name"] for line in cq(["presets"], plugin_path).stdout.splitlines()]
    assert {"toc", "clam", "ambigqa", "refuel", "askcq", "demo-length"} <= set(listed)
    questions = [{"id": "a", "question": "Who played the Joker in the film that came out in 2019 in the US?"},
                 {"id": "b", "question": "Who played the Joker in 2019?"}]
    detected = cq(["detect", "--preset", "DEMO-Length"], plugin_path, jsonl(questions))
    assert detected.returncode == 0, detected.stderr
    out = [orjson.loads(line) for line in detected.stdout.splitlines()]
    assert [(r["ambiguity"]["method"], r["ambiguity"]["threshold"], r["ambiguity"]["label"]) for r in out] == [
        ("length", 10.0, True), ("length", 10.0, False)]
    assert out[0]["meta"]["presets"] == {"detect": "demo-length"}
    unknown = cq(["detect", "--preset", "demo-lenght"], plugin_path, jsonl(questions))
    assert unknown.returncode != 0 and "did you mean 'demo-length'?" in unknown.stderr


def test_a_preset_registered_from_python_hides_no_builtin_one_and_is_checked():
    from cqtools import presets
    from cqtools.presets import Preset, Setting

    try:
        presets.register(Preset("mine", "a detector at 0.9", "none", "none",
                                (Setting("detect", "method", "always", "x"), Setting("detect", "threshold", 0.9, "x"))))
        assert {"toc", "clam", "mine"} <= set(presets.names())
        assert presets.values("MINE", "detect") == {"method": "always", "threshold": 0.9}
        with pytest.raises(ValueError, match="has no option 'treshold'"):
            presets.register(Preset("bad", "", "", "", (Setting("detect", "method", "always", "x"),
                                                        Setting("detect", "treshold", 0.9, "x"))))
        with pytest.raises(ValueError, match="defined twice"):
            presets.register(Preset("CLAM", "", "", ""))
    finally:
        presets.PRESETS.pop("mine", None)


def test_without_the_plugin_its_methods_are_unknown(fixture_index):
    result = subprocess.run([sys.executable, "-m", "cqtools", "detect", "--method", "length"], input="",
                            capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 2 and "'length' is not one of" in result.stderr


def test_a_plugin_adds_a_trainer_beside_cqs_own(plugin_path, tmp_path):
    """`cq train NAME` is every registered trainer: cq's own (registered through the same hook) and a plugin's."""
    listed = cq(["train", "--help"], plugin_path).stdout
    assert all(name in listed for name in ("detect", "gen-cq", "reader", "combiner", "compact", "majority"))
    out = cq(["train", "majority", "--train", str(ROOT / "fixtures" / "questions.jsonl"), "--out",
              str(tmp_path / "m")], plugin_path)
    assert out.returncode == 0, out.stderr
    report = orjson.loads(out.stdout)
    assert report["train_records"] > 0 and (tmp_path / "m" / "majority.json").exists()
    assert cq(["train", "majorty"], plugin_path).returncode == 2

