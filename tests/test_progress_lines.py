"""Issue 37, item 2: without a terminal a stage prints one short progress line on stderr at a steady interval
(with the total when the input is a file), and -q silences it; stdout stays JSONL."""
from cqtools import progress
from cqtools.cli import cli

from .conftest import jsonl, parse_jsonl


def test_off_a_terminal_a_stage_prints_short_progress_lines_and_q_silences_them(runner, tmp_path, monkeypatch):
    """In one process (CliRunner, a Python caller), -q silences its own command only: the command after it
    prints its progress lines again."""
    monkeypatch.setattr(progress, "LINE_INTERVAL", 0.0)  # a line per update (30 s in use)
    questions = tmp_path / "q.jsonl"
    questions.write_text(jsonl([{"id": str(i), "question": f"Q{i}?"} for i in range(3)]))
    for quiet in (True, False, True, False):
        result = runner.invoke(cli, ["detect", "--method", "always", "--batch-size", "1", str(questions),
                                     *(["-q"] if quiet else [])])
        assert result.exit_code == 0, result.stderr
        assert len(parse_jsonl(result.stdout)) == 3
        lines = [line for line in result.stderr.splitlines() if "records in" in line]
        if quiet:
            assert not lines and result.stderr == ""
        else:
            assert lines and "detect: 3/3 records in" in lines[-1] and all(len(line) < 100 for line in lines)


def test_the_line_says_how_long_is_left():
    lines = progress.Lines("toc", 10, interval=3600)
    lines.start -= 20
    lines.update(4)
    assert lines.line().startswith("toc: 4/10 records in 20s, 0.20/s, ~30s left")
    lines.close()


def test_a_regular_file_on_standard_input_gives_the_progress_its_total(tmp_path):
    """`cq STAGE < file` (issue 37 item 2): the file's records are counted for the total and the time left, through
    a handle of their own (the stage still reads every record); a pipe has no total."""
    import gzip
    import os
    import subprocess
    import sys
    from pathlib import Path

    from cqtools.stream.inputs import count_stdin

    plain = tmp_path / "q.jsonl"
    plain.write_text('{"id": "a", "question": "q?"}\n\n{"id": "b", "question": "r?"}\n{"id": "c", "question": "s?"}\n')
    packed = tmp_path / "q.jsonl.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    for path in (plain, packed):
        with open(path, "rb") as fh:
            assert count_stdin(fh) == 3
            assert fh.tell() == 0
    reader, writer = os.pipe()
    with os.fdopen(reader, "rb") as pipe, os.fdopen(writer, "wb"):
        assert count_stdin(pipe) is None
    # end to end: `cq detect < file` off a terminal; its progress lines carry the total (30 s apart in use)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    code = ("import sys; from cqtools import progress; progress.LINE_INTERVAL = 0.0; from cqtools.cli import main; "
            "sys.argv = ['cq', 'detect', '--method', 'always', '--batch-size', '1']; main()")
    with open(plain, "rb") as stdin:
        proc = subprocess.run([sys.executable, "-c", code], stdin=stdin, capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    assert len(proc.stdout.splitlines()) == 3 and "detect: 3/3 records in" in proc.stderr


def test_a_stage_that_ran_a_few_seconds_ends_with_one_line_and_q_keeps_it_silent(runner, tmp_path, monkeypatch):
    """Issue 48: off a terminal a stage shorter than the 30 s interval printed nothing. One that ran END_LINE_AFTER
    seconds or more (5 in use; 0 here) ends with one line: records, time, rate; -q still prints nothing, nor does
    a stage quicker than END_LINE_AFTER."""
    monkeypatch.setattr(progress, "LINE_INTERVAL", 3600.0)
    questions = tmp_path / "q.jsonl"
    questions.write_text(jsonl([{"id": str(i), "question": f"Q{i}?"} for i in range(3)]))
    for after, quiet, expected in ((0.0, False, 1), (0.0, True, 0), (3600.0, False, 0)):
        monkeypatch.setattr(progress, "END_LINE_AFTER", after, raising=False)
        result = runner.invoke(cli, ["detect", "--method", "always", str(questions), *(["-q"] if quiet else [])])
        assert result.exit_code == 0, result.stderr
        lines = [line for line in result.stderr.splitlines() if "records in" in line]
        assert len(lines) == expected, result.stderr
        assert all(line.startswith("cq: detect: 3/3 records in 0s, ") and line.endswith("/s (ended)")
                   for line in lines), lines
    # a stage that fails ends with its error line alone
    questions.write_text(jsonl([{"id": "0", "question": "Q0?"}, {"id": "1"}]))
    result = runner.invoke(cli, ["detect", "--method", "always", "--batch-size", "1", str(questions)])
    assert result.exit_code != 0 and "(ended)" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
