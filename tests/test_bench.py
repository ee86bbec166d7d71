"""The benchmark scripts (bench/): each starts, every cqtools name it imports exists, and the
cheapest path of each runnable one works on tiny data. bench/report.py reads real `cq score`
summaries of the fixtures; determinism.py and retrieve.py (slow) run at their smallest sizes."""
from __future__ import annotations

import ast
import importlib
import os
import subprocess
import sys

import orjson
import pytest

from .conftest import FIXTURES, ROOT

BENCH = ROOT / "bench"
SCRIPTS = sorted(p.name for p in BENCH.glob("*.py") if p.name not in {"__init__.py", "common.py"})


def bench(script: str, *args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(BENCH / script), *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=timeout, env={**os.environ, "PYTHONPATH": str(ROOT)})


def cq(*args: str, stdin: str | None = None) -> str:
    out = subprocess.run([sys.executable, "-m", "cqtools", *args], input=stdin, capture_output=True, text=True,
                         cwd=ROOT, check=True)
    return out.stdout


@pytest.mark.parametrize("script", SCRIPTS)
def test_every_script_starts(script):
    result = bench(script, "--help", timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage:")


@pytest.mark.parametrize("script", SCRIPTS + ["common.py"])
def test_every_imported_cqtools_name_exists(script):
    """Names imported inside functions too (the scripts import late): a refactor that moves one breaks
    the benchmark only when it runs, hours in; this finds it now."""
    tree = ast.parse((BENCH / script).read_text())
    missing = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in ("cqtools", "bench",
                                                                                               "tests"):
            module = importlib.import_module(node.module)
            missing += [f"{node.module}.{a.name}" for a in node.names if not hasattr(module, a.name)
                        and not _is_submodule(node.module, a.name)]
    assert missing == []


def _is_submodule(package: str, name: str) -> bool:
    try:
        importlib.import_module(f"{package}.{name}")
        return True
    except ImportError:
        return False


def test_report_on_real_score_summaries(tmp_path):
    """`cq score` summaries of the fixtures (detect always/never, CQs from the gold DQs) become report rows
    whose every column is filled from the summary (a renamed metric would show "–")."""
    questions = (FIXTURES / "questions.jsonl").read_text()
    scores = tmp_path / "scores"
    scores.mkdir()
    summaries = {}
    for method in ("always", "never"):
        name = f"ambignq.det.{method}"
        summaries[name] = orjson.loads(cq("score", "--task", "detect",
                                          stdin=cq("detect", "--method", method, "-q", stdin=questions)))
        (scores / f"{name}.json.cmd").write_text(f"cq detect --method {method} | cq score --task detect\n")
    name = "ambignq.cq.from-dqs"
    summaries[name] = orjson.loads(cq("score", "--task", "cq", "--no-bertscore",
                                      stdin=cq("gen-cq", "--method", "from-dqs", "-q", stdin=questions)))
    for name, summary in summaries.items():
        (scores / f"{name}.json").write_bytes(orjson.dumps(summary))
    out = tmp_path / "results.md"
    result = bench("report.py", "--scores", str(scores), "--out", str(out), "--n", "30", timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"wrote {out} (3 cells)"
    text = out.read_text()
    rows = {line.split("]")[0].lstrip("| ["): line for line in text.splitlines() if line.startswith("| [")}
    assert set(rows) == set(summaries)
    always = summaries["ambignq.det.always"]
    assert rows["ambignq.det.always"].endswith(
        f"| {always['n']} | " + " | ".join(f"{always[k]:.1f}" for k in ("accuracy", "precision", "recall", "f1",
                                                                        "auroc")) + " |")
    for line in rows.values():
        assert "–" not in line, line
    assert "## Ambiguity detection" in text and "## Clarification question generation" in text
    assert "cq detect --method never | cq score --task detect" in text  # the command beside each row


@pytest.mark.slow
def test_determinism_smallest(tmp_path):
    """One cut (--batch-size 4), a few pairs, two LLM questions, one repeat (about a minute)."""
    out = tmp_path / "determinism.md"
    result = bench("determinism.py", "--out", str(out), "--work", str(tmp_path / "work"), "--cuts", "batch-4",
                   "--pairs", "4", "--llm", "2", "--repeats", "1")
    assert result.returncode == 0, result.stderr
    text = out.read_text()
    assert "batch-4" in text
    results = orjson.loads((tmp_path / "work" / "results.json").read_bytes())
    assert results["table"] and results["speed"]
    assert all(isinstance(row[-1], (int, float)) for row in results["table"])


@pytest.mark.slow
def test_retrieve_on_the_fixture_index(tmp_path, shared_data, fixture_index):
    """The shared questions against the fixture index (--reuse-index: no corpus index is built)."""
    out = tmp_path / "retrieve.md"
    result = bench("retrieve.py", "--data", str(shared_data), "--work", str(tmp_path / "work"), "--out", str(out),
                   "--reuse-index", fixture_index)
    assert result.returncode == 0, result.stderr
    text = out.read_text()
    for method in ("bm25", "dense", "hybrid", "bm25s"):
        assert f"\n| {method} | " in text


def test_backends_imports_and_reaches_the_llama_server_helper():
    """bench/backends.py reuses the slow tests' llama.cpp server fixture (not started here) and finds
    the concurrency after which throughput stops rising."""
    import inspect

    from bench import backends

    server = backends.llama_server()
    assert inspect.isgenerator(server)
    server.close()
    assert backends.saturation({1: 1.0, 2: 1.02, 4: 1.5}) == 1
    assert backends.saturation({1: 1.0, 2: 1.5, 4: 1.4}) == 2
    assert backends.saturation({1: 1.0, 2: 1.5, 4: 2.0}) == 4
    result = bench("backends.py", "--help", timeout=120)
    assert result.returncode == 0 and "--concurrency" in result.stdout, result.stderr
