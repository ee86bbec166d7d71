"""`cq score --by FIELD` keeps different values apart (issue 57 item 3): 1 and "1", true and "true", a literal
"(none)" and a record without the field are four groups, not two; a FIELD that is no dotted key path is refused."""
import json

import pytest
from click.testing import CliRunner

from cqtools.cli import cli
from cqtools.score.groups import NO_VALUE, group_of

from .test_score_ci import fixture_records


def run(args, records):
    return CliRunner().invoke(cli, ["score", *args], input="".join(json.dumps(r) + "\n" for r in records))


def test_values_of_other_types_or_a_literal_none_are_groups_of_their_own():
    values = [1, "1", True, "true", "(none)", None, "nq", [1], "[1]"]
    groups = [group_of({"tag": v} if v is not None else {}, "tag") for v in values]
    assert len(set(groups)) == len(values)  # 6fba24f: 1/"1", true/"true", "(none)"/missing merged
    assert groups[6] == "nq" and groups[5] == NO_VALUE and groups[4] == '"(none)"' and groups[1] == '"1"'
    records = fixture_records()[:8]
    tagged = [dict(r, tag=v) for r, v in zip(records, [1, "1", True, "true", "(none)", "x", "x", "x"])]
    tagged.append({k: v for k, v in records[0].items() if k != "tag"})
    result = run(["--task", "ambigqa", "--by", "tag"], tagged)
    assert result.exit_code == 0, result.stderr
    counts = {group: body["n"] for group, body in json.loads(result.stdout)["groups"].items()}
    assert counts == {"1": 1, '"1"': 1, "true": 1, '"true"': 1, '"(none)"': 1, "x": 3, NO_VALUE: 1}


@pytest.mark.parametrize("path", ["", ".", "gold..type", ".gold", "gold.", " "])
def test_a_by_that_is_no_dotted_key_path_is_refused(path):
    result = run(["--task", "ambigqa", "--by", path], fixture_records()[:2])
    assert result.exit_code != 0 and "--by" in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
