"""`cq score --task clam --curves` (issue 46 item 4, the cost of clarifying) on hand-written records whose curves
are worked out by hand below: a lambda sweep of CLAM's adjusted accuracy and a risk-coverage curve over the
detector's threshold, both from the clam task's own per-question rows."""
import json

import pytest
from click.testing import CliRunner

from cqtools.cli import cli
from cqtools.score import ScoreOptions, score_records
from cqtools.score.clam import ClamScoring


def rec(rid, ambiguous, aliases, answer, score=None, asked=True, intended=None):
    gold = {"ambiguous": ambiguous, "answers": aliases}
    if intended is not None:
        gold["intended"] = intended
    out = {"id": rid, "question": f"question {rid}", "gold": gold, "answers": [{"text": answer}]}
    if score is not None:
        out["ambiguity"] = {"label": asked, "score": score}
    out["cq"] = {"text": "Which one?"} if asked else None
    return out


# A run that clarified every question (CLAM's "always"), with the detector's score on each:
#   r1 ambiguous,   score 0.9, CQ path right ("B", intended B), direct wrong ("A")
#   r2 ambiguous,   score 0.6, CQ path right, direct right
#   r3 unambiguous, score 0.4, CQ path right, direct right
#   r4 unambiguous, score 0.1, CQ path wrong ("G"), direct right
ALWAYS = [rec("r1", True, [["A"], ["B"]], "B", 0.9, intended=1), rec("r2", True, [["C"], ["D"]], "C", 0.6),
          rec("r3", False, [["E"]], "E", 0.4), rec("r4", False, [["F"]], "G", 0.1)]
NEVER = [{"id": rid, "question": f"question {rid}", "answers": [{"text": text}]}
         for rid, text in (("r1", "A"), ("r2", "C"), ("r3", "E"), ("r4", "F"))]


def jsonl(records):
    return "".join(json.dumps(r) + "\n" for r in records)


def run(args, records):
    result = CliRunner().invoke(cli, ["score", "--task", "clam", *args], input=jsonl(records))
    return result


def summary(result):
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_threshold_curve_with_the_direct_run_is_the_hand_computed_risk_coverage_curve(tmp_path):
    never = tmp_path / "never.jsonl"
    never.write_text(jsonl(NEVER))
    out = summary(run(["--curves", "--lambda", "0.5", "--direct", str(never)], ALWAYS))
    # clarify when score > T, lambda 0.5 (r3, r4 unambiguous: a correct answer after their CQ counts 0.5):
    #   T 0.9: none clarified: direct 0+1+1+1 = 3/4 = 75, adjusted 75
    #   T 0.6: r1 clarified:   1+1+1+1 = 100, adjusted 100 (r1 ambiguous)
    #   T 0.4: r1, r2:         100, 100
    #   T 0.1: r1, r2, r3:     100; adjusted (1+1+0.5+1)/4 = 87.5
    #   below all: every one:  (1+1+1+0)/4 = 75; adjusted (1+1+0.5+0)/4 = 62.5 (the run as scored: all.*)
    assert out["curves"]["threshold"] == [
        {"threshold": 0.9, "clarified": 0.0, "accuracy": 75.0, "adjusted_accuracy": 75.0, "unknown": 0},
        {"threshold": 0.6, "clarified": 25.0, "accuracy": 100.0, "adjusted_accuracy": 100.0, "unknown": 0},
        {"threshold": 0.4, "clarified": 50.0, "accuracy": 100.0, "adjusted_accuracy": 100.0, "unknown": 0},
        {"threshold": 0.1, "clarified": 75.0, "accuracy": 100.0, "adjusted_accuracy": 87.5, "unknown": 0},
        {"threshold": None, "clarified": 100.0, "accuracy": 75.0, "adjusted_accuracy": 62.5, "unknown": 0}]
    last = out["curves"]["threshold"][-1]
    assert (last["accuracy"], last["adjusted_accuracy"]) == (out["all"]["accuracy"], out["all"]["adjusted_accuracy"])
    assert out["notes"] == [] and out["metric"]["variant"] == {"lam": 0.5}  # curves do not change the identity


def test_lambda_sweep_is_the_adjusted_accuracy_at_each_lambda():
    out = summary(run(["--curves"], ALWAYS))
    # correct: r1, r2, r3 (3 of 4); needlessly clarified and correct: r3. adjusted = (3 - (1 - lambda)) / 4
    expected = [100 * (3 - (1 - lam / 10)) / 4 for lam in range(11)]
    got = out["curves"]["lambda"]
    assert [p["lambda"] for p in got] == [i / 10 for i in range(11)]
    assert [p["adjusted_accuracy"] for p in got] == pytest.approx(expected)
    assert got[8]["adjusted_accuracy"] == pytest.approx(out["all"]["adjusted_accuracy"])  # --lambda 0.8, the default


def test_without_the_direct_run_the_points_count_what_no_record_holds():
    out = summary(run(["--curves", "--lambda", "0.5"], ALWAYS))
    # Every record was clarified, so no direct answer is known: at T 0.9 all four are unknown (scored 0), at T 0.6
    # r2..r4 (r1's CQ path right: 25), ... and only "below all" is the run itself.
    points = out["curves"]["threshold"]
    assert [p["unknown"] for p in points] == [4, 3, 2, 1, 0]
    assert [p["accuracy"] for p in points] == [0.0, 25.0, 50.0, 75.0, 75.0]
    assert any("4 of 5 threshold points rest on answers no record holds" in n for n in out["notes"])


def test_a_selective_run_and_a_record_without_a_score():
    # r1 clarified (score 0.9, right); r2 not clarified (score 0.2, direct right, its CQ path unknown);
    # r5 has no score and was not clarified (right): it keeps its path at every threshold.
    records = [rec("r1", True, [["A"], ["B"]], "B", 0.9, intended=1), rec("r2", False, [["C"]], "C", 0.2, asked=False),
               rec("r5", True, [["X"]], "X", asked=False)]
    out = summary(run(["--curves"], records))
    # T 0.9: none clarified: r1 direct unknown (0), r2 1, r5 1 -> 2/3; T 0.2: r1 -> 3/3; below all: r2's CQ path
    # unknown -> 2/3, clarified 2/3 (r5 never).
    points = out["curves"]["threshold"]
    assert [p["threshold"] for p in points] == [0.9, 0.2, None]
    assert [p["accuracy"] for p in points] == pytest.approx([200 / 3, 100.0, 200 / 3], abs=1e-4)  # JSON: 4 places
    assert [p["clarified"] for p in points] == pytest.approx([0.0, 100 / 3, 200 / 3], abs=1e-4)
    assert [p["unknown"] for p in points] == [1, 0, 1]
    assert any("1 record(s) have no ambiguity.score" in n for n in out["notes"])


def test_python_and_cli_defaults_are_one_and_curves_are_off_by_default():
    assert ClamScoring().curves is False and ClamScoring().direct is None
    assert "curves" not in summary(run([], ALWAYS))
    from cqtools.cli.score import _rounded  # the CLI writes 4 decimal places

    task = score_records(enumerate(ALWAYS, 1), ScoreOptions("clam"), curves=True)
    assert _rounded(task.summary()["curves"]) == summary(run(["--curves"], ALWAYS))["curves"]


def test_table_md_and_csv_print_each_curve_as_a_table():
    result = run(["--curves", "--format", "csv"], ALWAYS)
    assert result.exit_code == 0, result.stderr
    assert "lambda,adjusted_accuracy\n0.00,50.00\n" in result.stdout
    assert "threshold,clarified,accuracy,adjusted_accuracy,unknown\n0.9,0.00,0.00,0.00,4\n" in result.stdout
    table = run(["--curves", "--format", "table"], ALWAYS).stdout
    assert "(below all)" in table and "curves.lambda" not in table


def test_plot_writes_the_figure_and_needs_curves(tmp_path):
    png = tmp_path / "cost.png"
    assert run(["--curves", "--plot", str(png)], ALWAYS).exit_code == 0
    assert png.read_bytes()[:4] == b"\x89PNG"
    result = run(["--plot", str(tmp_path / "x.png")], ALWAYS)
    assert result.exit_code == 1 and "add --curves" in result.stderr and "Traceback" not in result.stderr


def test_bad_direct_runs_are_one_line_errors(tmp_path):
    asked = tmp_path / "asked.jsonl"
    asked.write_text(jsonl([NEVER[0], ALWAYS[1]]))
    result = run(["--curves", "--direct", str(asked)], ALWAYS)
    assert result.exit_code == 1 and "Traceback" not in result.stderr
    assert f"--direct {asked} line 2: record r2 asked a clarifying question" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"id": "r1", "question": "q"}\nnot json\n')
    result = run(["--curves", "--direct", str(broken)], ALWAYS)
    assert result.exit_code == 1 and f"--direct {broken} line 2" in result.stderr
    result = run(["--direct", str(broken)], ALWAYS)
    assert result.exit_code == 1 and "--direct is read by --curves only" in result.stderr


def test_the_results_page_has_a_cost_section_and_figure_for_a_clam_cell_with_curves(tmp_path):
    """bench/grid/report.py's "The cost of clarifying" row from the summary above (lambda 0.8, the default):
    adjusted accuracy (3 - (1 - lambda)) / 4 at 0, 0.5, 0.8, 1 = 50, 62.5, 70, 75; nothing clarified 75, all 75,
    best 100 at 25% clarified; no unknown point; no wall file, so no seconds. figures.py draws cost-NAME.png."""
    import subprocess
    import sys

    from .conftest import ROOT
    from .test_grid_report import report

    never = tmp_path / "never.jsonl"
    never.write_text(jsonl(NEVER))
    curves = summary(run(["--curves", "--direct", str(never)], ALWAYS))
    plain = summary(run([], ALWAYS))
    text = report(tmp_path, {"clam.swept": curves, "clam.never": plain})
    assert "## The cost of clarifying" in text
    assert ("| [clam.swept](#cmd-clam-swept) | 4 | 50.0 | 62.5 | 70.0 | 75.0 | 75.0 | 75.0 | 100.0 (25.0) | 0 of 5 | – | – | – | – | – |"
            in text)
    assert "[clam.never](#cmd-clam-never) | 4 | 50.0" not in text  # scored without --curves: no row
    assert "![cost-clam.swept.png](figures/cost-clam.swept.png)" in text
    scores = tmp_path / "exp" / "scores"
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "grid" / "figures.py"), "--scores", str(scores),
                           "--out", str(tmp_path / "figures")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "figures" / "cost-clam.swept.png").read_bytes()[:4] == b"\x89PNG"
    assert not (tmp_path / "figures" / "cost-clam.never.png").exists()
