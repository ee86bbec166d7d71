"""The fast tier (`make test-fast`) selects no test that starts the JVM, loads a real model or trains:
its collection, with the marker expression the Makefile gives it, leaves out tests known to, and keeps
the pure units (tests/tiers.py says how a test is found heavy)."""
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# Known heavy: what each starts or loads. A prefix ending in "::" is every test of the module.
KNOWN_HEAVY = {
    "tests/test_retrieve.py::test_answers_are_in_the_top_five": "the fixture index (JVM, MiniLM)",
    "tests/test_stream.py::test_empty_input": "the fixture index (JVM, MiniLM)",
    "tests/test_trec.py::test_resume_rewrites_the_whole_run": "the fixture index (JVM, MiniLM)",
    "tests/test_protocols.py::test_bm25_searcher_is_a_searcher": "a BM25 index (JVM)",
    "tests/test_rerank.py::test_onnx_cross_encoder_logits": "the INT8 reranker",
    "tests/test_disambiguate.py::test_rac_end_to_end": "the fixture index (JVM, MiniLM)",
    "tests/test_replay.py::test_pipeline_records_unchanged": "the fixture index and the offline models",
    "tests/test_pyserini_cli.py::": "Pyserini's tools (JVM)",
    "tests/test_dpr.py::test_dpr_encoder_mistakes_are_one_line_errors": "a Lucene index (JVM)",
    "tests/test_models.py::test_offline_encoders": "MiniLM and bge-small",
    "tests/test_answer.py::test_record_without_cq_is_a_clear_error": "the INT8 reranker",
    "tests/test_protocols.py::test_cross_encoders_and_encoders": "the INT8 reranker, MiniLM and bge-small",
    "tests/test_gzip_output.py::test_index_reads_a_gzipped_dpr_corpus": "a Lucene index (JVM)",
    "tests/test_model_overrides.py::test_variable_reaches_the_command[encoder]": "a Lucene index (JVM)",
    "tests/test_rerank.py::test_missing_passages_is_a_one_line_error": "the INT8 reranker",
    "tests/test_answer.py::test_record_without_passages_is_a_clear_error": "the shipped reader",
    "tests/test_retrieve.py::test_dense_needs_a_dense_index": "a Lucene index (JVM)",
    "tests/test_prebuilt.py::": "Anserini's prebuilt indexes (JVM)",
    "tests/test_shipped.py::": "the shipped classifier and reader",
    "tests/test_train.py::": "training",
    "tests/test_train_best.py::": "training", "tests/test_train_paper_models.py::": "training",
    "tests/test_train_verifier.py::": "training",
    "tests/test_askcq_detect.py::test_training_with_passages_on_records_without_them_says_so": "training MiniLM",
    "tests/test_docs_run.py::": "the README's pipelines in subprocesses",
    "tests/test_chat.py::": "cq chat in terminals",
    "tests/test_invariance.py::": "every stage, twice",
    "tests/test_encode.py::test_shards_merged_equal_the_one_process_index": "the corpus's BM25 index (JVM)",
    "tests/test_faiss_index.py::test_hybrid_takes_the_knobs_too": "a BM25 and HNSW index with MiniLM (JVM)",
}
KNOWN_FAST = ["tests/test_metrics_detect.py::", "tests/test_code_bounds.py::", "tests/test_stream_unit.py::",
              "tests/test_score_cli.py::test_sweep_threshold_applied_by_cq_detect_reproduces_its_f1",
              "tests/test_model_layer.py::test_pad_token_falls_back_to_eos"]


def collect(expression: str) -> list[str]:
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                           "-m", expression, "tests"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return [line for line in done.stdout.splitlines() if "::" in line]


@pytest.fixture(scope="module")
def fast() -> list[str]:
    """The node ids `make test-fast` runs (its -m expression read from the Makefile)."""
    makefile = (ROOT / "Makefile").read_text()
    found = re.search(r'^test-fast:.*\n\t.*pytest .*-m "([^"]+)"', makefile, re.M)
    assert found, "Makefile: test-fast runs pytest -m \"...\""
    assert found[1] == "not slow and not heavy and not cluster and not browser"
    return collect(found[1])


def test_the_fast_tier_leaves_out_the_tests_known_to_start_the_jvm_load_real_models_or_train(fast):
    selected = [(prefix, node) for node in fast for prefix in KNOWN_HEAVY if node.startswith(prefix)]
    assert not selected, "heavy tests in the fast tier (tests/tiers.py):\n" + "\n".join(
        f"{node}: {KNOWN_HEAVY[prefix]}" for prefix, node in selected)


def test_the_fast_tier_keeps_the_units(fast):
    assert len(fast) > 400
    for prefix in KNOWN_FAST:
        assert any(node.startswith(prefix) for node in fast), prefix


def test_the_heavy_tests_stay_in_make_test():
    """`make test` (-m "not slow") still runs the heavy tests the fast tier leaves out."""
    default = collect("not slow")
    for prefix in KNOWN_HEAVY:
        assert any(node.startswith(prefix) for node in default), prefix
