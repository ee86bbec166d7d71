"""One declaration per option (issue 34): a method's options are a frozen dataclass beside the method, and
the schema, flags, validation, meta and docs derive from it; no option default is written twice; every
environment variable cq reads is documented and wired; a preset never configures a method it does not run."""
from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import orjson
import pytest

from .conftest import ROOT, jsonl

QUESTIONS = [{"id": "a", "question": "Who played the Joker?"}, {"id": "b", "question": "What is the capital of France?"}]


# --- the declaration is the schema ---------------------------------------------------------------------

def test_a_dataclass_declares_a_methods_options_and_its_factory_gets_them():
    from cqtools.errors import InputError
    from cqtools.registry import Registry, option

    @dataclasses.dataclass(frozen=True)
    class LengthOptions:
        """long questions are ambiguous"""

        threshold: float = option(12.0, "label = words > threshold", min=0)
        unit: str = option("words", "what is counted", choices=("words", "chars"))
        limit: int | None = option(None, "at most this many", flag="--cap")

    seen = []
    registry = Registry("detector", "register_nothing")
    registry._plugins_loaded = True
    registry.register("length", lambda options, config: seen.append((options, config)) or "built",
                      options=LengthOptions)
    method = registry.get("length")
    assert method.help == "long questions are ambiguous"
    assert [(o.name, o.type, o.default, o.cli_flag) for o in method.options] == [
        ("threshold", float, 12.0, "--threshold"), ("unit", str, "words", "--unit"), ("limit", int, None, "--cap")]
    assert registry.build("length", "CONFIG", threshold="3", unit="chars") == "built"
    assert seen == [(LengthOptions(threshold=3.0, unit="chars"), "CONFIG")]
    with pytest.raises(InputError, match="did you mean 'threshold'"):
        registry.build("length", "CONFIG", thresold=3)
    with pytest.raises(InputError, match="takes one of words, chars"):
        registry.build("length", "CONFIG", unit="lines")
    with pytest.raises(InputError, match="must be in 0"):
        registry.build("length", "CONFIG", threshold=-1)


def test_every_builtin_stage_method_declares_its_options_with_a_dataclass():
    from cqtools import registry

    stage_kinds = (registry.DETECTORS, registry.CQ_METHODS, registry.ANSWER_MODES, registry.READERS,
                   registry.ORACLES, registry.DISAMBIGUATORS)
    plain = [f"{r.kind} {m.name}" for r in stage_kinds for m in r.methods()
             if m.plugin == "cqtools" and m.options_class is None]
    assert plain == []


def _literal(node):
    try:
        return True, ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False, None


def _written_defaults(tree):
    """(name, literal default, line) of every parameter default and class-level field default written as a
    literal (a reference to a shared constant or a declaration is one source, not a copy)."""
    for node in ast.walk(tree):
        pairs = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            positional = args.posonlyargs + args.args
            pairs += zip(positional[len(positional) - len(args.defaults):], args.defaults)
            pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
            pairs = [(a.arg, d) for a, d in pairs]
        elif isinstance(node, ast.ClassDef):
            pairs = [(s.target.id, s.value) for s in node.body
                     if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name) and s.value is not None]
        for name, default in pairs:
            ok, value = _literal(default)
            if ok:
                yield name, value, default.lineno


# The model layer's call protocol (Generator.generate's max_new_tokens, top_p, num_beams; load_generator's
# kind) has defaults of its own that methods always pass explicitly; they are that protocol's, not a copy of a
# method option (cqtools/protocols.py documents them). Every other name is checked there too (a backend's option
# written again in models/ is caught).
PROTOCOL = ("cqtools/models/", "cqtools/protocols.py")
PROTOCOL_NAMES = frozenset({"kind", "max_new_tokens", "top_p", "num_beams"})


def method_option_defaults() -> dict[str, set]:
    """{name: {repr(default)}} of every option cq's own registered methods declare with a default."""
    from cqtools import registry

    defaults: dict[str, set] = {}
    for reg in registry.ALL:
        if reg is registry.TRAINERS:  # registered by their settings classes: tests/test_setting_declarations.py
            continue
        for method in reg.methods():
            for opt in method.options if method.plugin == "cqtools" else ():
                if opt.default is not None:
                    defaults.setdefault(opt.name, set()).add(repr(opt.default))
    return defaults


def test_no_option_default_is_written_twice():
    """Every registered option's default lives in its declaration only: no parameter or field of the same name
    repeats it as a literal anywhere in cqtools (an ast walk; the closing note of issue 34 quotes it)."""
    defaults = method_option_defaults()
    assert len(defaults) > 40  # the walk sees the declarations
    copies = []
    for path in sorted((ROOT / "cqtools").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        protocol = PROTOCOL_NAMES if rel.startswith(PROTOCOL) else frozenset()
        for name, value, line in _written_defaults(ast.parse(path.read_text())):
            if name in defaults and repr(value) in defaults[name] and name not in protocol:
                copies.append(f"{rel}:{line} {name}={value!r}")
    assert copies == [], "option defaults written again (use the declaration or a shared constant):\n" + \
        "\n".join(copies)


# --- presets and environment variables are wired ---------------------------------------------------------

def test_cq_preset_in_the_environment_is_the_preset(runner):
    from cqtools.cli import cli

    result = runner.invoke(cli, ["detect", "--method", "always", "-q"], input=jsonl(QUESTIONS),
                           env={"CQ_PRESET": "clam"})
    assert result.exit_code == 0, result.output
    records = [orjson.loads(line) for line in result.stdout.splitlines()]
    assert [r["meta"]["presets"]["detect"] for r in records] == ["clam", "clam"]


def test_a_preset_never_configures_a_method_the_user_replaced(runner):
    """``--preset clam --method never`` runs never with never's threshold, not CLAM's -0.3 (which labelled
    every question ambiguous), and says so once."""
    from cqtools.cli import cli

    result = runner.invoke(cli, ["detect", "--preset", "clam", "--method", "never"], input=jsonl(QUESTIONS))
    assert result.exit_code == 0, result.output
    records = [orjson.loads(line) for line in result.stdout.splitlines()]
    assert [(r["ambiguity"]["label"], r["ambiguity"]["threshold"]) for r in records] == [(False, 0.5)] * 2
    assert "--method never was chosen, so the preset's options for clam (threshold) are not applied" in result.stderr


def test_each_model_role_has_its_own_variable(runner, tiny_classifier):
    """CQ_MODEL_DETECT names the LLM of --method llm/clam; the classifier reads CQ_MODEL_CLASSIFIER (both were
    CQ_MODEL_DETECT, so an LLM set for one was fed to the other)."""
    from cqtools.cli import cli

    env = {"CQ_MODEL_DETECT": "/nonexistent/llm", "CQ_MODEL_CLASSIFIER": tiny_classifier}
    result = runner.invoke(cli, ["detect", "-q"], input=jsonl(QUESTIONS), env=env)
    assert result.exit_code == 0, result.output
    meta = orjson.loads(result.stdout.splitlines()[0])["meta"]["detect"]
    assert meta["method"] == "classifier" and meta["model"].endswith(Path(tiny_classifier).name)
    from cqtools.models.roles import ROLES

    assert len({r.env for r in ROLES}) == len(ROLES)


def _variables_read() -> set[str]:
    """Every CQ_* variable cq reads: the commands' flags, the method options, the roles, and the names the
    code passes to the environment reader."""
    import click

    from cqtools import registry
    from cqtools.cli import cli
    from cqtools.models.roles import ROLES

    found = {r.env for r in ROLES}
    found |= {o.env for reg in registry.ALL for m in reg.methods() for o in m.options if o.env}

    def walk(command, ctx):
        for param in command.params:
            envvars = param.envvar if isinstance(param.envvar, (list, tuple)) else [param.envvar]
            found.update(e for e in envvars if e)
        if isinstance(command, click.Group):
            for name in command.list_commands(ctx):
                walk(command.get_command(ctx, name), ctx)

    walk(cli, click.Context(cli))
    assert {"CQ_INDEX", "CQ_PRESET", "CQ_MODEL_BERTSCORE", "CQ_MODEL_TRAIN_DETECT"} <= found
    for path in (ROOT / "cqtools").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("CQ_") \
                    and node.value.replace("_", "").isalnum() and node.value.isupper():
                found.add(node.value)
    return found - {"CQ_METHODS", "CQ_MODEL_"}  # the registry's name; the prefix of cq train's (walked above)


def test_docs_config_lists_every_variable_cq_reads():
    documented = (ROOT / "docs" / "config.md").read_text()
    missing = sorted(v for v in _variables_read() if f"`{v}`" not in documented)
    assert missing == []


def test_a_python_run_with_a_preset_notes_it_as_the_cli_does(tmp_path, runner):
    """The stream engine lives outside cli/ (cqtools/stream) and takes the preset from the stage: a Python run
    built with presets.stage writes meta.presets and names the preset in its run record, like `cq detect --preset`."""
    import json

    from cqtools import presets
    from cqtools.cli import cli
    from cqtools.stream import StreamSpec, run_stream

    stage = presets.stage("disambig-first", "detect", method="always")
    out = tmp_path / "py.jsonl"
    import io

    run_stream(stage, StreamSpec(resume=str(out)), stdin=io.BytesIO(jsonl(QUESTIONS).encode()))
    python_records = [orjson.loads(line) for line in out.read_text().splitlines()]
    cli_out = runner.invoke(cli, ["detect", "--preset", "disambig-first", "--method", "always", "-q"],
                            input=jsonl(QUESTIONS)).stdout
    cli_records = [orjson.loads(line) for line in cli_out.splitlines()]
    assert [r["meta"]["presets"] for r in python_records] == [{"detect": "disambig-first"}] * 2
    assert [r["meta"] for r in python_records] == [r["meta"] for r in cli_records]
    record = json.loads((tmp_path / "py.jsonl.cq.json").read_text())
    assert record["params"]["preset"] == "disambig-first" and record["command"] == "detect"


@pytest.mark.parametrize("preset", ["ambigqa", "refuel", "askcq"])
def test_reading_presets_keep_generated_answers_as_generated(preset):
    """Span grounding is a reader option with a row in each reading preset: the papers generate their answers
    freely, so under their presets an answer is never snapped to a passage span (under --preset askcq every
    option's answer was replaced by a span)."""
    from cqtools import presets
    from cqtools.stages.answer.options import GenerativeOptions

    rows = presets.values(preset, "answer")
    assert rows["grounding"] == "none" and GenerativeOptions.grounding == "span"
    # the row says so; no difference from the paper is left to mark (tests/test_preset_rows.py)
    assert any(s.option == "grounding" and "snaps" in s.source and not s.differs for s in presets.get(preset).settings)


def test_the_ambigqa_preset_reads_without_span_grounding(tiny_causal):
    from cqtools import presets

    records = [{"id": "a", "question": "Who played the Joker?",
                "passages": [{"id": "p1", "title": "Joker", "text": "Heath Ledger played the Joker in 2008."}]}]
    out = presets.stage("ambigqa", "answer", model=tiny_causal)(records)
    assert out[0]["meta"]["answer"]["grounding"] == "none"
    assert all(a["grounding"] == "none" for a in out[0]["answers"])


def test_a_classifier_is_never_fed_a_layout_its_card_does_not_name(tiny_classifier, tmp_path, runner):
    """`cq detect --preset askcq` gave the shipped question-only classifier 100 passages (recall 58.7 -> 7.2 on held-out
    questions); a card that says what the model reads makes that a one-line error, and without --passages the card's
    layout is used."""
    import json
    import shutil

    from cqtools.cli import cli

    model = tmp_path / "question-only"
    shutil.copytree(tiny_classifier, model)
    (model / "cq_train.json").write_text(json.dumps({"config": {"passages": 0, "max_length": 48}}))
    record = {**QUESTIONS[0], "passages": [{"id": "p", "title": "Joker", "text": "Heath Ledger played the Joker."}]}
    refused = runner.invoke(cli, ["detect", "--preset", "askcq", "--model", str(model)], input=jsonl([record]))
    assert refused.exit_code == 1 and "was trained on the question alone" in refused.stderr
    assert "--passages 100 would feed it what it never saw" in refused.stderr and "Traceback" not in refused.output
    ok = runner.invoke(cli, ["detect", "--model", str(model), "-q"], input=jsonl([record]))
    assert ok.exit_code == 0, ok.output
    assert orjson.loads(ok.stdout)["meta"]["detect"]["passages"] == 0


def test_the_askcq_preset_revises_the_question_as_the_release_does():
    """AskCQ's release writes "AQ Which film option?" (CQDataset.py:251); cq's default stays "AQ, Which film: option"."""
    from cqtools import presets
    from cqtools.stages.answer.questions import questions_of

    record = {"id": "a", "question": "Who played the Joker?", "passages": [{"id": "p", "title": "t", "text": "x"}],
              "cq": {"text": "Which film: The Dark Knight, or Joker?", "category": "Which film",
                     "options": ["The Dark Knight", "Joker"]}}
    rows = presets.values("askcq", "answer")
    assert [q.text for q in questions_of([record], "cq", False, rows["revised_question"])] == [
        "Who played the Joker? Which film The Dark Knight?", "Who played the Joker? Which film Joker?"]
    assert [q.text for q in questions_of([record], "cq")] == [
        "Who played the Joker?, Which film: The Dark Knight", "Who played the Joker?, Which film: Joker"]
