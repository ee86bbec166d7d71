"""A plugin package from tests/plugins/ adds a detector and a searcher that the CLI uses,
without touching cqtools (installed into a temporary directory, found through its entry points)."""
import os
import subprocess
import sys

import orjson
import pytest

from .conftest import ROOT, jsonl

PLUGIN = ROOT / "tests" / "plugins" / "cq_demo_plugin"


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory):
    target = tmp_path_factory.mktemp("site")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                    "--no-index", "--target", str(target), str(PLUGIN)], check=True, capture_output=True)
    return str(target)


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
        ("score task", "long-questions", "cq-demo-plugin 0.1")}
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


def test_without_the_plugin_its_methods_are_unknown(fixture_index):
    result = subprocess.run([sys.executable, "-m", "cqtools", "detect", "--method", "length"], input="",
                            capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 2 and "'length' is not one of" in result.stderr
