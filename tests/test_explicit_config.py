"""The run configuration is a value, passed, never ambient (issue 34 item 4, issue 43 item 2). A command builds its
RunConfig once where it starts (cqtools/cli/options.py ``run_config``: the environment with the flags its callbacks
recorded) and hands it to the stage, the stage to the loaders, the loader to the model, which keeps it. There is no
process-wide configuration: nothing in cqtools keeps one, sets one or reads one. A library function called without a
configuration (a Python caller's) builds one from the environment, explicitly, only at the edges listed here; a new
``RunConfig.from_env()`` anywhere else fails this test: take the configuration you were given as an argument."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "cqtools"

# (module, function) pairs that build a configuration from the environment when none was passed, and why.
# cqtools/cli/options.py's run_config is the commands' one place.
EDGES = {
    ("cli/options.py", "run_config"): "a command's start: the environment with its flags on top, once",
    ("registry.py", "build"): "Method.build(config=None): a Python caller's default",
    ("stages/common.py", "split_config"): "a stage's build() called from Python without a configuration",
    ("stream/__init__.py", "run_stream"): "run_stream() called from Python without a configuration",
    ("runrecord.py", "build"): "a run record written for a Python caller's run",
    ("models/load.py", "run_config"): "the loaders' default for a Python caller who passes none (every loader: "
                                      "generators, cross-encoders, encoders, task heads, DPR encoders)",
    ("models/resolve.py", "resolve"): "the same, for resolving a name",
    ("models/openai_backend.py", "__init__"): "OpenAIGenerator built directly from Python",
    ("models/backend_options.py", "backend_values"): "a backend's options asked for without a configuration",
    ("retrieval/jvm.py", "heap_option"): "the JVM: one per process, started once with the environment's options "
                                         "(CQ_JVM_XMX, no flag)",
    ("retrieval/jvm.py", "setup"): "the same (CQ_DEBUG)",
    ("retrieval/lucene.py", "_debug"): "the same (Anserini's indexer in the JVM)",
    ("chat/session.py", "__init__"): "Session built from Python without a configuration",
    ("train/rerank.py", "train_rerank"): "a trainer's start (cq train rerank: where the offline cross-encoder's "
                                         "float copy is cached)",
    ("train/span_reader.py", "train_reader"): "a trainer's start (cq train reader: the same float copy, when it "
                                              "starts from the offline cross-encoder)",
    ("train/detector.py", "train_detect"): "a trainer's start (cq train detect: the same)",
    ("train/combiner.py", "train_combiner"): "a trainer's start (cq train combiner: its device is its own setting)",
}


def _calls(path: Path, wanted) -> list[tuple[str, int]]:
    """(function, line) of every call ``wanted(callee node)`` accepts in ``path``, by the innermost enclosing
    function."""
    tree = ast.parse(path.read_text())
    found = []

    def walk(node, function):
        for child in ast.iter_child_nodes(node):
            name = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else function
            if isinstance(child, ast.Call) and wanted(child.func):
                found.append((function, child.lineno))
            walk(child, name)

    walk(tree, "<module>")
    return found


def _from_env(func) -> bool:
    return isinstance(func, ast.Attribute) and func.attr == "from_env"


def _ambient(func) -> bool:
    called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
    return called in ("current", "activate", "reset")


def test_only_the_edges_build_a_configuration_from_the_environment():
    wrong = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        for function, line in _calls(path, _from_env):
            if (rel, function) not in EDGES and rel != "config.py":
                wrong.append(f"cqtools/{rel}:{line} ({function}) builds a configuration from the environment; take "
                             f"the one you were given as an argument")
    assert not wrong, "\n".join(wrong)


def test_no_process_wide_configuration_is_kept_set_or_read():
    """config.current(), activate() and reset() are gone; no module calls them or keeps a configuration global."""
    from cqtools import config

    assert not any(hasattr(config, name) for name in ("current", "activate", "reset", "_CURRENT"))
    calls = [f"cqtools/{path.relative_to(ROOT).as_posix()}:{line}" for path in sorted(ROOT.rglob("*.py"))
             for _, line in _calls(path, _ambient)]
    assert calls == []


def test_the_walks_see_a_read(tmp_path):
    """The walks are not blind: a build from the environment, and an ambient read, are found and named."""
    module = tmp_path / "m.py"
    module.write_text("from cqtools.config import RunConfig, current\n\ndef f():\n    return RunConfig.from_env()\n\n"
                      "def g():\n    return current().device\n")
    assert _calls(module, _from_env) == [("f", 4)]
    assert _calls(module, _ambient) == [("g", 7)]


def test_every_edge_still_builds_one():
    """An edge that no longer builds a configuration leaves the list (so the list stays the truth)."""
    seen = {(path.relative_to(ROOT).as_posix(), function) for path in ROOT.rglob("*.py")
            for function, _ in _calls(path, _from_env)}
    assert set(EDGES) <= seen, sorted(set(EDGES) - seen)


def test_a_command_builds_its_configuration_once_from_its_flags(runner):
    """The flags' callbacks only record; run_config builds the value once per command, flags over the
    environment, and two commands in one process never see each other's (no leak: it was a process global)."""
    import click

    from cqtools.cli.options import device_options, load_options, max_input_option, run_config

    seen = []

    @click.command()
    @device_options
    @load_options
    @max_input_option
    def cmd(device, dtype):
        first = run_config()
        assert run_config() is first  # one value for the whole command
        seen.append((first.device, first.trust_remote_code, first.max_input_tokens))

    assert runner.invoke(cmd, ["--device", "cpu", "--trust-remote-code", "--max-input-tokens", "64"]).exit_code == 0
    assert runner.invoke(cmd, [], env={"CQ_MAX_INPUT_TOKENS": "32"}).exit_code == 0
    assert seen == [("cpu", True, 64), ("auto", False, 32)]


@pytest.mark.parametrize("args", [["--api-base", "http://127.0.0.1:9/v1"]])
def test_cq_models_shows_the_commands_own_server(runner, args):
    """`cq models --api-base URL` reported OPENAI_BASE_URL's server for an openai: model once the configuration
    was no longer a process global; the backend's status row now gets the command's configuration."""
    import orjson

    from cqtools.cli import cli

    result = runner.invoke(cli, ["models", "--model", "openai:some-model", *args])
    assert result.exit_code == 0, result.output
    row = orjson.loads(result.stdout.splitlines()[0])
    assert row["api_base"] == "http://127.0.0.1:9/v1"
