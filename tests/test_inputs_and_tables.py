"""Files as arguments on every stage (issue 25, item 8), `cq score` over several runs in one table with
paired differences and md/csv output, and a progress bar that knows its total (item 6)."""
import csv
import io
import os
import sys

import orjson
import pytest
from click.testing import CliRunner

from cqtools.cli import cli

from .conftest import FIXTURES, on_a_terminal

QUESTIONS = FIXTURES / "questions.jsonl"
CQ = [sys.executable, "-m", "cqtools"]


def _run(args, input=None):
    return CliRunner().invoke(cli, args, input=input)


@pytest.mark.parametrize("command", [["detect", "--method", "always"], ["oracle"], ["gen-cq", "--method", "from-dqs"]])
def test_a_stage_reads_its_files_in_order_like_stdin(command, tmp_path):
    lines = QUESTIONS.read_text().splitlines(keepends=True)
    (tmp_path / "a.jsonl").write_text("".join(lines[:4]))
    (tmp_path / "b.jsonl").write_text("".join(lines[4:9]))
    from_files = _run([*command, "-q", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl")])
    from_stdin = _run([*command, "-q"], input="".join(lines[:9]))
    assert from_files.exit_code == 0, from_files.output
    assert from_files.stdout == from_stdin.stdout and from_files.stdout.count("\n") == 9


def test_a_bad_line_in_a_file_is_named_by_file_and_line(tmp_path):
    good, bad = tmp_path / "good.jsonl", tmp_path / "bad.jsonl"
    good.write_text('{"id": "a", "question": "Who?"}\n')
    bad.write_text('{"id": "b", "question": "What?"}\nnot json\n')
    result = _run(["detect", "--method", "never", str(good), str(bad)])
    assert result.exit_code != 0
    assert f"line 2 of {bad}" in result.stderr and "Traceback" not in result.stderr
    assert result.stdout.count("\n") == 2  # what was read before the bad line is written


def test_empty_input_files_say_0_records(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    result = _run(["detect", "--method", "never", str(empty)])
    assert result.exit_code == 0 and result.stdout == ""
    assert f"0 records on {empty}" in result.stderr


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("runs")
    for method in ("always", "never"):
        result = _run(["detect", "--method", method, "-q", str(QUESTIONS), "-o", str(folder / f"{method}.jsonl")])
        assert result.exit_code == 0, result.output
    return folder / "always.jsonl", folder / "never.jsonl"


def test_score_reads_a_file_argument_as_it_reads_stdin(two_runs):
    always, _ = two_runs
    from_file = _run(["score", "--task", "detect", str(always)])
    from_stdin = _run(["score", "--task", "detect"], input=always.read_text())
    assert from_file.exit_code == 0 and from_file.stdout == from_stdin.stdout


def test_score_of_several_runs_is_one_table_with_paired_differences(two_runs):
    always, never = two_runs
    args = ["score", "--task", "detect", "--n-boot", "50", str(always), str(never)]
    report = orjson.loads(_run(args).stdout)
    assert [r["run"] for r in report["runs"]] == [str(always), str(never)]
    assert report["runs"][0]["recall"] == 100.0 and report["runs"][1]["recall"] == 0.0
    diff = report["differences"][0]
    assert (diff["a"], diff["b"]) == (str(always), str(never))
    # every resample gives -100 (a zero-width interval): no finding, said so (cqtools.score.ci.cannot_tell)
    recall = diff["metrics"]["recall"]
    assert recall["diff"] == -100.0 and not recall["excludes_zero"]
    assert recall["cannot_tell"] == "cannot tell: the interval has zero width (-100.0) on 30 shared questions"
    rows = list(csv.reader(io.StringIO(_run([*args, "--format", "csv"]).stdout)))
    assert rows[0][:2] == ["run", "n"] and len(rows) == 4  # header, two runs, one difference
    recall = rows[0].index("recall")
    assert rows[1][recall] == "100.00" and rows[3][recall].startswith("-100.00 [")
    md = _run([*args, "--format", "md"]).stdout.splitlines()
    assert md[0].startswith("| run | n |") and md[1].startswith("|---|") and md[4].startswith(f"| {never} - {always} |")


def test_several_runs_refuse_the_one_run_flags(two_runs, tmp_path):
    always, never = two_runs
    result = _run(["score", "--task", "detect", "--per-record", str(tmp_path / "x.jsonl"), str(always), str(never)])
    assert result.exit_code == 2 and "--per-record takes one run" in result.stderr


@pytest.mark.parametrize("extra,first", [([], "metric,value"), (["--ci", "--n-boot", "20"], "metric,value,low,high")])
def test_score_csv_and_md_of_one_run(two_runs, extra, first):
    always, _ = two_runs
    out = _run(["score", "--task", "detect", "--format", "csv", *extra, str(always)]).stdout.splitlines()
    assert out[0] == first and "accuracy,60.00" in "\n".join(out)
    md = _run(["score", "--task", "detect", "--format", "md", *extra, str(always)]).stdout.splitlines()
    assert md[0].startswith("| metric | value |") and any(line.startswith("| accuracy | 60.00 |") for line in md)


def test_the_progress_bar_counts_toward_the_files_total_on_a_terminal(tmp_path):
    code, shown = on_a_terminal([*CQ, "detect", "--method", "never", "--batch-size", "7", str(QUESTIONS)])
    assert code == 0
    n = QUESTIONS.read_text().count("\n")
    assert b" 0/%d " % n in shown and f"{n}/{n}".encode() in shown  # a total from the start


PAUSE_PLUGIN = """
import time

from cqtools.plugins import hookimpl
from cqtools.registry import Option
from cqtools.stages.detect import ScoredDetector


def score(records):
    time.sleep(0.4 * len(records))
    return [0.0] * len(records)


@hookimpl
def register_detectors(register):
    register("pause", lambda threshold=0.5: ScoredDetector("pause", score, threshold, {"method": "pause"}),
             help="never ambiguous, 0.4 s per record", options=[Option("threshold", float, 0.5, "")])
"""


def test_the_progress_bar_moves_per_record_within_a_batch(tmp_path):
    """One batch of 5 records (issue 25, item 6): on a terminal the bar counts each record as it is done, not
    the batch at its end; the records written are the same as without a terminal."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "cq_pause_detector.py").write_text(PAUSE_PLUGIN)
    dist = site / "cq_pause_detector-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: cq-pause-detector\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[cqtools.plugins]\npause = cq_pause_detector\n")
    five = tmp_path / "five.jsonl"
    five.write_text("".join(QUESTIONS.read_text().splitlines(True)[:5]))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    code, shown = on_a_terminal([*CQ, "detect", "--method", "pause", "--batch-size", "32", str(five)], env)
    assert code == 0, shown[-1000:]
    assert b"2/5" in shown and b"4/5" in shown and b"5/5" in shown


@pytest.mark.slow
def test_cq_index_dense_draws_a_passage_bar_on_a_terminal(tmp_path):
    """`cq index --dense` (issue 25, item 6): passages encoded, with their rate, while it encodes."""
    code, shown = on_a_terminal([*CQ, "index", "--corpus", str(FIXTURES / "corpus.jsonl"), "--out",
                                 str(tmp_path / "idx"), "--dense"])
    assert code == 0, shown[-1000:]
    assert b"dense: encoding" in shown and b"passage/s" in shown
    code, quiet = on_a_terminal([*CQ, "index", "--corpus", str(FIXTURES / "corpus.jsonl"), "--out",
                                 str(tmp_path / "idx2"), "--dense", "-q"])
    assert code == 0 and b"passage/s" not in quiet


def test_a_stage_whose_output_is_empty_on_every_record_says_so_with_the_likely_cause(tmp_path):
    unasked = _run(["detect", "--method", "never", "-q", str(QUESTIONS)]).stdout
    silent = _run(["gen-cq", "--method", "from-dqs"], input=unasked)
    assert silent.exit_code == 0 and silent.stdout.count("\n") == 30
    assert "gen-cq: 'cq' is empty on every one of the 30 records written" in silent.stderr and "--all" in silent.stderr
    asked = _run(["gen-cq", "--method", "from-dqs", "--all"], input=unasked)
    assert asked.exit_code == 0 and "is empty on every" not in asked.stderr
