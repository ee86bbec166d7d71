"""Issue 57 item 17 (docs/results.md claims only what it shows): the grid report's figures are pictures on the page,
not links; a figure that would show nothing (every plotted value the same, e.g. a flat line at zero) is not drawn
and the page says which and why; and a run too small to tell methods apart says at the top that it is a smoke run
of N questions, whose "cannot tell" comparisons are expected (bench/grid/report.py, figures.py, frontier.py)."""
import json
import subprocess
import sys

from .conftest import ROOT
from .test_grid_report import pair, report, summary


def clam(lambda_acc, threshold_acc):
    """A `cq score --task clam --curves` summary whose cost figure plots these values."""
    body = summary("clam", n=8, **{"all.accuracy": [50.0, 40.0, 60.0]})
    body["all"] = {"accuracy": 50.0}
    body["curves"] = {"lambda": [{"lambda": lam, "adjusted_accuracy": a} for lam, a in zip((0.0, 0.5, 1.0), lambda_acc)],
                      "threshold": [{"threshold": t, "clarified": 25.0 * i, "accuracy": a, "adjusted_accuracy": a,
                                     "unknown": False} for i, (t, a) in enumerate(zip((0.1, 0.5, 0.9), threshold_acc))]}
    return body


def figures(tmp_path):
    exp = tmp_path / "exp"
    run = subprocess.run([sys.executable, str(ROOT / "bench" / "grid" / "figures.py"), "--scores", str(exp / "scores"),
                          "--pairs", str(exp / "pairs"), "--out", str(tmp_path / "figures")],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    return sorted(p.name for p in (tmp_path / "figures").glob("*.png"))


def test_cost_figures_are_images_and_a_flat_one_is_left_out_with_why(tmp_path):
    scores = {"clam.flat": clam([0.0, 0.0, 0.0], [0.0, 0.0, 0.0]), "clam.moving": clam([40.0, 45.0, 50.0],
                                                                                          [30.0, 50.0, 45.0])}
    (tmp_path / "figures").mkdir()
    (tmp_path / "figures" / "cost-clam.flat.png").write_bytes(b"an earlier run's flat line")
    text = report(tmp_path, scores)
    assert "![cost-clam.moving.png](figures/cost-clam.moving.png)" in text
    assert "(figures/cost-clam.flat.png)" not in text
    assert ("Left out, as showing nothing: cost-clam.flat.png (every value it would plot is 0 (a flat line))."
            in text)
    assert "- [" not in text.split("## Commands")[0]  # no figure is a bare link
    drawn = figures(tmp_path)
    assert "cost-clam.moving.png" in drawn and "cost-clam.flat.png" not in drawn  # the stale one is gone too


def test_a_forest_plot_of_equal_values_is_left_out_and_one_that_varies_is_shown(tmp_path):
    scores = {"ambignq.cqa.llm": summary("cbqa", f1=[0.0, 0.0, 0.0]),
              "ambignq.cqa.none": summary("cbqa", f1=[0.0, 0.0, 0.0]),
              "ambignq.det.llm": summary("detect", f1=[60.0, 40.0, 80.0])}
    text = report(tmp_path, scores, {"a--b": pair(40, 0.0, 0.0, 0.0, task="cbqa", key="f1")})
    figures_part = text.split("## Figures", 1)[1].split("## Commands")[0]
    assert "![forest-detect.png](figures/forest-detect.png)" in figures_part
    assert "forest-cbqa.png (every value it would plot is 0 (a flat line))" in figures_part
    assert "forest-pairs.png (every value it would plot is 0 (a flat line))" in figures_part
    assert "![forest-cbqa.png]" not in text and "![forest-pairs.png]" not in text
    assert figures(tmp_path) == ["forest-detect.png"]


def test_the_frontier_figure_is_on_the_page_unless_every_answer_is_the_same(tmp_path):
    varied = {"ambignq.cqa.llm": summary("cbqa", f1=[28.0, 20.0, 35.0]),
              "ambignq.cqa.none": summary("cbqa", f1=[30.0, 22.0, 38.0])}
    rows = [{"id": str(i), "cq": None} for i in range(4)]
    text = report(tmp_path / "varied", varied, None, {"ambignq.cqa.llm": rows, "ambignq.cqa.none": rows})
    assert "![answer quality against questions asked](figures/frontier.png)" in text
    assert "frontier.png" in figures(tmp_path / "varied")
    flat = {"ambignq.cqa.llm": summary("cbqa", f1=[0.0, 0.0, 0.0]), "ambignq.cqa.none": summary("cbqa", f1=[0.0, 0.0, 0.0])}
    text = report(tmp_path / "flat", flat, None, {"ambignq.cqa.llm": rows, "ambignq.cqa.none": rows})
    assert "Figure frontier.png left out: every value it would plot is 0 (a flat line)." in text
    assert "](figures/frontier.png)" not in text
    assert "| ambignq.cqa.llm | 0.00 | 0.0 | [0.0, 0.0] | ★ |" in text  # the table stays
    assert "frontier.png" not in figures(tmp_path / "flat")


def test_a_smoke_run_says_so_at_the_top_with_its_time_and_load(tmp_path):
    run_json = tmp_path / "run.json"
    run_json.write_text(json.dumps({"command": "compare N=5", "seconds": 912.4, "load_start_1min": 2.5,
                                    "load_end_15min": 3.1, "date": "2026-12-02"}))
    text = report(tmp_path, {}, {"a--b": pair(5, 4.0, 1.0, 6.0)}, None, "--tiers", "5,5,5,1,1", "--run", str(run_json))
    top = text.split("## ", 1)[0]
    assert "**A smoke run of 5 questions** (the preset cells that read the deep pool on 1)" in top
    assert 'every comparison below marked "cannot tell" is expected at this size' in top
    assert "took 912 s; the 1-minute load average was 2.5 when it started and the 15-minute one 3.1" in top
    assert "cannot tell: 5 shared questions, fewer than 10" in text


def test_a_run_large_enough_is_not_called_a_smoke_run(tmp_path):
    text = report(tmp_path, {}, {"a--b": pair(40, 4.0, 1.5, 6.5)}, None, "--tiers", "200,150,100,10,150")
    assert "smoke run" not in text and "took" not in text.split("## ", 1)[0]


def test_the_page_goes_into_a_folder_not_made_yet(tmp_path):
    """`make report RESULTS=new/dir/results.md` ended in a FileNotFoundError traceback."""
    (tmp_path / "scores").mkdir()
    out = tmp_path / "new" / "dir" / "results.md"
    run = subprocess.run([sys.executable, str(ROOT / "bench" / "grid" / "report.py"), "results", "--scores",
                          str(tmp_path / "scores"), "--out", str(out)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert out.read_text().startswith("# Results")
