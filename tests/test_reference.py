"""Reference bundles and the gate (issue 59, item 4): `cq score --against BUNDLE` passes on an identical run, fails
on a perturbed one naming the records that moved, `make check-reference` (part of `make test`) runs the fixture
cells against fixtures/reference, and `make compare`'s bundle keeps every cell's records and per-record scores."""
from __future__ import annotations

import gzip
import json
import subprocess

import pytest

from cqtools.cli import cli

from .conftest import ROOT, jsonl, parse_jsonl

BUNDLE = str(ROOT / "fixtures" / "reference")


@pytest.fixture(scope="module")
def terse() -> list[dict]:
    from bench.reference import run_cell

    return parse_jsonl(run_cell("oracle.terse"))


def _against(runner, records, *args, task="oracle", cell="oracle.terse"):
    return runner.invoke(cli, ["score", "--task", task, "--against", BUNDLE, "--cell", cell, "--format", "json", *args],
                         input=jsonl(records))


def test_an_identical_run_passes(runner, terse):
    result = _against(runner, terse)
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["passed"] and report["metrics_moved"] == [] and report["records"]["moved"] == 0
    assert report["records"]["compared"] == len(terse) == 57


def test_a_perturbed_run_fails_and_names_the_records_that_moved(runner, terse):
    moved = [dict(r) for r in terse]
    for r in moved:
        if r["id"] in ("fx01#1", "fx03#0"):
            r["selected_option"] = "I don't know"
    result = _against(runner, moved)
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert not report["passed"] and "agreement" in report["metrics_moved"]
    assert report["records"]["moved"] == 2
    assert {m["id"] for m in report["moved_most"]} == {"fx01#1", "fx03#0"}
    assert report["moved_most"][0]["column"] == "agree" and report["moved_most"][0]["abs_diff"] == 1.0
    table = runner.invoke(cli, ["score", "--task", "oracle", "--against", BUNDLE, "--cell", "oracle.terse",
                                "--format", "table"], input=jsonl(moved))
    assert table.exit_code == 1 and table.stdout.startswith("FAIL") and "record fx01#1 agree" in table.stdout
    loose = _against(runner, moved, "--tolerance", "10")  # 2 of 45 scored: 4.4 points
    assert loose.exit_code == 0 and json.loads(loose.stdout)["records"]["moved"] == 2


def test_a_record_missing_from_the_run_fails(runner, terse):
    result = _against(runner, terse[1:])
    assert result.exit_code == 1
    assert json.loads(result.stdout)["records"]["only_in_reference"] == [terse[0]["id"]]


def test_other_scoring_options_or_cell_are_one_line_errors(runner, terse):
    from bench.reference import run_cell

    clam = parse_jsonl(run_cell("clam.answer-cq"))
    other = _against(runner, clam, "--lambda", "0.5", task="clam", cell="clam.answer-cq")
    assert other.exit_code == 1 and len(other.stderr.strip().splitlines()) == 1 and "--against" in other.stderr
    wrong_task = _against(runner, terse, task="clam", cell="oracle.terse")
    assert wrong_task.exit_code == 1 and "--task oracle" in wrong_task.stderr
    several = runner.invoke(cli, ["score", "--task", "oracle", "--against", BUNDLE], input=jsonl(terse))
    assert several.exit_code == 1 and "--cell" in several.stderr
    assert _against(runner, clam, task="clam", cell="clam.answer-cq").exit_code == 0


def test_check_reference_is_part_of_make_test_and_passes():
    from bench.reference import check

    run = subprocess.run(["make", "-n", "test", "CHECK_CHECKOUT=0"], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert "bench/reference.py check --against fixtures/reference" in run.stdout
    assert check(ROOT / "fixtures" / "reference", 0.0) == 0


def test_the_bundle_is_rewritten_byte_for_byte(tmp_path):
    from bench.reference import write

    write(tmp_path / "ref")
    for path in sorted((ROOT / "fixtures" / "reference").iterdir()):
        assert (tmp_path / "ref" / path.name).read_bytes() == path.read_bytes(), path.name


def test_make_compare_writes_each_cell_as_a_bundle(runner, tmp_path, terse):
    from bench.reference import grid

    exp = tmp_path / "exp"
    scores = exp / "scores"
    scores.mkdir(parents=True)
    (exp / "oracle.terse.jsonl").write_text(jsonl(terse))
    summary = runner.invoke(cli, ["score", "--task", "oracle", "--per-record", str(scores / "oracle.terse.json.rows.jsonl.gz")],
                            input=jsonl(terse))
    (scores / "oracle.terse.json").write_text(summary.stdout)
    (scores / "oracle.terse.json.cmd").write_text("cq oracle --persona terse\n  | cq score --task oracle\n")
    data = tmp_path / "dev.json"
    data.write_text("[]")
    grid(scores, exp / "reference", "abc123", "LLM tiny", "N=5", [str(data), str(tmp_path / "absent.json")])
    manifest = json.loads((exp / "reference" / "manifest.json").read_text())
    assert manifest["commit"] == "abc123" and manifest["models"] == {"models": "LLM tiny"}
    assert manifest["flags"] == {"make": "N=5"} and list(manifest["data"]) == [str(data)]
    assert manifest["cells"]["oracle.terse"]["score_args"] == ["--task", "oracle"]
    with gzip.open(exp / "reference" / "oracle.terse.jsonl.gz", "rt") as fh:
        first = json.loads(fh.readline())
    assert first["id"] == terse[0]["id"] and "gold" not in first["prediction"] and "agree" in first["scores"]
    result = runner.invoke(cli, ["score", "--task", "oracle", "--against", str(exp / "reference")], input=jsonl(terse))
    assert result.exit_code == 0, result.stdout + result.stderr
