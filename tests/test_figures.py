"""Issue 37, item 9: `make compare` writes figures next to results.md: a forest plot of each task's intervals
and one of the paired differences (bench/grid/figures.py)."""
import json
import subprocess
import sys

from .conftest import ROOT
from .test_smoke_report import report_path


def summary(task, **metrics):
    return {"task": task, "n": 5, **{k: v[0] for k, v in metrics.items()},
            "ci": {"intervals": {k: v[1:] for k, v in metrics.items()}}, "notes": []}


def test_figures_are_forest_plots_of_the_intervals_and_paired_differences(tmp_path):
    scores, pairs = tmp_path / "scores", tmp_path / "pairs"
    scores.mkdir(), pairs.mkdir()
    (scores / "ambignq.cqa.llm.json").write_text(json.dumps(summary("cbqa", f1=[28.0, 24.8, 31.2])))
    (scores / "ambignq.det.classifier.json").write_text(json.dumps(summary("detect", f1=[71.2, 63.8, 77.8],
                                                                            auroc=[78.2, 66.7, 87.5])))
    (pairs / "a--b.json").write_text(json.dumps({"task": "cbqa", "metrics": {"f1": {"diff": 3.7, "low": 1.1,
                                                                                     "high": 6.3}}}))
    run = subprocess.run([sys.executable, str(ROOT / "bench" / "grid" / "figures.py"), "--scores", str(scores), "--pairs",
                          str(pairs), "--out", str(tmp_path / "figures")], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    for name in ("forest-cbqa.png", "forest-detect.png", "forest-pairs.png"):
        assert (tmp_path / "figures" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_make_compare_writes_the_figures_next_to_results_md():
    run = subprocess.run(["make", "-n", "report", "N=5", "CHECK_CHECKOUT=0"], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    out = report_path("N=5")
    assert f"bench/grid/figures.py --scores" in run.stdout and f"--out {out.rsplit('/', 1)[0]}/figures" in run.stdout


def test_score_plot_adds_a_calibration_diagram(runner, tmp_path):
    from cqtools.cli import cli
    from cqtools.score.plots import calibration_bins

    from .conftest import jsonl

    assert calibration_bins([True, False, True, True], [0.05, 0.15, 0.95, 0.92]) == [
        (0.05, 1.0, 1), (0.15, 0.0, 1), (0.935, 1.0, 2)]
    assert calibration_bins([True], [-3.2]) == []  # an LLM's log-ratio is not a probability
    records = [{"id": str(i), "question": "?", "gold": {"ambiguous": i % 2 == 0},
                "ambiguity": {"label": i % 3 == 0, "score": i / 10, "method": "classifier"}} for i in range(10)]
    out = tmp_path / "detect.png"
    result = runner.invoke(cli, ["score", "--task", "detect", "--plot", str(out)], input=jsonl(records))
    assert result.exit_code == 0, result.stderr
    assert out.read_bytes()[:4] == b"\x89PNG"


def test_the_paired_plot_names_each_pair_and_metric_as_the_text_does(tmp_path):
    """Issue 48: the plot named a--b.json "a vs b" while results.md reads it as b − a, and drew other metrics (F1
    for detection) than the text states (AUROC, accuracy). Both now come from pairs.py's PAIR_METRICS, and a
    pair the text cannot tell about (too few shared questions) is drawn as such, not as a finding."""
    sys.path.insert(0, str(ROOT))
    from bench.grid.figures import pairs
    from bench.grid.report import paired_section

    (tmp_path / "clf--llm.json").write_text(json.dumps({"task": "detect", "n": 40, "metrics": {
        "f1": {"diff": 9.0, "low": 2.0, "high": 15.0}, "auroc": {"diff": 5.0, "low": 1.0, "high": 9.0},
        "accuracy": {"diff": -2.0, "low": -6.0, "high": 2.0}}}))
    (tmp_path / "x--y.json").write_text(json.dumps({"task": "cq", "n": 1, "metrics": {
        "options_f1": {"diff": 4.0, "low": 4.0, "high": 4.0}}}))
    rows = pairs(tmp_path)
    assert [(label, point, readable) for label, point, _, _, readable in rows] == [
        ("llm − clf (AUROC, n=40)", 5.0, True), ("llm − clf (accuracy, n=40)", -2.0, True),
        ("y − x (options F1, n=1; cannot tell)", 4.0, False)]
    text = "\n".join(paired_section(tmp_path))
    assert "**llm vs clf** (detect; d = llm − clf): AUROC: llm is higher than clf" in text
    assert "accuracy: no difference shown (d = -2.0" in text and "F1" not in text.replace("options F1", "")
    assert "**y vs x** (cq; d = y − x): options F1: cannot tell: 1 shared question" in text


def test_the_forest_plot_names_a_cell_that_read_gold_an_upper_bound(tmp_path):
    sys.path.insert(0, str(ROOT))
    from bench.grid.figures import cells

    scores = tmp_path / "exp" / "scores"
    scores.mkdir(parents=True)
    for name in ("ambignq.cq.fromdqs", "ambignq.cq.llm"):
        (scores / f"{name}.json").write_text(json.dumps(summary("cq", options_f1=[50.0, 40.0, 60.0])))
    meta = {"ambignq.cq.fromdqs": {"gen_cq": {"method": "from-dqs", "reads": "gold.dqs"}},
            "ambignq.cq.llm": {"gen_cq": {"method": "llm", "model": "m"}}}
    for name, m in meta.items():
        (tmp_path / "exp" / f"{name}.jsonl").write_text(json.dumps({"id": "1", "question": "q?", "meta": m}) + "\n")
    assert [row[0] for row in cells(scores)["cq"]] == ["ambignq.cq.fromdqs ⊤ upper bound", "ambignq.cq.llm"]
