"""Issue 37, item 2: a smoke run (`make compare N=5`) writes its report under work/, not over the tracked
docs/results.md; the full grid still writes docs/results.md."""
import re
import subprocess

from .conftest import ROOT


def report_path(*args):
    run = subprocess.run(["make", "-n", "report", "CHECK_CHECKOUT=0", *args], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    return re.search(r"--out (\S+)", run.stdout).group(1)


def test_a_smoke_run_reports_under_work_and_the_full_grid_into_docs():
    assert report_path("N=5") == "work/exp-all_5-model_5-asqa_5-toc_1-deep_1/results.md"
    assert report_path() == "docs/results.md"
    assert report_path("N=5", "RESULTS=elsewhere.md") == "elsewhere.md"
