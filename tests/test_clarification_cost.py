"""The cost of clarifying (issue 59, item 2): `cq score --task clam` reports over- and under-clarification as rates
with intervals, questions asked, turns and the LM cost per answer from meta.usage; the grid's frontier (answer
quality against questions asked, every cell) is tabled by report.py and drawn by figures.py."""
import json
import subprocess
import sys

from cqtools.cli import cli

from .conftest import ROOT, jsonl


def _record(i: int, ambiguous: bool, asked: bool, correct: bool, calls: int = 2) -> dict:
    return {"id": f"q{i}", "question": f"Question {i}?", "cq": {"text": "Which one?"} if asked else None,
            "answers": [{"text": "Paris" if correct else "Rome"}],
            "gold": {"ambiguous": ambiguous, "answers": [["Paris"]], "dqs": [], "intended": 0},
            "meta": {"usage": {"answer": {"calls": calls, "prompt_tokens": 10 * calls, "generated_tokens": 3,
                                          "seconds": 0.5}}}}


def _records() -> list[dict]:
    # 4 unambiguous questions (1 asked about: over-clarification 25%), 6 ambiguous (2 not asked: under 33.3%)
    return [_record(i, False, i == 0, True) for i in range(4)] + \
        [_record(10 + i, True, i >= 2, i % 2 == 0, calls=4) for i in range(6)]


def _summary(runner, records, *args) -> dict:
    result = runner.invoke(cli, ["score", "--task", "clam", "--format", "json", *args], input=jsonl(records))
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_over_and_under_clarification_with_intervals_and_the_cost_per_answer(runner):
    summary = _summary(runner, _records())
    assert summary["over_clarification"] == 25.0 and round(summary["under_clarification"], 4) == 33.3333
    low, high = summary["over_clarification_wilson_95"]
    assert 0 < low < 25.0 < high < 100
    low, high = summary["under_clarification_wilson_95"]
    assert 0 < low < 33.4 < high < 100
    assert summary["questions_asked"] == 0.5 and summary["turns"] == 1.5
    per = summary["cost"]["per_answered_question"]
    assert per["calls"] == (4 * 2 + 6 * 4) / 10 and per["seconds"] == 0.5
    assert per["prompt_tokens"] == 10 * per["calls"]
    with_ci = _summary(runner, _records(), "--ci", "--n-boot", "200")
    for name in ("over_clarification", "under_clarification", "questions_asked", "turns"):
        low, high = with_ci["ci"]["intervals"][name]
        assert low <= with_ci[name] <= high


def test_a_system_that_always_asks_over_clarifies_and_one_that_never_asks_under_clarifies(runner):
    always = _summary(runner, [dict(r, cq={"text": "Which?"}) for r in _records()])
    never = _summary(runner, [dict(r, cq=None) for r in _records()])
    assert (always["over_clarification"], always["under_clarification"]) == (100.0, 0.0)
    assert (never["over_clarification"], never["under_clarification"]) == (0.0, 100.0)
    assert always["turns"] == 2.0 and never["turns"] == 1.0


def _cell(scores, name: str, task: str, metrics: dict, records: list[dict] | None = None) -> None:
    body = {"task": task, "n": 5, "notes": [], "ci": {"intervals": {}}}
    for key, (point, low, high) in metrics.items():
        where, ci = body, body["ci"]["intervals"]
        *groups, leaf = key.split(".")
        for g in groups:
            where, ci = where.setdefault(g, {}), ci.setdefault(g, {})
        where[leaf], ci[leaf] = point, [low, high]
    (scores / f"{name}.json").write_text(json.dumps(body))
    if records is not None:
        (scores.parent / f"{name}.jsonl").write_text(jsonl(records))


def test_the_frontier_of_every_cell_in_the_report_and_the_figure(tmp_path):
    from bench.grid import frontier

    scores = tmp_path / "scores"
    scores.mkdir()
    asked = [{"id": str(i), "cq": {"text": "?"} if i < 3 else None} for i in range(5)]
    _cell(scores, "ambignq.cqa.llm", "cbqa", {"f1": (28.0, 20.0, 35.0)}, asked)  # asks 3 of 5
    _cell(scores, "ambignq.cqa.none", "cbqa", {"f1": (30.0, 22.0, 38.0)}, [dict(r, cq=None) for r in asked])
    _cell(scores, "ambignq.cqa.all", "cbqa", {"f1": (35.0, 25.0, 40.0)}, [dict(r, cq={"text": "?"}) for r in asked])
    _cell(scores, "clam.clam", "clam", {"all.accuracy": (40.0, 30.0, 50.0)})
    summary = json.loads((scores / "clam.clam.json").read_text())
    (scores / "clam.clam.json").write_text(json.dumps({**summary, "questions_asked": 0.25}))
    found = frontier.points(scores)
    by_cell = {p["cell"]: p for rows in found.values() for p in rows}
    assert by_cell["ambignq.cqa.llm"]["asked"] == 0.6 and not by_cell["ambignq.cqa.llm"]["frontier"]
    assert by_cell["ambignq.cqa.none"]["frontier"] and by_cell["ambignq.cqa.all"]["frontier"]
    assert by_cell["clam.clam"] == {"cell": "clam.clam", "asked": 0.25, "answer": 40.0, "low": 30.0, "high": 50.0,
                                    "frontier": True}
    text = "\n".join(frontier.section(scores))
    assert "figures/frontier.png" in text and "| ambignq.cqa.llm | 0.60 | 28.0 | [20.0, 35.0] |  |" in text
    run = subprocess.run([sys.executable, str(ROOT / "bench" / "grid" / "figures.py"), "--scores", str(scores),
                          "--out", str(tmp_path / "figures")], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "figures" / "frontier.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
