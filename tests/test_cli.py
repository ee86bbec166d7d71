"""The command group: subcommands, help texts, lazy imports."""
import os
import subprocess
import sys

from cqtools.cli import COMMANDS, cli

REQUIRED = ["index", "convert", "retrieve", "rerank", "detect", "gen-cq", "answer", "score"]


def test_help_lists_every_subcommand(runner):
    result = runner.invoke(cli, ["--help"])
    assert result.exit_code == 0
    for name in REQUIRED:
        assert f"\n  {name} " in result.output, name


def test_every_subcommand_help_has_a_pipeline_example(runner):
    for name in COMMANDS:
        result = runner.invoke(cli, [name, "--help"])
        assert result.exit_code == 0, (name, result.output)
        if "Not implemented yet" not in result.output:
            assert "Example" in result.output and "cq " in result.output, name


def test_help_imports_no_torch_and_starts_no_jvm():
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from cqtools.cli import cli, COMMANDS\n"
        "r = CliRunner().invoke(cli, ['--help'])\n"
        "assert r.exit_code == 0, r.output\n"
        "for name in COMMANDS: CliRunner().invoke(cli, [name, '--help'])\n"
        "heavy = [m for m in ('torch', 'transformers', 'jnius', 'pyserini', 'sentence_transformers') if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"--help imported {out.stdout.strip()}"


def test_unknown_command_fails(runner):
    result = runner.invoke(cli, ["frobnicate"])
    assert result.exit_code == 2


def test_cli_makes_openmp_threads_sleep_unless_the_user_chose(tmp_path):
    """Set before torch loads (so libgomp reads it), and a user's own OMP_WAIT_POLICY wins."""
    code = (
        "import os, sys\n"
        "from click.testing import CliRunner\n"
        "from cqtools.cli import cli\n"
        "r = CliRunner().invoke(cli, ['convert', 'passages', '--help'])\n"
        "assert 'torch' not in sys.modules\n"
        "print(os.environ.get('OMP_WAIT_POLICY'))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert out.stdout.strip() == "PASSIVE"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**env, "OMP_WAIT_POLICY": "ACTIVE"})
    assert out.stdout.strip() == "ACTIVE"
