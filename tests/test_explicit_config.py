"""Issue 34, item 4: the run configuration is passed, not read from the air. A command builds its RunConfig once
and hands it to the stage, the stage to the loaders, the loader to the model, which keeps it; the process's
ambient configuration (``cqtools.config.current()``) is read only at the edges listed here. A new read anywhere
else fails this test: pass the configuration you were given instead."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "cqtools"

# (module, function) pairs allowed to read current(), and why. Everything under cqtools/cli/ is a command's
# start (it builds the configuration from its flags), so it is allowed as a whole.
EDGES = {
    ("registry.py", "build"): "Method.build(config=None): a Python caller's default",
    ("stages/common.py", "split_config"): "a stage's build() called from Python without a configuration",
    ("stream/__init__.py", "run_stream"): "run_stream() called from Python without a configuration",
    ("runrecord.py", "build"): "a run record written for a Python caller's run",
    ("models/load.py", "run_config"): "the loaders' default for a Python caller who passes none (every loader: "
                                      "generators, cross-encoders, encoders, task heads, DPR encoders)",
    ("models/resolve.py", "resolve"): "the same, for resolving a name",
    ("models/openai_backend.py", "__init__"): "OpenAIGenerator built directly from Python",
    ("models/backend_options.py", "backend_values"): "a backend's options asked for without a configuration",
    ("models/runtime.py", "set_max_input_tokens"): "a Python caller's shortcut that changes the ambient one",
    ("models/runtime.py", "set_load_options"): "the same",
    ("retrieval/jvm.py", "heap_option"): "the JVM: one per process, started once with the process's options",
    ("retrieval/jvm.py", "setup"): "the same",
    ("retrieval/lucene.py", "_debug"): "the same (Anserini's indexer in the JVM)",
    ("chat/session.py", "__init__"): "Session built from Python without a configuration",
    ("train/combiner.py", "train_combiner"): "a trainer's start (cq train combiner)",
}


def _reads(path: Path):
    """(function, line) of every ``current()`` call in ``path``, by the innermost enclosing function."""
    tree = ast.parse(path.read_text())
    found = []

    def walk(node, function):
        for child in ast.iter_child_nodes(node):
            name = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else function
            if isinstance(child, ast.Call):
                callee = child.func
                called = callee.id if isinstance(callee, ast.Name) else getattr(callee, "attr", None)
                if called == "current" and not child.args:
                    found.append((function, child.lineno))
            walk(child, name)

    walk(tree, "<module>")
    return found


def test_only_the_edges_read_the_ambient_configuration():
    wrong = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith("cli/"):
            continue
        for function, line in _reads(path):
            if (rel, function) not in EDGES:
                wrong.append(f"cqtools/{rel}:{line} ({function}) reads current(); take the configuration as an "
                             f"argument instead")
    assert not wrong, "\n".join(wrong)


def test_the_walk_sees_a_read(tmp_path):
    """The walk is not blind: a read in a function is found and named."""
    module = tmp_path / "m.py"
    module.write_text("from cqtools.config import current\n\ndef f():\n    return current().device\n")
    assert _reads(module) == [("f", 4)]


def test_every_edge_still_reads_it():
    """An edge that no longer reads current() leaves the list (so the list stays the truth)."""
    seen = {(path.relative_to(ROOT).as_posix(), function) for path in ROOT.rglob("*.py")
            for function, _ in _reads(path)}
    assert set(EDGES) <= seen, sorted(set(EDGES) - seen)
