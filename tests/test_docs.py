"""docs/cli.md is generated from --help and must match the code."""
from cqtools.docgen import cli_markdown

from .conftest import ROOT


def test_cli_reference_is_current():
    current = (ROOT / "docs" / "cli.md").read_text()
    assert current == cli_markdown(), "docs/cli.md is stale: run `make docs`"


def test_architecture_block_is_current():
    from cqtools.docgen import with_architecture_block

    current = (ROOT / "docs" / "architecture.md").read_text()
    assert current == with_architecture_block(current), "docs/architecture.md is stale: run `make docs`"


def test_api_example_runs(fixture_index, tmp_path, monkeypatch, capsys):
    """docs/api.md's Python block runs as written (its index path pointed at the session's index)."""
    import re

    text = (ROOT / "docs" / "api.md").read_text()
    [block] = re.findall(r"```python\n(.*?)```", text, re.S)
    assert 'index_dir="idx"' in block
    monkeypatch.chdir(ROOT)
    exec(compile(block.replace('index_dir="idx"', f'index_dir="{fixture_index}"'), "docs/api.md", "exec"), {})
    n, f1 = capsys.readouterr().out.split()
    assert int(n) == 4 and float(f1) > 50  # 4 of the 6 carry a gold CQ; from-dqs reproduces most options


def test_config_reference_is_current():
    from cqtools.docgen import config_markdown

    assert (ROOT / "docs" / "config.md").read_text() == config_markdown(), "docs/config.md is stale: run `make docs`"


def test_methods_tables_are_current():
    from cqtools.docgen import with_methods_block

    current = (ROOT / "docs" / "methods.md").read_text()
    assert current == with_methods_block(current), "docs/methods.md is stale: run `make docs`"


def test_readme_reproduce_a_paper_section_is_current():
    """README's "Reproduce a paper" section is generated from the presets' rows (every preset, its pipeline)."""
    from cqtools import presets
    from cqtools.docgen_readme import with_presets_section

    current = (ROOT / "README.md").read_text()
    assert current == with_presets_section(current), "README.md's presets section is stale: run `make docs`"
    assert all(f"--preset {name}" in current for name in presets.names())


def test_every_reproduce_block_states_its_measured_time():
    """Issue 48: each preset's block in README's "Reproduce a paper" says how long it takes a question, measured
    (bench/preset_times.py from `make bench-smoke`'s grid run: docs/benchmarks/preset-times.json) on a stated
    number of questions, machine and load: the line right after the block's notes, before the next block."""
    import json
    import re

    from cqtools import presets
    from cqtools.docgen_readme import BEGIN, END, NOT_MEASURED

    section = (ROOT / "README.md").read_text().split(BEGIN, 1)[1].split(END, 1)[0]
    times = json.loads((ROOT / "docs" / "benchmarks" / "preset-times.json").read_text())
    parts = re.split(r"\n`--preset ([a-z-]+)`: ", section)[1:]
    blocks = dict(zip(parts[::2], parts[1::2]))
    assert sorted(blocks) == sorted(presets.names())
    for name, text in blocks.items():
        [line] = [line for line in text.splitlines() if line.startswith("Expected time: ")]
        row = times["presets"].get(name) or {"status": NOT_MEASURED}
        if row.get("status") == NOT_MEASURED:  # a new preset before `make bench-smoke` (issue 55 item 6)
            assert line.startswith(f"Expected time: {NOT_MEASURED} ") and text.index("```\n") < text.index(line)
            continue
        # issue 57 item 18: a cold run (no generation read from the grid's cache) on at least 3 questions
        assert row["seconds_per_question"] > 0 and row["questions"] >= 3, name
        assert row["cached_generations"] == 0 and "read from the grid's cache" not in line, name
        assert f"about {row['seconds_per_question']} s a question" in line and f"on {row['questions']} question" in line
        assert f"(load {times['load']}" in line and times["machine"] in line, line
        assert text.index("```\n") < text.index(line), f"{name}: the time comes after its block"


def test_the_architecture_page_names_every_plugin_hook():
    """docs/architecture.md's "to add" table has a row per hook a plugin (and cq's built-ins) can implement."""
    from cqtools.plugins import Hooks

    text = (ROOT / "docs" / "architecture.md").read_text()
    hooks = [name for name in vars(Hooks) if name.startswith("register_")]
    assert len(hooks) >= 13 and [h for h in hooks if f"`{h}`" not in text] == []

