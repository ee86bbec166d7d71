"""Issue 37, item 4: `cq indexes` lists Pyserini's prebuilt index names from the installed Pyserini, and a
missing index's error advice is a command that runs."""
import re

from cqtools.cli import cli

from .conftest import parse_jsonl


def test_cq_indexes_lists_pyserinis_prebuilt_names(runner, tmp_path, monkeypatch):
    monkeypatch.setenv("PYSERINI_CACHE", str(tmp_path))
    result = runner.invoke(cli, ["indexes", "--match", "wikipedia-dpr-100w", "--kind", "sparse"])
    assert result.exit_code == 0, result.stderr
    rows = {r["name"]: r for r in parse_jsonl(result.stdout)}
    assert rows["wikipedia-dpr-100w"]["documents"] == 21015324 and rows["wikipedia-dpr-100w"]["cached"] is False
    assert all(r["kind"] == "sparse" for r in rows.values())


def test_a_missing_index_names_a_command_that_runs(runner, tmp_path):
    result = runner.invoke(cli, ["retrieve", "--index", "no-such-prebuilt-index"], input='{"id": "a", "question": "x"}\n')
    assert result.exit_code == 1
    advice = re.search(r"`(cq indexes[^`]*)`", result.stderr).group(1)
    args = advice.split()[1:]
    ran = runner.invoke(cli, [a if a != "TEXT" else "wikipedia" for a in args])
    assert ran.exit_code == 0 and parse_jsonl(ran.stdout)
