"""The test tiers. `make test-fast` runs ``-m "not slow and not heavy and not cluster and not browser"``:
pure-Python units and tiny models, about a minute on a quiet 2-core machine. `make test` (what CI runs) is everything not slow,
heavy tests included; `make test-slow` the slow ones (real models, the JVM at scale).

A test is heavy when it lives in a module of HEAVY_MODULES, is a case of HEAVY_TESTS, uses a fixture
of HEAVY_FIXTURES (directly or through another fixture), or is marked ``@pytest.mark.heavy(reason=...)``:
it starts the JVM, loads a model that is not one of the tests' tiny random ones, trains, or runs cq in
subprocesses at length.
A test of the fast tier (one not heavy, slow, cluster or browser) that starts the JVM or loads a real model
in-process fails, naming this file, in whatever tier it runs: `make test` (CI) catches one the fast tier would,
unless a heavy test before it started the JVM or loaded that model first. tests/test_tiers.py checks the fast
tier's selection from the default tier.
(Hooks, imported by tests/conftest.py.)"""
from __future__ import annotations

import os
import sys
import tempfile

import pytest

HEAVY_MODULES = {
    "test_grounded_cq": "the shipped reader and classifier (the grounded CPU path)",
    "test_indexes": "Pyserini's registry and a missing index's advice (JVM)",
    "test_models_export": "the shipped models, exported and loaded",
    "test_docs_run": "runs the commands of README.md and docs/ in subprocesses (make, pipelines)",
    "test_train": "trains models",
    "test_train_resume": "trains models, kills and resumes them, and trains in two processes (torchrun)",
    "test_train_best": "trains tiny models with dev evaluations (5-12 s a test)",
    "test_train_paper_models": "trains the papers' models at tiny sizes and reads them back (up to 21 s a test)",
    "test_train_verifier": "trains REFUEL's verifier and AskCQ's reader at tiny sizes",
    "test_recipes": "trains one step of each paper's recipe at tiny sizes (40 s the file)",
    "test_invariance": "runs every stage twice, with the JVM, real models and accelerate",
    "test_chat": "drives cq chat in terminals (tmux) and subprocesses",
    "test_pyserini_cli": "runs Pyserini's tools (JVM)",
    "test_scale": "kills and resumes cq processes",
    "test_shipped": "loads the shipped MiniLM classifier and reader",
    "test_prebuilt": "asks Anserini (JVM) for its prebuilt indexes",
    "test_tiers": "collects the whole suite twice in subprocesses (the check of this tier, run by make test)",
}
HEAVY_FIXTURES = {  # a fixture's name, or test_module::name for a name several modules define
    "fixture_index": "builds the fixture corpus's BM25 and dense index (JVM, MiniLM)",
    "bm25_index": "builds a BM25 index (JVM)",
    "generator": "loads SmolLM2",
    "cross_encoder": "loads the INT8 reranker",
    "dpr_index": "builds a dense index",
    "plugin_path": "pip-installs the demo plugin",
    "test_reader_extractive::trained": "trains a reader",
    "test_encode::one_process": "builds the corpus's BM25 index beside the tiny dense one (JVM)",
    "test_faiss_index::hnsw_index": "builds a BM25 and an HNSW index with MiniLM (JVM, a real encoder)",
}
HEAVY_TESTS = {  # test_module::name[parameters], for one case of a parametrized test
    "test_model_overrides::test_variable_reaches_the_command[encoder]": "cq index builds a Lucene index (JVM)",
    "test_reliability::test_two_index_builds_into_one_new_directory_one_wins_the_other_says_so":
        "two cq index processes build Lucene indexes (JVM)",
    "test_reliability::test_an_api_outage_under_skip_stops_the_run_and_resume_redoes_the_rest":
        "a test server and cq processes that wait through their retries",
    "test_faiss_index::test_the_same_vectors_and_seed_give_the_same_bytes_at_any_thread_count[IVF16,PQ8]":
        "trains an IVF-PQ index at three thread counts (30 s)",
    "test_bench::test_report_on_real_score_summaries": "eleven cq subprocesses (detect, gen-cq, score --ci, score --paired)",
}
# Where the tiny random models live (tmp_path_factory): weights loaded from anywhere else are real.
TINY_ROOTS = (os.path.realpath(tempfile.gettempdir()),)


def heavy_reason(item) -> str | None:
    """Why ``item`` is left out of the fast tier (None: it is in)."""
    module = item.path.stem
    if module in HEAVY_MODULES:
        return f"{module}: {HEAVY_MODULES[module]}"
    if f"{module}::{item.name}" in HEAVY_TESTS:
        return HEAVY_TESTS[f"{module}::{item.name}"]
    for name in item.fixturenames:
        reason = HEAVY_FIXTURES.get(f"{module}::{name}") or HEAVY_FIXTURES.get(name)
        if reason:
            return f"fixture {name}: {reason}"
    mark = item.get_closest_marker("heavy")
    return None if mark is None else mark.kwargs.get("reason", "marked heavy")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.get_closest_marker("heavy") is None:
            reason = heavy_reason(item)
            if reason:
                item.add_marker(pytest.mark.heavy(reason=reason))


def _in_fast_tier(item) -> bool:
    """Whether ``item`` is a test `make test-fast` runs (collection has marked the heavy ones)."""
    return not any(item.get_closest_marker(name) for name in ("heavy", "slow", "cluster", "browser"))


_REAL_LOADS: list[str] = []  # weights loaded outside TINY_ROOTS since the current test started
_JVM_BEFORE = pytest.StashKey[bool]()


def _record_real(path) -> None:
    where = os.path.realpath(str(path))
    if not where.startswith(TINY_ROOTS):
        _REAL_LOADS.append(where)


def pytest_configure(config):
    """Watch where model weights come from (transformers, onnxruntime and the shipped models' compact
    weights: the ways cq loads them)."""
    import onnxruntime
    from transformers import PreTrainedModel

    from cqtools.models import compact

    load_compact = compact.load_model

    def compact_model(path, *args, **kwargs):
        _record_real(path)
        return load_compact(path, *args, **kwargs)

    compact.load_model = compact_model

    load = PreTrainedModel.from_pretrained.__func__

    def from_pretrained(cls, path, *args, **kwargs):
        _record_real(path)
        return load(cls, path, *args, **kwargs)

    session = onnxruntime.InferenceSession.__init__

    def inference_session(self, path, *args, **kwargs):
        _record_real(path)
        return session(self, path, *args, **kwargs)

    PreTrainedModel.from_pretrained = classmethod(from_pretrained)
    onnxruntime.InferenceSession.__init__ = inference_session


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    item.stash[_JVM_BEFORE] = "jnius" in sys.modules  # pyjnius starts the JVM when imported
    _REAL_LOADS.clear()
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    """A test of the fast tier whose fixtures or body start the JVM or load a real model fails."""
    result = yield
    if not _in_fast_tier(item):
        return result
    if not item.stash.get(_JVM_BEFORE, True) and "jnius" in sys.modules:
        pytest.fail(f"{item.nodeid} started the JVM, a test of the fast tier: make it heavy (tests/tiers.py)",
                    pytrace=False)
    if _REAL_LOADS:
        pytest.fail(f"{item.nodeid} loaded {_REAL_LOADS[0]}, not a tiny test model, a test of the fast tier: "
                    f"make it heavy (tests/tiers.py)", pytrace=False)
    return result
