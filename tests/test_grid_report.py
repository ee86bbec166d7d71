"""Issue 48, "Honest reports": docs/results.md (bench/grid/report.py) states a paired difference only on enough
shared questions, marks the cells that read gold as upper bounds, and says why a number is at the floor."""
import json
import subprocess
import sys

from .conftest import ROOT


def summary(task, n=20, notes=(), **metrics):
    """A `cq score --ci` summary: metric=[value, low, high] (or [None] for an undefined one)."""
    return {"task": task, "n": n, **{k: v[0] for k, v in metrics.items()},
            "ci": {"intervals": {k: v[1:] for k, v in metrics.items() if len(v) == 3}}, "notes": list(notes)}


def report(tmp_path, scores: dict, pairs: dict | None = None, records: dict | None = None, *args) -> str:
    """Writes the score summaries (and each cell's records, EXP/NAME.jsonl) and runs report.py results."""
    exp = tmp_path / "exp"
    (exp / "scores").mkdir(parents=True, exist_ok=True)
    (exp / "pairs").mkdir(exist_ok=True)
    for name, body in scores.items():
        (exp / "scores" / f"{name}.json").write_text(json.dumps(body))
    for name, body in (pairs or {}).items():
        (exp / "pairs" / f"{name}.json").write_text(json.dumps(body))
    for name, rows in (records or {}).items():
        (exp / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "results.md"
    run = subprocess.run([sys.executable, str(ROOT / "bench" / "grid" / "report.py"), "results", "--scores",
                          str(exp / "scores"), "--pairs", str(exp / "pairs"), "--out", str(out), *args],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    return out.read_text()


def pair(n, diff, low, high, task="cq", key="options_f1"):
    return {"task": task, "n": n, "metrics": {key: {"a": 10.0, "b": 10.0 + diff, "diff": diff, "low": low,
                                                    "high": high}}}


def test_a_paired_claim_on_one_shared_question_is_refused(tmp_path):
    text = report(tmp_path, {}, {"ambignq.cq.fromdqs--ambignq.cq.llm": pair(1, 4.0, 4.0, 4.0)})
    assert "cannot tell: 1 shared question, fewer than 10" in text
    assert "is higher" not in text


def test_a_zero_width_interval_is_no_finding_and_enough_questions_are(tmp_path):
    text = report(tmp_path, {}, {"a--b": pair(40, 4.0, 4.0, 4.0), "c--d": pair(40, 4.0, 1.5, 6.5)})
    assert "cannot tell: the interval has zero width (+4.0) on 40 shared questions" in text
    assert "d is higher than c by 4.0 [1.5, 6.5] on 40 shared questions." in text
    assert "b is higher" not in text


def test_the_minimum_is_a_flag(tmp_path):
    text = report(tmp_path, {}, {"c--d": pair(40, 4.0, 1.5, 6.5)}, None, "--min-paired-n", "50")
    assert "cannot tell: 40 shared questions, fewer than 50" in text
