"""Issue 37, item 8: `cq score --paired` says how many predictions each side lacks (they score 0), and
`cq show` on a JSON (not JSONL) file points to `cq convert`."""
import json

import orjson

from cqtools.cli import cli

from .conftest import jsonl


def test_paired_counts_the_missing_predictions_of_each_side(runner, questions, tmp_path):
    answered = [{**r, "answers": [{"text": r["gold"]["answers"][0][0]}]} for r in questions[:6]]
    empty = tmp_path / "empty.jsonl"
    empty.write_text(jsonl(questions[:6]))  # the same questions, no predictions
    result = runner.invoke(cli, ["score", "--task", "cbqa", "--paired", str(empty), "--n-boot", "50"],
                           input=jsonl(answered))
    assert result.exit_code == 0, result.stderr
    report = orjson.loads(result.stdout)
    assert report["missing"] == {"a": 0, "b": 6}
    assert any("6 of 6 record(s) lack the prediction" in n and "all of them" in n for n in report["notes"])
    table = runner.invoke(cli, ["score", "--task", "cbqa", "--paired", str(empty), "--n-boot", "50", "--format",
                                "table"], input=jsonl(answered)).stdout
    assert "note: " + str(empty) + ": 6 of 6 record(s) lack the prediction" in table


def test_show_on_a_json_file_points_to_cq_convert(runner, tmp_path):
    data = tmp_path / "dev_light.json"
    data.write_text(json.dumps([{"id": "1", "question": "Who?", "annotations": []}], indent=1))
    result = runner.invoke(cli, ["show", str(data)])
    assert result.exit_code == 1
    line = result.stderr.strip().splitlines()[-1]
    assert "a JSON file, not JSONL" in line and "cq convert" in line
