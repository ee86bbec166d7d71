"""Methods own their options (issue 22): typed schemas validate in build() and the CLI, generate the
flags, travel into the run record; the run configuration is one value, refused on resume when it differs;
built-ins and plugins register through the same hooks, and a broken plugin is skipped by name."""
from __future__ import annotations

import ast
import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from .conftest import ROOT, install_plugin, jsonl

QUESTIONS = [{"id": "a", "question": "Which city hosted the 2008 Summer Olympics?"},
             {"id": "b", "question": "Who played the Joker in the film that came out in 2019?"}]


# --- schemas: validation in build() and in the CLI -------------------------------------------------

def test_build_rejects_a_misspelled_option_naming_the_nearest():
    from cqtools.errors import InputError
    from cqtools.stages import detect

    with pytest.raises(InputError) as err:
        detect.build("always", thresold=0.9)
    assert str(err.value) == "detector always has no option 'thresold'; did you mean 'threshold'? (its options: threshold)"
    records = detect.build("always", threshold=0.9)([{"id": "x", "question": "q"}])
    assert records[0]["ambiguity"]["threshold"] == 0.9


def test_build_checks_types_choices_and_ranges():
    from cqtools.errors import InputError
    from cqtools.registry import CQ_METHODS, DETECTORS

    with pytest.raises(InputError, match="option threshold takes float, not 'high'"):
        DETECTORS.build("never", threshold="high")
    with pytest.raises(InputError, match="option options takes one of all, grounded"):
        CQ_METHODS.get("llm").values({"options": "some"})
    with pytest.raises(InputError, match=r"option n_passages must be in 0\.\.inf"):
        CQ_METHODS.get("llm").values({"n_passages": -1})
    with pytest.raises(InputError, match="has no option 'options'"):  # from-dqs reads no passages
        CQ_METHODS.build("from-dqs", options="grounded")


def test_every_stage_build_rejects_options_its_method_does_not_take():
    """answer, disambiguate, retrieve, oracle and gen-cq check before loading anything."""
    from cqtools.errors import InputError
    from cqtools.stages import answer, disambiguate, gen_cq, oracle, retrieve

    cases = [(lambda: answer.build("cq", "generative", selectd=True), "did you mean 'selected'"),
             (lambda: answer.build("long", "generative", verify=True), "has no option 'verify'"),
             (lambda: disambiguate.build("qd", tree=True), "disambiguation method qd has no option 'tree'"),
             (lambda: retrieve.build("bm25", index_dir="nowhere", k_1=1.0), "did you mean 'k1'"),
             (lambda: oracle.build("overlap", model="m"), "oracle method overlap has no option 'model'"),
             (lambda: gen_cq.build("llm", max_new_token=8), "did you mean 'max_new_tokens'")]
    for call, message in cases:
        with pytest.raises(InputError, match=message):
            call()


def cq(*args, input_text="", env=None):
    return subprocess.run([sys.executable, "-m", "cqtools", *args], input=input_text, capture_output=True, text=True,
                          cwd=ROOT, env={**os.environ, **(env or {})})


def test_cli_rejects_misspelled_and_inapplicable_options_in_one_line():
    typo = cq("detect", "--method", "always", "-O", "thresold=0.9", input_text=jsonl(QUESTIONS))
    assert typo.returncode == 2 and typo.stdout == ""
    assert "detector always has no option 'thresold'; did you mean 'threshold'?" in typo.stderr
    assert "Traceback" not in typo.stderr
    foreign = cq("detect", "--method", "never", "--passages", "2", input_text=jsonl(QUESTIONS))
    assert foreign.returncode == 2 and "--passages does not apply to --method never" in foreign.stderr
    given = cq("detect", "--method", "never", "-O", "threshold=-1", input_text=jsonl(QUESTIONS))
    assert given.returncode == 0, given.stderr
    assert [orjson.loads(x)["ambiguity"]["label"] for x in given.stdout.splitlines()] == [True, True]


def test_help_lists_each_method_option_with_its_default():
    out = cq("detect", "--help").stdout
    assert "--threshold" in out and "always 0.5" in out and "-O, --opt KEY=VALUE" in out
    rows = [orjson.loads(x) for x in cq("plugins", "--all", "--options").stdout.splitlines()]
    llm = next(r for r in rows if r["registry"] == "CQ method" and r["method"] == "llm")
    assert {o["name"]: o["default"] for o in llm["options"]}["max_new_tokens"] == 40


# --- a plugin's methods and backend, each with an option of its own, from the CLI ------------------

@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory):
    return install_plugin("cq_demo_plugin", tmp_path_factory.mktemp("site"))


def with_plugin(plugin_path, *args, input_text=""):
    return cq(*args, input_text=input_text, env={"PYTHONPATH": os.pathsep.join([plugin_path, str(ROOT)])})


def test_plugin_detector_option_from_the_cli(plugin_path):
    out = with_plugin(plugin_path, "detect", "--method", "length", "--unit", "char", input_text=jsonl(QUESTIONS))
    assert out.returncode == 0, out.stderr
    scores = [orjson.loads(x)["ambiguity"]["score"] for x in out.stdout.splitlines()]
    assert scores == [float(len(q["question"])) for q in QUESTIONS]
    bad = with_plugin(plugin_path, "detect", "--method", "length", "--unit", "byte", input_text=jsonl(QUESTIONS))
    assert bad.returncode == 2 and "'byte' is not one of 'word', 'char'" in bad.stderr


def test_plugin_cq_method_option_from_the_cli(plugin_path):
    out = with_plugin(plugin_path, "gen-cq", "--method", "fixed", "--category", "song", "--all",
                      input_text=jsonl(QUESTIONS))
    assert out.returncode == 0, out.stderr
    first = orjson.loads(out.stdout.splitlines()[0])
    assert first["cq"]["category"] == "song" and first["cq"]["text"].startswith("Which song: Which, or")


def test_plugin_backend_option_from_the_cli(plugin_path):
    reply = "Which year: 2008, or 2012?"
    out = with_plugin(plugin_path, "gen-cq", "--method", "llm", "--model", "echo:any", "--backend-opt",
                      f"reply= {reply}", "--all", input_text=jsonl(QUESTIONS))
    assert out.returncode == 0, out.stderr
    cqs = [orjson.loads(x)["cq"] for x in out.stdout.splitlines()]
    assert [c["options"] for c in cqs] == [["2008", "2012"]] * 2
    typo = with_plugin(plugin_path, "gen-cq", "--method", "llm", "--model", "echo:any", "--backend-opt", "reploy=x",
                       "--all", input_text=jsonl(QUESTIONS))
    assert typo.returncode == 1 and "model backend echo has no option 'reploy'; did you mean 'reply'?" in typo.stderr
    status = with_plugin(plugin_path, "models", "--model", "echo:any")
    assert status.returncode == 0, status.stderr


def test_plugin_score_task_option_from_the_cli(plugin_path):
    out = with_plugin(plugin_path, "score", "--task", "long-questions", "-O", "words=9", input_text=jsonl(QUESTIONS))
    assert out.returncode == 0, out.stderr
    summary = orjson.loads(out.stdout)
    assert summary["long"] == 50.0 and summary["words"] == 9
    typo = with_plugin(plugin_path, "score", "--task", "long-questions", "-O", "word=9", input_text=jsonl(QUESTIONS))
    assert typo.returncode == 2 and "score task long-questions has no option 'word'; did you mean 'words'?" in typo.stderr


def test_a_plugin_weight_format_loads_a_local_model_directory(plugin_path, tmp_path):
    """A local model directory in a plugin's weight format is recognised and loaded by it (no loader of cq's
    is edited): `cq models` names the format, and a stage's --model DIR generates through it."""
    model = tmp_path / "replier"
    model.mkdir()
    (model / "reply.txt").write_text("Which year: 2008, or 2012?\n")
    status = with_plugin(plugin_path, "models", "--model", str(model))
    assert status.returncode == 0, status.stderr
    assert orjson.loads(status.stdout.splitlines()[0])["format"] == "reply-file"
    out = with_plugin(plugin_path, "gen-cq", "--method", "llm", "--model", str(model), "--all",
                      input_text=jsonl(QUESTIONS))
    assert out.returncode == 0, out.stderr
    assert [orjson.loads(x)["cq"]["options"] for x in out.stdout.splitlines()] == [["2008", "2012"]] * 2


def test_a_score_tasks_options_are_flags_of_its_own(plugin_path):
    """A task's options dataclass is its flags (the plugin's --words as cq's --lambda); a flag the chosen task
    does not declare is an error naming the options it has, never silently dropped."""
    out = with_plugin(plugin_path, "score", "--task", "long-questions", "--words", "9", input_text=jsonl(QUESTIONS))
    assert out.returncode == 0, out.stderr
    assert orjson.loads(out.stdout)["words"] == 9
    assert "long-questions: a question longer than this many words is long" in \
        " ".join(with_plugin(plugin_path, "score", "--help").stdout.split())
    for task, flag, value, theirs in [("cbqa", "--words", "9", "--matcher, --unique-answers"),
                                      ("detect", "--lambda", "0.5", "--threshold, --sweep")]:
        wrong = with_plugin(plugin_path, "score", "--task", task, flag, value, input_text=jsonl(QUESTIONS))
        assert wrong.returncode == 2 and f"{flag} does not apply to --task {task} (its options: {theirs})" in \
            wrong.stderr, wrong.stderr
    low = with_plugin(plugin_path, "score", "--task", "long-questions", "--words", "0", input_text=jsonl(QUESTIONS))
    assert low.returncode != 0 and "words" in low.stderr


# --- broken plugins are skipped by name (issue 26, item 4) -----------------------------------------

BROKEN = {
    "import_error": "raise RuntimeError('boom at import')\n",
    "bad_signature": "from cqtools.plugins import hookimpl\n\n@hookimpl\ndef register_detectors(regster):\n    pass\n",
    "hook_raises": "from cqtools.plugins import hookimpl\n\n@hookimpl\ndef register_detectors(register):\n"
                   "    register('fine', lambda threshold=0.5: None)\n    raise ValueError('hook failed')\n",
    "takes_builtin": "from cqtools.plugins import hookimpl\n\n@hookimpl\ndef register_detectors(register):\n"
                     "    register('always', lambda threshold=0.5: None)\n",
    "syntax_error": "def (:\n",
    "missing_module": None,  # the entry point names a module that is not installed
}


@pytest.fixture(scope="module")
def broken_site(tmp_path_factory):
    site = tmp_path_factory.mktemp("broken")
    for name, code in BROKEN.items():
        if code is not None:
            (site / f"cqbroken_{name}.py").write_text(code)
        dist = site / f"cqbroken_{name}-0.1.dist-info"
        dist.mkdir()
        (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: cqbroken-{name.replace('_', '-')}\nVersion: 0.1\n")
        (dist / "entry_points.txt").write_text(f"[cqtools.plugins]\n{name} = cqbroken_{name}\n")
    return str(site)


def test_a_broken_plugin_is_skipped_with_one_warning_naming_it(broken_site):
    env = {"PYTHONPATH": os.pathsep.join([broken_site, str(ROOT)])}
    helped = cq("--help", env=env)
    assert helped.returncode == 0 and "Traceback" not in helped.stderr
    out = cq("detect", "--method", "never", input_text=jsonl(QUESTIONS), env=env)
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    for name in BROKEN:
        line = next((x for x in out.stderr.splitlines() if f"cqbroken-{name.replace('_', '-')} 0.1" in x), None)
        assert line is not None and f"(entry point {name} = cqbroken_{name})" in line, (name, out.stderr)
    listed = [orjson.loads(x) for x in cq("plugins", env=env).stdout.splitlines()]
    broken = {r["plugin"] for r in listed if r.get("broken")}
    assert broken == {f"cqbroken-{n.replace('_', '-')} 0.1" for n in BROKEN}
    assert not any(r.get("method") == "fine" for r in listed)  # the failed hook's registrations are undone
    always = cq("detect", "--method", "always", input_text=jsonl(QUESTIONS), env=env)
    assert [orjson.loads(x)["ambiguity"]["score"] for x in always.stdout.splitlines()] == [1.0, 1.0]


# --- the run configuration and the run record -----------------------------------------------------

def test_python_api_resume_records_the_real_parameters(tmp_path):
    from cqtools.cli.stream import StreamSpec, run_stream
    from cqtools.stages import detect

    out = tmp_path / "out.jsonl"
    stdin = __import__("io").BytesIO(jsonl(QUESTIONS).encode())
    run_stream(detect.build("never", threshold=-2.0), StreamSpec(resume=str(out), quiet=True), stdin=stdin)
    record = json.loads((tmp_path / "out.jsonl.cq.json").read_text())
    assert record["command"] == "detect"
    assert record["params"]["method"] == "never" and record["params"]["threshold"] == -2.0
    assert record["config"]["padded_batches"] is False and record["complete"] is True
    from cqtools.config import RunConfig

    assert set(record["config"]) == set(RunConfig().as_dict())  # the whole configuration is recorded


def test_fields_that_change_no_record_do_not_refuse_a_resume(tmp_path):
    """--device, the API pace, cache places: recorded, not compared (like --batch-size)."""
    out = tmp_path / "out.jsonl"
    first = cq("detect", "--method", "never", "--resume", str(out), input_text=jsonl(QUESTIONS[:1]))
    assert first.returncode == 0, first.stderr
    again = cq("detect", "--method", "never", "--resume", str(out), "--device", "cpu", input_text=jsonl(QUESTIONS),
               env={"CQ_API_TIMEOUT": "5", "CQ_CACHE": str(tmp_path / "c"), "CQ_API_BASE": "http://u:p@h:1/v1?k=x"})
    assert again.returncode == 0, again.stderr
    record = json.loads((tmp_path / "out.jsonl.cq.json").read_text())
    assert record["config"]["api_timeout"] == 5.0 and record["config"]["api_base"] == "http://h:1/v1"


@pytest.mark.parametrize("variable, value, field", [("CQ_PADDED_BATCHES", "1", "padded_batches"),
                                                    ("CQ_MAX_INPUT_TOKENS", "64", "max_input_tokens"),
                                                    ("CQ_REVISION", "v2", "revision"),
                                                    ("CQ_API_TOP_LOGPROBS", "5", "api_top_logprobs")])
def test_resume_under_another_run_configuration_is_refused(tmp_path, variable, value, field):
    out = tmp_path / "out.jsonl"
    first = cq("detect", "--method", "never", "--resume", str(out), input_text=jsonl(QUESTIONS[:1]))
    assert first.returncode == 0, first.stderr
    again = cq("detect", "--method", "never", "--resume", str(out), input_text=jsonl(QUESTIONS),
               env={variable: value})
    assert again.returncode == 1, again.stderr
    assert "was written with a different configuration" in again.stderr and "Traceback" not in again.stderr
    # a flag's variable is named as its flag (--revision), the others as the run configuration's field
    assert f"run configuration {field}:" in again.stderr or f"--{field.replace('_', '-')}:" in again.stderr
    same = cq("detect", "--method", "never", "--resume", str(out), input_text=jsonl(QUESTIONS))
    assert same.returncode == 0, same.stderr
    assert len(out.read_text().splitlines()) == 2


def test_configuration_is_built_from_flags_over_environment():
    from cqtools.config import RunConfig

    config = RunConfig.from_env({"CQ_PADDED_BATCHES": "1", "CQ_DEVICE": "cpu", "CQ_DTYPE": "float16"}, device="cuda")
    assert (config.padded_batches, config.device, config.dtype) == (True, "cuda", "float16")
    with pytest.raises(Exception, match="CQ_MAX_INPUT_TOKENS='maybe' is not valid"):
        RunConfig.from_env({"CQ_MAX_INPUT_TOKENS": "maybe"})


def test_a_backends_options_are_declared_once_and_set_by_variable_flag_or_backend_opt(monkeypatch):
    """The openai backend's options live on the backend (OpenAIOptions), not in RunConfig: each is read from its
    variable, its flag (RunConfig.backend_settings) or --backend-opt, the last winning; a variable that does not
    parse is a one-line error naming it."""
    from cqtools.config import RunConfig
    from cqtools.models.openai_backend import OpenAIOptions, settings

    assert not {"api_base", "api_timeout", "concurrency"} & {f.name for f in dataclasses.fields(RunConfig)}
    monkeypatch.setenv("CQ_API_TIMEOUT", "5")
    monkeypatch.setenv("CQ_CONCURRENCY", "3")
    flags = RunConfig(backend_settings=(("concurrency", 7),))
    both = RunConfig(backend_settings=(("concurrency", 7),), backend_options=(("concurrency", "9"),))
    assert (settings(RunConfig()).api_timeout, settings(RunConfig()).concurrency) == (5.0, 3)
    assert (settings(flags).concurrency, settings(both).concurrency) == (7, 9)
    assert settings(RunConfig()).api_top_logprobs == OpenAIOptions().api_top_logprobs
    monkeypatch.setenv("CQ_API_TIMEOUT", "soon")
    with pytest.raises(Exception, match="CQ_API_TIMEOUT='soon'"):
        settings(RunConfig())


def environ_reads(root: Path) -> list[str]:
    """``file:line`` of every read of the environment (os.environ.get / [...] / os.getenv): the issue's count."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            target = node.func if isinstance(node, ast.Call) else None
            is_get = (isinstance(target, ast.Attribute) and target.attr in ("get", "getenv") and
                      (ast.unparse(target.value) in ("os.environ", "os")))
            is_item = (isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and
                       ast.unparse(node.value) == "os.environ")
            if is_get and (target.attr == "get" or ast.unparse(target.value) == "os") or is_item:
                found.append(f"{path.relative_to(root.parent)}:{node.lineno}")
    return found


def test_only_the_config_module_reads_the_environment():
    """Writes for other libraries (OMP_WAIT_POLICY, JAVA_HOME, a child's PATH) are not reads."""
    reads = environ_reads(ROOT / "cqtools")
    assert reads and all(r.startswith("cqtools/config.py:") for r in reads), reads


def test_no_import_circles_in_cqtools():
    from tests.import_graph import circles

    assert circles(ROOT / "cqtools") == []


def test_builtins_register_only_through_the_plugin_hooks():
    """No registry is filled by an import's side effect: ``REGISTRY.register`` is called only inside
    the hooks of cq's default plugin modules."""
    from cqtools.plugins import DEFAULT_PLUGINS
    from cqtools.registry import ALL

    names = {name for name, value in vars(__import__("cqtools.registry").registry).items() if value in ALL}
    for path in sorted((ROOT / "cqtools").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr == "register" and getattr(node.value, "id", "") in names:
                raise AssertionError(f"{path.relative_to(ROOT)}:{node.lineno} registers by import side effect")
    assert all(Path(ROOT, *name.split(".")).with_suffix(".py").exists() for name in DEFAULT_PLUGINS)


def test_a_configuration_given_to_build_is_passed_to_the_loaders_not_made_ambient(monkeypatch):
    """build(method, config) hands ``config`` to the loader it calls; the process's current configuration is
    never switched to it (no side channel: the loader sees the ambient one unchanged)."""
    from cqtools import config as cfg
    from cqtools.models import load as loader
    from cqtools.stages import detect

    from .fakes import FakeGenerator

    seen = []

    def fake_load(name, device="auto", dtype="auto", kind="auto", config=None):
        seen.append((device, config.trust_remote_code, config.max_input_tokens, cfg.RunConfig.from_env().max_input_tokens))
        return FakeGenerator("x")

    monkeypatch.setattr(loader, "load_generator", fake_load)
    detect.build("llm", cfg.RunConfig(device="cpu", trust_remote_code=True, max_input_tokens=64), model="m")
    assert seen == [("cpu", True, 64, None)]


def test_a_model_keeps_the_configuration_it_was_loaded_under(tiny_causal):
    """A loader given a configuration builds the model under it, whatever the process's is: the input cap,
    batching and the generator's info come from the given one (they came from the ambient one before)."""
    from cqtools import config as cfg
    from cqtools.models.load import load_generator

    given = cfg.RunConfig(max_input_tokens=24, padded_batches=True, model_batch_size=3)
    gen = load_generator(tiny_causal, "cpu", config=given)
    assert (gen.input_cap, gen.padded, gen.batch_size, gen.run) == (24, True, 3, given)
    assert gen.info["max_input_tokens"] == 24 and gen.info["batching"] == "padded"
    assert cfg.RunConfig.from_env().max_input_tokens is None
    plain = load_generator(tiny_causal, "cpu")
    assert plain is not gen and plain.input_cap is None and not plain.padded


def test_a_flag_several_methods_declare_keeps_its_type_when_their_bounds_differ():
    """qd and rac take --passages from 0, toc from 1: the flag is an integer with the widest bounds (it was
    TEXT), and the chosen method checks its own bound in one line."""
    help_text = cq("disambiguate", "--help").stdout
    assert "--passages INTEGER RANGE" in help_text
    typo = cq("disambiguate", "--method", "qd", "--passages", "x", input_text=jsonl(QUESTIONS))
    assert typo.returncode == 2 and "'x' is not a valid integer" in typo.stderr
    toc = cq("disambiguate", "--method", "toc", "--passages", "0", input_text=jsonl(QUESTIONS))
    assert toc.returncode == 1 and "option n_passages must be in 1..inf, not 0" in toc.stderr
    assert len(toc.stderr.strip().splitlines()) == 1, toc.stderr
