"""A score over no record is never a quiet rc 0 (issue 57 item 12): `cq score --task asqa` on AmbigNQ records gave
n = 0, rc 0 and nothing on stderr. Records that are all skipped are an error naming why; an empty input warns."""
import json

from click.testing import CliRunner

from cqtools.cli import cli

AMBIGNQ = {"id": "a", "question": "Who?", "gold": {"ambiguous": False, "answers": [["x"]]}, "answers": [{"text": "x"}]}


def test_records_of_another_task_are_an_error_naming_why():
    result = CliRunner().invoke(cli, ["score", "--task", "asqa"], input=json.dumps(AMBIGNQ) + "\n")
    assert result.exit_code == 1 and result.stdout == ""
    assert "no record was scored (1 record(s) skipped: no gold.long_answers" in result.stderr
    assert result.stderr.count("\n") == 1


def test_an_empty_input_warns_on_stderr():
    result = CliRunner().invoke(cli, ["score", "--task", "detect"], input="")
    assert result.exit_code == 0 and json.loads(result.stdout)["n"] == 0
    assert "warning: --task detect: the input has no record" in result.stderr
