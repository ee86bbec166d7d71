"""Docs that run: every fenced ```bash block of README.md and docs/**/*.md (docs/benchmarks/
included) runs here on the fixtures, so a doc cannot go stale. tests/test_docs.py checks the
generated docs/cli.md; this module checks the hand-written docs' commands and claims.

How a block runs:
- The blocks of one doc share one working directory and run in the doc's order (a doc is read as
  one session: cluster.md merges what its SLURM script wrote). That directory looks like a
  checkout: Makefile, experiments.mk, a copy of fixtures/ and a link to the test's .venv.
- Each block runs with ``bash -eo pipefail`` and the venv's ``cq`` first on PATH; it must exit 0.
- Placeholder paths and models are replaced as SUBSTITUTE says (data files by fixture files,
  7B-8B LLMs by a tiny random local model). Every substitution must still match its doc.
  The default LLM of every role is the same tiny model (CQ_MODEL_* variables), so no block needs a
  real LLM and none is slow.
- A block with ``#SBATCH --array=A-B`` is a SLURM array script. Where SLURM is up (`make test-cluster`'s
  one-node cluster, tests/test_cluster.py) it is submitted with the real ``sbatch --wait``; only where SLURM
  is absent (`make test`) it runs once per task id with SLURM_ARRAY_TASK_ID set by hand, and the test
  says so with a warning.
- An HTML comment just before a block marks it: ``<!-- doc-test: skip (reason) -->`` for commands
  that need the full shared data, hours, or are the test suite itself; ``<!-- doc-test: slow
  (reason) -->`` for ones that only run under ``make test-slow``. Skips are few and each shows its
  reason in the test report (pytest -rs).
"""
from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

import click
import pytest

from .conftest import FIXTURES, ROOT
from .slurm_cluster import sbatch_wait
from .test_convert_benchmarks import CLAMBER_LINES, CONDAMBIGQA

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
MAX_SKIPS = 2
TINY_LLM = "{tiny_llm}"

# Per doc: (text in the doc, what the test runs instead). {tiny_llm} is filled in.
SUBSTITUTE: dict[str, list[tuple[str, str]]] = {
    "docs/cluster.md": [
        ("--array=0-15", "--array=0-1"),  # two array tasks, not sixteen
        ("N=16", "N=2"),
        ("#SBATCH --cpus-per-task=8", "#SBATCH --cpus-per-task=1"),  # make test-cluster's node has 2 CPUs
        ("{0..15}", "{0..1}"),
        ("--model Qwen/Qwen2.5-7B-Instruct --device cuda", "--model {tiny_llm} --device cpu"),
        ("--num_processes 4", "--num_processes 2"),  # two cores in CI; no GPU: torchrun on CPU (gloo)
        ("accelerate launch", "accelerate launch --main_process_port 0"),  # a free port, not 29500: tests run beside
        ("--model meta-llama/Llama-3.1-8B-Instruct", "--model {tiny_llm}"),
        ("BM25=wikipedia-dpr-100w DPR=wikipedia-dpr-100w.dpr-multi", "BM25={index} DPR={index}"),  # no downloads
        ("data/psgs_w100.tsv", "fixtures/corpus.jsonl"),  # 155 passages, in 8 chunks of 20
        ("--shard $I/$N --device cuda", "--shard $I/$N --device cpu --chunk 20"),
    ],
    "README.md": [  # "Reproduce a paper": each preset's pipeline on the fixture index, 5 passages, tiny models
        ("cq retrieve --preset toc --index IDX", "cq retrieve --preset toc --hits 5 --index IDX"),  # not its 100
        ("--shots ASQA_TRAIN", "--shots asqa_train.jsonl"),  # SETUP converts fixtures/asqa.json
        # the span reader a user's run reads (the shipped one), not the tiny LLM that CQ_MODEL_READER names here
        ("cq answer --preset disambig-first --index IDX",
         "env -u CQ_MODEL_READER cq answer --preset disambig-first --hits 5 --rerank-depth 5 --index IDX"),
        ("--index IDX", "--index {index}"),  # BM25 and dense vectors (--method dense), of the 155 fixture passages
        ("--hits 100", "--hits 5"),
        ("--top 100", "--top 5"),
        ("--model CLASSIFIER_DIR", "--model {tiny_classifier}"),  # a random 2-label BERT, as `cq train detect` writes
        ("--model GENERATOR_DIR", "--model gencq-askcq"),
        ("cq detect --preset clam", "cq detect --preset clam --model {tiny_llm}"),  # doc_env sets no CQ_MODEL_DETECT  # SETUP: the tiny T5 with BART's bos/eos, as AskCQ needs
    ],
    "docs/benchmarks/field.md": [  # the benchmark's commands on hand-written lines of each format, a tiny LLM
        ("HuggingFaceTB/SmolLM2-135M-Instruct", "{tiny_llm}"),
        ("../shared/data/ambignq/dev_light.json", "fixtures/ambignq_light.json"),
        ("--index work/exp-index", "--index {index}"),  # the grid's corpus index: the fixture corpus's
        ("../shared/data/corpus/passages.jsonl", "corpus.sample.jsonl"),  # SETUP's: names 6 fixture questions
    ],
}

# Per doc: the inputs it reads but does not make, made from the fixtures before its first block.
# {index} is the session's index of fixtures/corpus.jsonl (tests/conftest.py).
SETUP: dict[str, str] = {
    "README.md": (  # the first 4 AmbigNQ-light questions; the 8-passage DPR tsv; `make demo`'s index
        "python -c 'import json; json.dump(json.load(open(\"fixtures/ambignq_light.json\"))[:4], "
        "open(\"dev_light.json\", \"w\"))' && cp fixtures/formats/psgs_w100.tsv psgs_w100.tsv "
        "&& mkdir -p work && ln -s {index} work/fixture-index "
        # "Reproduce a paper": ToC's 2 ASQA questions and its demo pool (ASQA_TRAIN, the other 4), AskCQ's CQ
        # generator (GENERATOR_DIR)
        "&& cq convert asqa fixtures/asqa.json > asqa.jsonl && head -n 2 asqa.jsonl > asqa_dev.jsonl "
        "&& tail -n +3 asqa.jsonl > asqa_train.jsonl && cp -r {tiny_seq2seq} gencq-askcq "
        "&& python -c 'from transformers import AutoTokenizer as T; t = T.from_pretrained(\"gencq-askcq\"); "
        "t.bos_token, t.eos_token = \"[CLS]\", \"[SEP]\"; t.save_pretrained(\"gencq-askcq\")'"),
    "docs/reference.md": (  # README's questions and index, as its pipeline block left them
        "head -n 4 fixtures/questions.jsonl > questions.jsonl && ln -s {index} idx"),
    "docs/cluster.md": (  # 6 fixture questions with passages; with silver CQs for `cq answer --mode cq`
        "mkdir -p work && head -n 6 fixtures/questions.jsonl | cq retrieve -q --index {index} --hits 5 > in.jsonl "
        "&& cq gen-cq -q --method from-dqs --all < in.jsonl > work/with_cq.jsonl"),
    "docs/benchmarks/field.md": (  # DIR as `cq data get` fills it, with tests/test_convert_benchmarks.py's lines;
        # a corpus whose passages name 6 fixture questions (source_qid), for the covered-questions block
        "mkdir -p DIR/clamber DIR/condambigqa bench/grid "
        f"&& cp {shlex.quote(str(ROOT / 'bench/grid/oracle_terse.txt'))} bench/grid/ "
        f"&& printf '%s\\n' {' '.join(shlex.quote(line) for line in CLAMBER_LINES)} > DIR/clamber/clamber_benchmark.jsonl "
        f"&& printf '%s' {shlex.quote(json.dumps(CONDAMBIGQA))} > DIR/condambigqa/mcaqa.json "
        "&& python -c 'import json; [print(json.dumps({\"source_qid\": q[\"id\"]})) "
        "for q in json.load(open(\"fixtures/ambignq_light.json\"))[:6]]' > corpus.sample.jsonl"),
}

# Per doc: environment variables (make variables included) on top of the shared ones.
ENV: dict[str, dict[str, str]] = {
    "README.md": {"DEMO_N": "2"},  # `make demo` on 2 questions, not 8
}

# Blocks that fail today because of a bug someone is fixing: (doc, text in the block) -> (the bug,
# text its stderr shows, texts of the later blocks that need its output). strict: the test fails
# once the bug is fixed, so the entry gets removed; a different failure is a plain failure.
KNOWN_BUGS: dict[tuple[str, str], tuple[str, str, tuple[str, ...]]] = {
    # e.g. ("docs/cluster.md", "#SBATCH --array"): ("`--resume out/x` crashes when out/ is missing (fix in
    #       cqtools/cli/stream.py)", "out/answer.0.jsonl", ("cq merge out/answer.",)),  -- fixed in fa119a8
}

MARK = re.compile(r"^<!--\s*doc-test:\s*(\w+)\s*\((.+)\)\s*-->$")
ARRAY = re.compile(r"^#SBATCH\s+--array=(\d+)-(\d+)\s*$", re.M)


@dataclass(frozen=True)
class Block:
    doc: str  # path relative to the repository root
    line: int  # line of the opening fence
    text: str
    mark: str | None = None  # skip | slow
    reason: str | None = None

    @property
    def id(self) -> str:
        return f"{self.doc}:{self.line}"


def extract_blocks(path: Path) -> list[Block]:
    doc = path.relative_to(ROOT).as_posix()
    lines = path.read_text().splitlines()
    blocks, i = [], 0
    while i < len(lines):
        if lines[i].strip() == "```bash":
            start = i
            i += 1
            while i < len(lines) and lines[i].strip() != "```":
                i += 1
            before = next((x.strip() for x in reversed(lines[:start]) if x.strip()), "")
            m = MARK.match(before)
            blocks.append(Block(doc, start + 1, "\n".join(lines[start + 1:i]) + "\n",
                                m.group(1) if m else None, m.group(2) if m else None))
        elif lines[i].strip().startswith("<!--") and "doc-test" in lines[i] and not MARK.match(lines[i].strip()):
            raise ValueError(f"{doc}:{i + 1}: malformed doc-test marker (use `<!-- doc-test: skip (reason) -->`)")
        i += 1
    return blocks


BLOCKS = [b for path in DOCS for b in extract_blocks(path)]


def _param(block: Block):
    marks = []
    if block.mark == "skip":
        marks.append(pytest.mark.skip(reason=f"{block.id}: {block.reason}"))
    elif block.mark == "slow":
        marks.append(pytest.mark.slow)
    bug = known_bug(block)
    if bug:
        marks.append(pytest.mark.xfail(strict=True, raises=AssertionError, reason=bug[0]))
    return pytest.param(block, id=block.id, marks=marks)


def known_bug(block: Block) -> tuple[str, str, tuple[str, ...]] | None:
    return next((why for (doc, needle), why in KNOWN_BUGS.items() if doc == block.doc and needle in block.text), None)


def _fill(text: str, fills: dict[str, str]) -> str:
    for key, value in fills.items():
        text = text.replace("{" + key + "}", value)
    return text


def substitute(block: Block, fills: dict[str, str]) -> str:
    text = block.text
    for old, new in SUBSTITUTE.get(block.doc, []):
        text = text.replace(old, _fill(new, fills))
    return text


class DocRun:
    """One doc's working directory; runs its blocks in order, each at most once."""

    def __init__(self, doc: str, workdir: Path, env: dict, fills: dict):
        self.doc, self.workdir, self.env, self.fills = doc, workdir, {**env, **ENV.get(doc, {})}, fills
        self.results: dict[str, subprocess.CompletedProcess] = {}
        _checkout_like(workdir)
        if doc in SETUP:
            self._bash(_fill(SETUP[doc], fills), check=True)

    def _bash(self, script: str, check: bool = False, extra_env: dict | None = None):
        proc = subprocess.run(["bash", "-eo", "pipefail", "-c", script], cwd=self.workdir, capture_output=True,
                              text=True, env={**self.env, **(extra_env or {})}, timeout=600)
        if check:
            assert proc.returncode == 0, f"setup failed:\n{proc.stderr[-3000:]}"
        return proc

    def run(self, block: Block) -> subprocess.CompletedProcess:
        if block.id in self.results:
            return self.results[block.id]
        for earlier in BLOCKS:
            if earlier == block:
                break
            if earlier.doc == self.doc and earlier.mark != "skip" and earlier.id not in self.results:
                self.run(earlier)
        text = substitute(block, self.fills)
        array = ARRAY.search(text)
        if array and self.env.get("CQ_TEST_SLURM") == "1":  # a SLURM is up (make test-cluster): the real sbatch
            proc = sbatch_wait(text, self.workdir, self.env)
        else:
            if array:  # no SLURM here: each task in turn, SLURM_ARRAY_TASK_ID set by hand
                warnings.warn(f"{block.id}: SLURM array script simulated (no SLURM here; make test-cluster "
                              f"submits it with sbatch --wait)")
            tasks = range(int(array.group(1)), int(array.group(2)) + 1) if array else [None]
            for task in tasks:
                proc = self._bash(text, extra_env={"SLURM_ARRAY_TASK_ID": str(task)} if task is not None else None)
                if proc.returncode != 0:
                    break
        self.results[block.id] = proc
        return proc

    def failed_before(self, block: Block) -> list[Block]:
        ids = {b.id: b for b in BLOCKS}
        return [ids[i] for i, p in self.results.items() if p.returncode != 0 and ids[i].line < block.line]


def _checkout_like(workdir: Path) -> None:
    """Makefile, experiments.mk, fixtures/ and .venv as in a checkout. The copies of setup.cfg and
    pyproject.toml are dated 1970 so make never re-installs the shared venv from a test."""
    for name in ("Makefile", "experiments.mk", "setup.cfg", "pyproject.toml"):
        shutil.copy2(ROOT / name, workdir / name)
    for name in ("setup.cfg", "pyproject.toml"):
        os.utime(workdir / name, (0, 0))
    shutil.copytree(FIXTURES, workdir / "fixtures")
    (workdir / ".venv").symlink_to(Path(sys.prefix))


def doc_env(tiny_causal: str, scratch: Path) -> dict[str, str]:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "SCRATCH": str(scratch), "OMP_NUM_THREADS": "1", "CQ_ORT_THREADS": "1",
           "CHECK_CHECKOUT": "0",  # the docs' checkouts share this venv: make must not reinstall it for them
           # (not DETECT: the docs' `cq detect` runs its default method, the shipped classifier)
           **{f"CQ_MODEL_{role}": tiny_causal for role in ("READER", "GEN_CQ", "DISAMBIGUATOR", "ORACLE")}}
    env.pop("CQ_DEBUG", None)
    return env


@pytest.fixture(scope="session")
def doc_runs(tmp_path_factory, tiny_causal, fixture_index, tiny_classifier, tiny_seq2seq):
    fills = {"tiny_llm": tiny_causal, "index": fixture_index, "tiny_classifier": tiny_classifier,
             "tiny_seq2seq": tiny_seq2seq}
    env = doc_env(tiny_causal, tmp_path_factory.mktemp("scratch"))
    runs: dict[str, DocRun] = {}

    def get(doc: str) -> DocRun:
        if doc not in runs:
            runs[doc] = DocRun(doc, tmp_path_factory.mktemp(re.sub(r"\W", "_", doc)), env, fills)
        return runs[doc]

    return get


@pytest.mark.parametrize("block", [_param(b) for b in BLOCKS])
def test_doc_block_runs(block, doc_runs):
    run = doc_runs(block.doc)
    proc = run.run(block)
    bug = known_bug(block)
    if proc.returncode != 0 and bug and bug[1] not in proc.stderr:
        pytest.fail(f"{block.id} fails, but not on its known bug ({bug[1]!r} not in stderr):\n{proc.stderr[-4000:]}")
    if proc.returncode != 0 and not bug:
        failed = [b for b in run.failed_before(block) if known_bug(b)
                  and any(needle in block.text for needle in known_bug(b)[2])]
        if failed:
            pytest.xfail(f"needs the output of {failed[0].id}, which fails on a known bug")
    assert proc.returncode == 0, (f"{block.id} exited {proc.returncode}\n--- block as run:\n"
                                  f"{substitute(block, run.fills)}--- stderr:\n{proc.stderr[-4000:]}")
    nothing = scored_nothing(block, proc.stdout)
    assert not nothing, f"{block.id}: {nothing}\n--- block as run:\n{substitute(block, run.fills)}"


def scored_nothing(block: Block, stdout: str) -> str | None:
    """A pipeline that ends in `cq score` (its JSON report) must score some record: one that scores none ran on
    the wrong questions (ASQA's metrics on AmbigNQ records) or lost its records on the way."""
    if not re.search(r"\|\s*cq score [^|]*$", block.text.rstrip()) or "--format" in block.text.splitlines()[-1]:
        return None
    report = json.loads(stdout.strip().splitlines()[-1])
    return None if report.get("n") else f"its `cq score` scored no record: {report.get('notes')}"


def test_the_harness_finds_the_docs_blocks():
    docs = {b.doc for b in BLOCKS}
    assert {"README.md", "docs/cluster.md"} <= docs
    assert len(BLOCKS) >= 5


def test_every_substitution_still_matches_its_doc():
    """A substitution that no longer matches means the doc changed: update SUBSTITUTE."""
    for doc, pairs in SUBSTITUTE.items():
        text = "".join(b.text for b in BLOCKS if b.doc == doc)
        stale = [old for old, _ in pairs if old not in text]
        assert not stale, f"{doc}: no block contains {stale}"
    for (doc, needle), (_, _, needs) in KNOWN_BUGS.items():
        for text in (needle, *needs):
            assert any(b.doc == doc and text in b.text for b in BLOCKS), f"KNOWN_BUGS: no block of {doc} has {text!r}"


def test_skips_are_few_and_give_a_reason():
    skipped = [f"{b.id}: {b.reason}" for b in BLOCKS if b.mark == "skip"]
    assert all(b.mark in (None, "skip", "slow") for b in BLOCKS), [b.id for b in BLOCKS if b.mark]
    assert len(skipped) <= MAX_SKIPS, "too many doc blocks skipped:\n" + "\n".join(skipped)


# --- the README's table of shared options is the code's ---------------------------------------------

SHARED_OPTIONS = ("--model", "--seed", "--batch-size", "--device", "--dtype", "--shard", "--resume", "--on-error",
                  "--quiet")
TABLE_START, TABLE_END = "<!-- shared-options: start -->", "<!-- shared-options: end -->"


def _commands():
    from cqtools.cli import COMMANDS, cli

    ctx = click.Context(cli)
    for name in COMMANDS:
        command = cli.get_command(ctx, name)
        if isinstance(command, click.Group):
            if command.invoke_without_command:  # a group that is a command too (cq models)
                yield name, command
            for sub in command.list_commands(ctx):
                yield f"{name} {sub}", command.get_command(ctx, sub)
        else:
            yield name, command


def shared_options_table() -> str:
    """The README's table: which command takes which shared option (the --model cell: its env var)."""
    rows = ["| command | " + " | ".join(f"`{o}`" for o in SHARED_OPTIONS) + " |",
            "|---|" + "---|" * len(SHARED_OPTIONS)]
    for name, command in _commands():
        opts = {o: p for p in command.params if isinstance(p, click.Option) for o in p.opts}
        cells = []
        for option in SHARED_OPTIONS:
            param = opts.get(option)
            cells.append("" if param is None else f"`{param.envvar}`" if option == "--model" and param.envvar else "✓")
        if any(cells):
            rows.append(f"| `cq {name}` | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def test_reference_shared_options_table_matches_the_code():
    reference = (ROOT / "docs" / "reference.md").read_text()
    assert TABLE_START in reference and TABLE_END in reference, "docs/reference.md lost its table markers"
    current = reference.split(TABLE_START)[1].split(TABLE_END)[0].strip()
    assert current == shared_options_table(), ("docs/reference.md's shared-options table is stale; replace it with:\n"
                                                + shared_options_table())


# --- `cq models` names the environment variables the commands read -----------------------------------

def _model_envvars() -> set[str]:
    """CQ_MODEL_* variables read by the commands' flags and by the methods' model options (Option.env)."""
    from cqtools import registry

    methods = {o.env for reg in registry.ALL for m in reg.methods() for o in m.options
               if o.env and o.env.startswith("CQ_MODEL_")}
    return methods | {p.envvar for _, c in _commands() for p in c.params
                      if isinstance(p, click.Option) and isinstance(p.envvar, str) and p.envvar.startswith("CQ_MODEL_")}


def _roles():
    from cqtools.models.roles import ROLES

    return ROLES


@pytest.mark.parametrize("role", _roles(), ids=lambda r: r.role)
def test_each_role_names_a_variable_the_code_reads(role):
    assert role.env in _model_envvars(), f"`cq models` says {role.env} overrides {role.role}; no option reads it"


def test_every_model_variable_the_code_reads_has_a_role():
    # training starts from a base model (cq train --model); BERTScore's model is a metric's, not a stage's
    not_roles = {"CQ_MODEL_TRAIN_DETECT", "CQ_MODEL_TRAIN_GEN_CQ", "CQ_MODEL_TRAIN_READER", "CQ_MODEL_TRAIN_SPANSEQGEN",
                 "CQ_MODEL_TRAIN_QD", "CQ_MODEL_TRAIN_FID", "CQ_MODEL_TRAIN_VERIFIER", "CQ_MODEL_TRAIN_RERANK",
                 "CQ_MODEL_BERTSCORE"}
    envs = {r.env for r in _roles()}
    missing = _model_envvars() - envs - not_roles
    assert not missing, f"read by the commands but not listed by `cq models`: {sorted(missing)}"
    assert "CQ_MODEL_READER" in envs and "CQ_MODEL_SCORE_READER" in envs


def test_readme_names_only_variables_the_code_reads():
    named = set(re.findall(r"CQ_MODEL_[A-Z_]+", "".join((ROOT / doc).read_text() for doc in (
        "README.md", "docs/reference.md", "docs/cluster.md"))))
    assert named <= _model_envvars(), sorted(named - _model_envvars())


# --- `make exp-askcq` uses the shipped models on a fresh clone, trains only when asked -------------------

TRAINS = re.compile(r"cq train (detect|reader|gen-cq|combiner) ")  # a training command in a make plan


def _dry_run(target: str, *args: str) -> str:
    proc = subprocess.run(["make", "-n", "-C", str(ROOT), target, *args], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_exp_askcq_uses_the_shipped_models_and_trains_nothing(tmp_path):
    """A fresh clone (nothing in CQ_MODELS): the grid reads the shipped classifier and reader, trains nothing,
    and leaves out the fine-tuned CQ generator's cell, which has no shipped model (issue 25, item 4)."""
    plan = _dry_run("exp-askcq", f"WORK={tmp_path}/w", f"CQ_MODELS={tmp_path}/models")
    assert not TRAINS.search(plan)
    assert "detect --method classifier --model cqtools/shipped/detect" in plan
    assert "answer --mode cq --model cqtools/shipped/reader" in plan
    assert "gen-cq --method seq2seq" not in plan


def test_exp_askcq_trains_first_when_asked_or_uses_the_models_trained_here(tmp_path):
    plan = _dry_run("exp-askcq", f"WORK={tmp_path}/w", f"CQ_MODELS={tmp_path}/models", "TRAIN=1")
    assert plan.index("cq train detect --overwrite --train") < plan.index("detect --method classifier")
    assert plan.index("cq train reader --model") < plan.index(f"answer --mode cq --model {tmp_path}/models/reader")
    assert plan.index("cq train gen-cq --overwrite --train") < plan.index("gen-cq --method seq2seq")
    for name in ("detect", "reader", "gencq"):  # trained here already: used, not retrained
        (tmp_path / "models" / name).mkdir(parents=True)
        (tmp_path / "models" / name / "config.json").write_text("{}")
    plan = _dry_run("exp-askcq", f"WORK={tmp_path}/w", f"CQ_MODELS={tmp_path}/models")
    assert not TRAINS.search(plan)
    assert f"detect --method classifier --model {tmp_path}/models/detect" in plan
    assert f"gen-cq --method seq2seq --model {tmp_path}/models/gencq" in plan
    mine = tmp_path / "my-reader"
    mine.mkdir()
    assert f"answer --mode cq --model {mine}" in _dry_run("exp-askcq", f"WORK={tmp_path}/w", f"MODEL_READER={mine}")


def test_make_compare_n5_is_a_smoke_run_that_trains_nothing_and_builds_no_dense_index(tmp_path):
    """`make compare N=5` on a fresh clone (issue 25, item 4): the shipped models, a BM25-only corpus index, no
    dense or hybrid cells; the full-size grid keeps them. Its time is measured by `make bench-smoke`."""
    plan = _dry_run("compare", "N=5", f"WORK={tmp_path}/w", f"CQ_MODELS={tmp_path}/models")
    assert not TRAINS.search(plan)
    indexes = [line for line in plan.splitlines() if " index --corpus " in line]
    assert len(indexes) == 1 and "--dense" not in indexes[0] and f"{tmp_path}/w/exp-index-bm25" in indexes[0]
    assert "--method dense" not in plan and "--method hybrid" not in plan
    assert "--preset disambig-first --retriever bm25" in plan  # its preset's dense searcher has no index here
    assert "bench/grid/report.py results" in plan and "N_MODEL=5" in plan
    # the cells that read the deep pool (the presets' 1,024-token prompts, REFUEL's loop) and ToC's loop on one
    # question: on five they took most of the smoke run
    # (each cell's command runs through bench/grid/cell.py: `cell.py run OUT -- 'CQ_GEN_CACHE=... cq ... < INPUT'`,
    # then make's renames after `&&`: the command is the first shell word after `--`)
    import shlex

    commands = [shlex.split(line.split(" -- ", 1)[-1])[0] for line in plan.splitlines()
                if "bench/grid/cell.py run " in line]
    deep = [c for c in commands if c.startswith("CQ_GEN_CACHE=") and "< " in c and "/ambignq.m.rr.deep" in c.split("< ")[-1]]
    assert len(deep) == 3 and all(c.endswith("ambignq.m.rr.deep.first1.jsonl") for c in deep), deep
    assert any("answer --preset refuel" in line for line in deep) and "toc_1-deep_1/" in plan
    full = _dry_run("compare", f"WORK={tmp_path}/w", f"CQ_MODELS={tmp_path}/models")
    assert "--dense" in full and "--method hybrid" in full and not TRAINS.search(full)
    assert "deep.first" not in full and "toc_10/" in full and "deep_" not in full


def test_the_preset_cells_retrieve_the_papers_pools_where_the_index_has_dense_vectors(tmp_path):
    """Issue 48: with the dense index (the full grid), ToC's preset cell pools BM25 and dense hits as its preset
    says (it retrieved with --method bm25 in every grid, so it never pooled), and the cells reading the deep pool
    (the AmbigQA, AskCQ and REFUEL presets) read the dense top 100, all reranked (it was BM25's 40); a smoke run,
    whose index has no dense vectors, keeps BM25."""
    def retrievals(plan: str, marker: str) -> list[str]:  # the cells' commands (not the .cmd lines echoed)
        return [line for line in plan.splitlines()
                if "cell.py run " in line and " retrieve " in line and marker in line]

    full = _dry_run("compare", f"WORK={tmp_path}/w", f"CQ_MODELS={tmp_path}/models")
    [pool] = retrievals(full, "/asqa.t.pool.")
    assert "--preset toc" in pool and "--method" not in pool and "/asqa.t.pool.hybrid.jsonl" in pool
    assert "asqa.toc.preset.hybrid.jsonl" in full and "asqa.toc.preset.bm25" not in full
    [deep] = retrievals(full, ".deep.jsonl")
    assert "--method dense --hits 100" in deep and "/ambignq.m.ret.dense.deep.jsonl" in deep
    assert "rerank --top 100 " in full
    smoke = _dry_run("compare", "N=5", f"WORK={tmp_path}/w", f"CQ_MODELS={tmp_path}/models")
    [pool] = retrievals(smoke, "/asqa.t.pool.")
    assert "--preset toc" in pool and "--method bm25" in pool and "asqa.toc.preset.bm25.jsonl" in smoke
    [deep] = retrievals(smoke, ".deep.jsonl")
    assert "--method bm25 --hits 40" in deep


def test_a_cell_that_reads_another_cells_generations_waits_for_it(tmp_path):
    """Under make -jN, ToC's tree waits for RAC (its root is RAC's prompt) and REFUEL's round trip for the plain
    reading, so they read those generations from the grid's cache instead of making them beside each other; without
    the cache (GEN_CACHE=) there is nothing to wait for."""
    exp = f"{tmp_path}/w/exp-all_5-model_5-asqa_5-toc_1-deep_1"
    for target, earlier in (("asqa.dq.tree.bm25", "asqa.dq.rac.bm25"), ("ambignq.multi.rt-verify", "ambignq.multi.rt"),
                            ("ambignq.multi.rt", "ambignq.multi")):
        earlier = f"--resume {exp}/{earlier}.jsonl.part"
        plan = _dry_run(f"{exp}/{target}.jsonl", "N=5", f"WORK={tmp_path}/w", f"CQ_MODELS={tmp_path}/models")
        assert earlier in plan, plan
        alone = _dry_run(f"{exp}/{target}.jsonl", "N=5", "GEN_CACHE=", f"WORK={tmp_path}/w",
                         f"CQ_MODELS={tmp_path}/models")
        assert earlier not in alone


def _make_settings(*args: str) -> dict:
    """MAKEFLAGS and the thread variables make ends up with (its database, -p, on a dry run)."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "CQ_ORT_THREADS", "MAKEFLAGS")}
    proc = subprocess.run(["make", "-n", "-p", "-C", str(ROOT), *args], capture_output=True, text=True, timeout=60,
                          env=env)
    found = re.findall(r"^(MAKEFLAGS|OMP_NUM_THREADS|CQ_ORT_THREADS) :?= (.*)$", proc.stdout, flags=re.MULTILINE)
    return dict(found)


def test_a_smoke_run_runs_two_cells_at_a_time_on_one_thread_each(tmp_path):
    """Most of a 5-question cell is a process starting and loading models, one thread's work: `make compare
    N=5` runs cells two at a time (SMOKE_JOBS), one thread each; the full grid and SMOKE_JOBS=1 do not."""
    where = (f"WORK={tmp_path}/w", f"CQ_MODELS={tmp_path}/models")
    smoke = _make_settings("compare", "N=5", *where)
    assert "-j2" in smoke["MAKEFLAGS"].split() and smoke["OMP_NUM_THREADS"] == smoke["CQ_ORT_THREADS"] == "1"
    for args in (("compare", *where), ("compare", "N=5", "SMOKE_JOBS=1", *where)):
        settings = _make_settings(*args)
        assert not any(flag.startswith("-j") for flag in settings["MAKEFLAGS"].split()), settings


def test_make_ship_models_trains_by_steps_compacts_and_measures(tmp_path):
    """README: `make ship-models` retrains the two shipped models (epoch budgets, no time cap unless asked),
    compacts them into cqtools/shipped and measures them again."""
    plan = _dry_run("ship-models", f"WORK={tmp_path}/w", f"CQ_MODELS={tmp_path}/models")
    trains = [line for line in plan.splitlines() if TRAINS.search(line)]
    assert [TRAINS.search(line).group(1) for line in trains] == ["detect", "reader"]
    assert "--max-seconds" not in plan and "--epochs 3" in plan and "--epochs 1 --positives 2 --dq-questions" in plan
    for name in ("detect", "reader"):
        assert f"cq train compact {tmp_path}/models/{name} --out cqtools/shipped/{name} --overwrite" in plan
    assert plan.index("cq train compact") > plan.index("cq train reader") and "bench/shipped.py" in plan
    assert "--max-seconds 60" in _dry_run("ship-models", f"WORK={tmp_path}/w", f"CQ_MODELS={tmp_path}/models",
                                           "TRAIN_SECONDS=60")


def test_a_moved_checkout_is_reinstalled(tmp_path):
    """A venv installed for another path (a moved or copied checkout) is reinstalled by make: pip through
    the venv's own python, the editable install rewritten, the new path recorded (issue 25, item 13)."""
    venv = tmp_path / "venv"
    venv.mkdir()
    (venv / ".installed").touch()
    os.utime(venv / ".installed", (2**31, 2**31))  # newer than setup.cfg: only the move can make it stale
    (venv / ".checkout").write_text(str(ROOT) + "\n")
    assert "pip install" not in _dry_run("install", f"VENV={venv}")
    (venv / ".checkout").write_text("/somewhere/else\n")
    proc = subprocess.run(["make", "-n", "-C", str(ROOT), "install", f"VENV={venv}"], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "installed for /somewhere/else" in proc.stdout + proc.stderr
    assert f"{venv}/bin/python -m pip install -q -e" in proc.stdout
    assert f"echo '{ROOT}' > {venv}/.checkout" in proc.stdout
    assert "pip install" not in _dry_run("install", f"VENV={venv}", "CHECK_CHECKOUT=0")


def test_make_and_cq_share_one_models_directory(tmp_path, monkeypatch):
    """`make models` writes where a plain `cq answer` reads (issue 25): the CLI's default models
    directory unless CQ_MODELS says otherwise."""
    from cqtools.config import RunConfig

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("CQ_MODELS")
    cli_default = RunConfig.from_env().models_root()
    assert cli_default == f"{tmp_path}/.cache/cqtools/models"
    proc = subprocess.run(["make", "-n", "-C", str(ROOT), "train-detect"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert f"--out {cli_default}/detect" in proc.stdout


def test_the_grid_on_a_served_model_sends_every_llm_cell_to_the_server(tmp_path):
    """`make compare MODEL_LLM=openai:NAME API_BASE=URL` (issue 35 item 7): every cell that uses the LLM names the
    served model (none loads the local SmolLM2), and the server's address and the client's concurrency reach
    every cq command through the environment."""
    where = (f"WORK={tmp_path}/w", f"CQ_MODELS={tmp_path}/models")
    served = ("MODEL_LLM=openai:big", "API_BASE=http://127.0.0.1:8000/v1", "API_CONCURRENCY=16")
    plan = _dry_run("compare", "N=5", *where, *served)
    assert "SmolLM2" not in plan
    assert plan.count("--model openai:big") >= 15 and "--reader openai:big" in plan
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "CQ_CONCURRENCY", "MAKEFLAGS")}
    proc = subprocess.run(["make", "-n", "-p", "-C", str(ROOT), "compare", "N=5", *where, *served],
                          capture_output=True, text=True, timeout=60, env=env)
    found = dict(re.findall(r"^(OPENAI_BASE_URL|CQ_CONCURRENCY) :?= (.*)$", proc.stdout, flags=re.MULTILINE))
    assert found == {"OPENAI_BASE_URL": "http://127.0.0.1:8000/v1", "CQ_CONCURRENCY": "16"}
    assert "SmolLM2" in _dry_run("compare", "N=5", *where)  # the default grid does load it
