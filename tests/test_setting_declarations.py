"""One declaration for every setting, not only a method's options (issue 43 item 1): a command's own flags, the
trainers' and the shared ones are generated from dataclass fields (cqtools/cli/declared.py), so the command line
and Python get one default. The walks below look at every command (the registry's trainers included), every
stage's ``build`` and every trainer configuration; each can fail (the last tests break them on purpose)."""
from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect

import click
import pytest

from .conftest import ROOT

# cq <command> -> the module whose build() is that stage from Python (docs/api.md)
STAGES = {"retrieve": "retrieve", "rerank": "rerank", "detect": "detect", "gen-cq": "gen_cq", "answer": "answer",
          "disambiguate": "disambiguate", "oracle": "oracle"}
# cq train NAME -> its configuration class
TRAINERS = {"detect": "DetectTrainConfig", "gen-cq": "GenCQTrainConfig", "reader": "ReaderTrainConfig",
            "combiner": "CombinerConfig"}


def _commands():
    from cqtools.cli import cli

    ctx = click.Context(cli)
    return ctx, {name: cli.get_command(ctx, name) for name in cli.list_commands(ctx)}


def _flag_default(param):
    """What the command gets when the flag is not given (a boolean flag's unset default is False)."""
    default = param.default
    if default is None or isinstance(default, (bool, int, float, str, tuple)):  # tuple: a repeatable flag's
        return default
    return False if getattr(param, "is_flag", False) else None


def _disagreements(command, fn) -> list[str]:
    """``name: cli=X python=Y`` for every parameter of ``fn`` that is also a flag of ``command`` with another
    default (a required parameter of ``fn`` has none to compare)."""
    signature = inspect.signature(fn).parameters
    out = []
    for param in command.params:
        if param.name not in signature or signature[param.name].default is inspect.Parameter.empty:
            continue
        cli_default, py_default = _flag_default(param), signature[param.name].default
        if cli_default != py_default:
            out.append(f"{command.name} --{param.name}: cli={cli_default!r} python={py_default!r}")
    return out


def test_every_stage_command_and_its_build_share_their_defaults():
    """`cq gen-cq` wrote pred-answers CQs while gen_cq.build() defaulted to llm; `cq retrieve --threads` was the CPU
    count and 1 from Python; `cq answer --seed` 0 and None from Python (its records' meta differed)."""
    _, commands = _commands()
    found = []
    compared = 0
    for name, module in STAGES.items():
        build = importlib.import_module(f"cqtools.stages.{module}").build
        found += _disagreements(commands[name], build)
        compared += sum(p.name in inspect.signature(build).parameters for p in commands[name].params)
    assert compared >= 15  # the walk sees the flags
    assert found == []


def test_gen_cq_from_python_picks_the_method_as_the_command_does():
    from cqtools.stages import gen_cq

    assert gen_cq.build.__defaults__[0] is None  # no method of its own: the command's rule decides
    assert gen_cq.default_method(None) == "pred-answers" and gen_cq.default_method("some/lm") == "llm"


def test_every_trainer_flag_is_its_configuration_field():
    """Each `cq train NAME` flag that is a field of the trainer's configuration has that field's default (the
    trainers' flags were written again in cli/train.py: 18 copies, and `cq train gen-cq` trained 1 epoch of
    batch 8 where GenCQTrainConfig said 3 of 16)."""
    from cqtools import train

    _, commands = _commands()
    group = commands["train"]
    ctx = click.Context(group)
    found, compared = [], 0
    for name, config_name in TRAINERS.items():
        command = group.get_command(ctx, name)
        fields = {f.name: f for f in dataclasses.fields(getattr(train, config_name))}
        for param in command.params:
            if param.name in fields and fields[param.name].default is not dataclasses.MISSING:
                compared += 1
                if _flag_default(param) != fields[param.name].default:
                    found.append(f"cq train {name} --{param.name}: cli={_flag_default(param)!r} "
                                 f"{config_name}={fields[param.name].default!r}")
    assert compared >= 40
    assert found == []


def _declared_settings(plain: bool = True) -> dict[str, set]:
    """{name: {repr(default)}} of every declared setting: the registry's method options and the settings
    dataclasses the commands' flags are generated from (``plain``: the run configuration's and the stream engine's
    plain fields too)."""
    from cqtools import registry, train
    from cqtools.chat.session import ChatOptions
    from cqtools.config import RunConfig
    from cqtools.score.settings import BootstrapOptions
    from cqtools.show import ShowSettings
    from cqtools.stages.options import CommandSettings
    from cqtools.stages.rerank import RerankSettings
    from cqtools.stages.retrieve import RetrieveSettings
    from cqtools.stream.spec import StreamSpec

    from .test_option_declarations import method_option_defaults

    declared = method_option_defaults()
    for cls in (CommandSettings, RetrieveSettings, RerankSettings, ShowSettings, ChatOptions, BootstrapOptions,
                train.DetectTrainConfig, train.GenCQTrainConfig, train.ReaderTrainConfig, train.CombinerConfig):
        for opt in registry.schema_of(cls):
            if opt.default is not None and registry.OPTION_META in cls.__dataclass_fields__[opt.name].metadata:
                declared.setdefault(opt.name, set()).add(repr(opt.default))
    for cls in (RunConfig, StreamSpec) if plain else ():  # plain fields: the run configuration's and the stream engine's defaults
        for f in dataclasses.fields(cls):
            if f.default is not dataclasses.MISSING and f.default is not None:
                declared.setdefault(f.name, set()).add(repr(f.default))
    return declared


def _flag_name(call: ast.Call) -> str | None:
    """The parameter name a ``click.option(...)`` call gives (its explicit name, else its long flag's)."""
    names = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    plain = [n for n in names if not n.startswith("-")]
    if plain:
        return plain[0]
    longs = [n.split("/")[0] for n in names if n.startswith("--")]
    return longs[0][2:].replace("-", "_") if longs else None


def copied_flag_defaults(root=ROOT / "cqtools") -> list[str]:
    """``path:line --name=value`` of every click option written with a literal default that a declaration
    already holds (write the flag with cli/declared.py instead)."""
    declared = _declared_settings()
    out = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "option"
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "click"):
                continue
            default = next((k.value for k in node.keywords if k.arg == "default"), None)
            if not isinstance(default, ast.Constant) or default.value is None:
                continue
            name = _flag_name(node)
            if name in declared and repr(default.value) in declared[name]:
                out.append(f"{path.relative_to(root.parent).as_posix()}:{node.lineno} --{name}={default.value!r}")
    return out


# Library signatures whose literal default is the model layer's own call shape (a Generator's max_new_tokens, top_p and
# num_beams, a loader's kind): the model layer stands below the methods that declare those options, which pass their
# values; and what another helper rewrites now (issue 55: the trainers' signatures).
OWN_DEFAULTS = ("cqtools/models/", "cqtools/protocols.py")
LEFT_TO_ISSUE_55 = {"cqtools/train/cq_generator.py cq_examples targets='auto'"}


def copied_signature_defaults(root=ROOT / "cqtools") -> list[str]:
    """``path name param=value`` of every library function whose signature writes a literal default that a declared
    option of that name holds (take the declared options object, or default to its field: ``CommandSettings.seed``)."""
    declared = _declared_settings(plain=False)  # the declared options: what a signature reads, not types again
    out = []
    for path in sorted(root.rglob("*.py")):
        where = path.relative_to(root.parent).as_posix()
        if where.startswith(OWN_DEFAULTS):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            args = node.args
            positional = args.posonlyargs + args.args
            pairs = [*zip(positional[len(positional) - len(args.defaults):], args.defaults),
                     *((a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None)]
            for arg, default in pairs:
                if (isinstance(default, ast.Constant) and default.value is not None and arg.arg in declared
                        and repr(default.value) in declared[arg.arg]):
                    found = f"{where} {node.name} {arg.arg}={default.value!r}"
                    if found not in LEFT_TO_ISSUE_55:
                        out.append(found)
    return out


def test_no_library_signature_types_a_declared_default_again():
    assert copied_signature_defaults() == []


def test_the_signature_walk_finds_a_copy(tmp_path):
    pkg = tmp_path / "cqtools"
    pkg.mkdir()
    (pkg / "m.py").write_text("def f(x, seed=0, *, n_boot=1000, reader='auto', fine=7):\n    pass\n"
                              "def g(seed=CommandSettings.seed):\n    pass\n")
    assert copied_signature_defaults(pkg) == ["cqtools/m.py f seed=0", "cqtools/m.py f n_boot=1000",
                                              "cqtools/m.py f reader='auto'"]


def test_no_flag_writes_a_declared_default_again():
    assert len(_declared_settings()) > 60  # the walk sees methods, commands and trainers
    assert copied_flag_defaults() == []


def test_the_flag_walk_finds_a_copy(tmp_path):
    pkg = tmp_path / "cqtools"
    pkg.mkdir()
    (pkg / "m.py").write_text('import click\nopt = click.option("--epochs", type=int, default=3)\n'
                              'other = click.option("--hits", default=100)\nfine = click.option("--nothing", default=7)\n')
    assert copied_flag_defaults(pkg) == ["cqtools/m.py:2 --epochs=3", "cqtools/m.py:3 --hits=100"]


def test_a_declared_flag_is_its_declaration():
    """The generated flag carries the declaration's default, type, limits, help and shown default."""
    from click.testing import CliRunner

    from cqtools.cli.declared import declared_flags
    from cqtools.registry import option

    @dataclasses.dataclass(frozen=True)
    class Settings:
        hits: int = option(100, "Passages to keep.", min=1)
        threads: int = option(4, "Threads.", min=1, shown="number of CPUs")
        fast: bool = option(False, "Go fast.")

    @click.command()
    @declared_flags(Settings)
    def cmd(hits, threads, fast):
        click.echo(f"{hits} {threads} {fast}")

    runner = CliRunner()
    assert runner.invoke(cmd, []).output == "100 4 False\n"
    assert runner.invoke(cmd, ["--hits", "5", "--fast"]).output == "5 4 True\n"
    assert runner.invoke(cmd, ["--hits", "0"]).exit_code == 2
    shown = runner.invoke(cmd, ["--help"]).output
    assert "Passages to keep." in shown and "[default: 100; x>=1]" in shown and "number of CPUs" in shown
    with pytest.raises(ValueError, match="declares no nothing"):
        declared_flags(Settings, "nothing")


# --- preset rows: the paper's method setting, its input layout, or the command's own ---------------------------

def test_a_preset_keeps_its_command_rows_when_the_method_is_replaced(runner, caplog):
    """`cq retrieve --preset toc --method bm25` kept hits 100 only because --hits defaults to 100: the command's rows
    were dropped with the method's. Now they are kept; the method's own (fusion) are not."""
    from cqtools import presets

    rows = presets.values("toc", "retrieve")
    assert presets.for_method("toc", "retrieve", rows, {"method": "bm25"}) == {"hits": 100}
    assert "options for hybrid (fusion) are not applied; its rows for any method still apply (hits)" in caplog.text


def test_cq_retrieve_with_a_preset_and_another_method_takes_the_presets_hits():
    from cqtools.cli import cli
    from cqtools.cli.method_flags import apply_preset

    ctx = click.Context(cli.get_command(click.Context(cli), "retrieve"))
    ctx.set_parameter_source("method", click.core.ParameterSource.COMMANDLINE)
    ctx.set_parameter_source("hits", click.core.ParameterSource.DEFAULT)
    kwargs = {"method": "bm25", "hits": 7, "fusion": None}
    with ctx:
        apply_preset("retrieve", "toc", kwargs)
    assert kwargs["hits"] == 100 and kwargs["fusion"] is None and kwargs["method"] == "bm25"


def test_the_papers_input_layout_reaches_any_method_that_declares_it():
    """`--preset askcq --method llm` gives the LM AskCQ's inputs (the grid spelled them out as ASKCQ_LLM); the
    fine-tuned BART's decoding (beam 4, 32 tokens) stays with seq2seq."""
    from cqtools import presets

    rows = presets.values("askcq", "gen-cq")
    llm = presets.for_method("askcq", "gen-cq", rows, {"method": "llm"})
    assert llm == {"with_answers": "pred", "max_passage_tokens": 1024, "n_passages": 100, "primer": False,
                   "passage_cut": "last",
                   "two_options": "comma"}
    own = presets.for_method("askcq", "gen-cq", rows, {})
    assert "primer" not in own and own["num_beams"] == 4 and own["input_layout"] == "askcq"  # seq2seq has no primer
    assert "ASKCQ_LLM" not in (ROOT / "experiments.mk").read_text()


def test_every_preset_row_says_what_it_applies_to_and_is_checked():
    from cqtools import presets
    from cqtools.presets import COMMAND, LAYOUT, Preset, Setting, check

    retrieve_rows = [s for s in presets.get("toc").settings if s.command == "retrieve"]
    assert {s.option: s.applies for s in retrieve_rows} == {"method": "method", "fusion": "method", "hits": COMMAND}
    for bad, message in (
            (Setting("retrieve", "hits", 100, "x"), "a setting of the command itself is a command row"),
            (Setting("retrieve", "fusion", "nope", "x"), "takes one of"),
            (Setting("retrieve", "hitz", 5, "x", applies=COMMAND), "is not a setting of the command itself"),
            (Setting("gen-cq", "primer", False, "x"), "cq gen-cq method seq2seq has no option 'primer'"),
            (Setting("gen-cq", "nothing", 1, "x", applies=LAYOUT), "no method of cq gen-cq has option 'nothing'"),
            (Setting("answer", "reader_name", "nope", "x", applies=COMMAND), "takes one of"),
            (Setting("detect", "threshold", 0.5, "x", applies="sometimes"), "applies to 'sometimes'")):
        chooser = Setting("retrieve", "method", "hybrid", "x") if bad.command == "retrieve" else \
            Setting("gen-cq", "method", "seq2seq", "x")
        with pytest.raises((ValueError, Exception), match=message):
            check(Preset("bad", "h", "p", "c", (chooser, bad)))


def test_one_flag_is_one_option_across_a_registrys_methods():
    """cq score's flags come from every task's options: a new task option flagged --k beside retrieval's `ks` (also
    --k) gave the command two --k and refused both (found by adding a metric, issue 43's count of files touched)."""
    from cqtools.registry import Registry, option

    @dataclasses.dataclass(frozen=True)
    class First:
        ks: str = option("5", flag="--k")

    @dataclasses.dataclass(frozen=True)
    class Second:
        k: int = option(1)

    @dataclasses.dataclass(frozen=True)
    class Same:
        ks: str = option("10", flag="--k")

    registry = Registry("score task", "register_nothing")
    registry._plugins_loaded = True
    registry.register("first", lambda options, config: None, options=First)
    registry.register("same", lambda options, config: None, options=Same)  # the same option name: one flag
    with pytest.raises(ValueError, match="option k takes the flag --k, which score task (first|same) gives its option ks"):
        registry.register("second", lambda options, config: None, options=Second)


def test_every_declared_trainer_setting_is_a_flag_of_its_command():
    """A field declared in a trainer's configuration is a `cq train NAME` flag without another edit (the flags
    after the shared ones are every declared field not placed yet, in field order; a list kept by hand in
    cli/train.py left a new field without a flag, and nothing said so)."""
    from cqtools import train
    from cqtools.registry import OPTION_META

    _, commands = _commands()
    group = commands["train"]
    ctx = click.Context(group)
    missing = []
    for name, config_name in TRAINERS.items():
        cls = getattr(train, config_name)
        flags = {p.name for p in group.get_command(ctx, name).params}
        missing += [f"cq train {name}: {f.name}" for f in dataclasses.fields(cls)
                    if OPTION_META in f.metadata and f.name not in flags]
    assert missing == []


def test_what_a_run_record_ignores_is_marked_where_it_is_declared():
    """No list of names kept apart from the settings (there were two NOT_SHAPING lists): the run configuration's
    fields, the stream engine's, the backends', the methods' and cq retrieve's own each carry their mark, and the
    run record and the configuration's comparison derive theirs from the marks."""
    import dataclasses as dc

    from cqtools import runrecord
    from cqtools.config import RunConfig
    from cqtools.registry import schema_of
    from cqtools.stages.retrieve import RetrieveSettings
    from cqtools.stream import StreamSpec
    from cqtools.stream.spec import not_shaping

    ignored = not_shaping("retrieve", {"method": "hybrid"})
    assert {"batch_size", "on_error", "quiet", "resume", "force_resume", "output", "device", "threads", "run_file",
            "run_tag", "bm25_scorer", "api_base", "api_timeout", "concurrency"} <= ignored
    assert not ({"hits", "query_field", "method", "model", "k1", "b", "shard", "max_input_tokens"} & ignored)
    assert {o.name for o in schema_of(RetrieveSettings) if not o.shaping} == {"threads", "run_file", "run_tag"}
    assert {f.name for f in dc.fields(StreamSpec) if f.metadata.get("shaping") is False} <= ignored
    assert "threads" not in not_shaping("detect", {"method": "classifier"})  # cq retrieve's own mark
    assert {"api_base", "concurrency", "device"} <= runrecord.config_not_shaping()
    config = RunConfig(device="cpu")
    assert "device" not in config.shaping() and "max_input_tokens" in config.shaping()


def test_a_methods_mark_does_not_hide_another_methods_option_of_that_name():
    """The marks are read from the method the parameters chose: a plugin method marking its `threshold` shaping=False
    must not let `cq detect --method clam --resume` continue under another --threshold (a review of the derived
    set: by name across every registry, it did)."""
    from cqtools import runrecord
    from cqtools.registry import DETECTORS, option
    from cqtools.stream.spec import not_shaping

    @dataclasses.dataclass(frozen=True)
    class Loose:
        threshold: float = option(0.5, shaping=False)

    DETECTORS.names()  # cq's own first
    DETECTORS.register("loose", lambda options, config: None, options=Loose)
    try:
        assert "threshold" in not_shaping("detect", {"method": "loose", "threshold": 0.1})
        assert "threshold" not in not_shaping("detect", {"method": "clam", "threshold": -0.3})
        params = {"method": "clam", "threshold": -0.3}
        assert runrecord.build("detect", params, ignore=not_shaping("detect", params))["params"]["threshold"] == -0.3
    finally:
        DETECTORS._methods.pop("loose", None)


def test_a_layout_row_is_not_forced_on_a_method_whose_schema_refuses_its_value():
    """CLAM's closed book (answer n_passages 0) under `cq answer --preset clam --mode single` made every reader fail
    ("must be in 1..inf, not 0"; found by a review): a layout row is kept only where the chosen method takes its
    value, and is named among the rows not applied otherwise."""
    from cqtools import presets

    rows = presets.values("clam", "answer")
    for mode in ("single", "multi", "cq", "long"):
        assert "n_passages" not in presets.for_method("clam", "answer", rows, {"mode": mode})
    assert presets.for_method("clam", "answer", rows, {}) == rows
