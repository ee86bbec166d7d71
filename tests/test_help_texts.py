"""Issue 37, item 7: help texts and the cq chat example (docs/reference.md, once the README's) say what cq does."""
import re
import subprocess
import sys

import pytest

from cqtools.cli import cli

from .conftest import ROOT


def test_chat_help_says_the_detector_default_is_the_classifier(runner):
    text = " ".join(runner.invoke(cli, ["chat", "--help"]).stdout.split())
    assert "the classifier detector" in text and "llm detector and CQ writer" not in text
    assert re.search(r"--detect \[[^\]]*\]\s.*\[default: classifier\]", text)


@pytest.mark.slow
def test_the_chat_example_is_what_cq_chat_prints(tmp_path, fixture_index):
    reference = (ROOT / "docs" / "reference.md").read_text()
    example = reference.split("$ cq chat --index work/fixture-index")[1].split("```")[0]
    script = tmp_path / "turns.txt"
    script.write_text("Who played the Joker?\n1\n")
    run = subprocess.run([sys.executable, "-m", "cqtools", "chat", "--index", fixture_index, "--retrieve", "bm25",
                          "--detect", "always", "--script", str(script), "--log", str(tmp_path / "s.jsonl")],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    for line in example.splitlines():
        if line.startswith(("cq: ", "  1)", "answer ", "  from ")):
            assert line in run.stdout, line


def _commands(group, prefix=()):
    import click

    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if isinstance(command, click.Group):
            yield from _commands(command, (*prefix, name))
        else:
            yield (*prefix, name)


def test_no_help_text_shows_a_doubled_percent_sign(runner):
    """click prints help verbatim: "95%%" reached `cq score --help` and docs/cli.md (issue 37 item 7)."""
    helps = {" ".join(path): runner.invoke(cli, [*path, "--help"]).stdout for path in _commands(cli)}
    assert len(helps) > 15 and "bootstrap 95% interval" in helps["score"]
    assert not [path for path, text in helps.items() if "%%" in text]
    assert "%%" not in (ROOT / "docs" / "cli.md").read_text()


def test_a_declared_option_names_what_its_value_is(runner):
    """An option declared with ``metavar`` shows it in --help (the generated --api-base said TEXT where the
    hand-written flag said URL): a server address, a template file, a shots file."""
    from cqtools.cli import cli

    shown = runner.invoke(cli, ["disambiguate", "--help"]).output
    for flag in ("--api-base URL", "--prompt FILE", "--shots FILE"):
        assert flag in shown, flag
    assert "--api-base URL" in runner.invoke(cli, ["answer", "--help"]).output


def test_answer_help_names_the_reader_used_without_a_trained_one(runner, tmp_path, monkeypatch):
    """With nothing in $CQ_MODELS, cq answer reads with the reader cq ships: its --model help says so (it said
    SmolLM2, which only --mode long and --verify use)."""
    from cqtools.config import RunConfig
    from cqtools.models.roles import SHIPPED_DIR, installed_reader

    monkeypatch.setenv("CQ_MODELS", str(tmp_path))
    assert installed_reader(RunConfig.from_env()) == f"{SHIPPED_DIR}/reader"
    text = " ".join(runner.invoke(cli, ["answer", "--help"]).stdout.split())
    assert re.search(r"`cq train reader --out DIR`\), else the one cq ships \(cqtools/shipped/reader\)", text), text
