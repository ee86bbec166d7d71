"""`cq detect`: every method on the fixture records; clear one-line errors on bad input."""
import pytest

from cqtools.cli import cli

from .conftest import jsonl, parse_jsonl

SMOLLM = "HuggingFaceTB/SmolLM2-135M-Instruct"


def detect(runner, text, *args):
    return runner.invoke(cli, ["detect", *args], input=text)


def assert_well_formed(out, method, ids):
    assert [r["id"] for r in out] == ids
    for r in out:
        amb = r["ambiguity"]
        assert set(amb) == {"label", "score", "method", "threshold"}
        assert amb["method"] == method and isinstance(amb["label"], bool) and isinstance(amb["score"], float)
        assert amb["label"] == (amb["score"] > amb["threshold"])
        assert r["meta"]["detect"]["method"] == method


@pytest.mark.parametrize("method,label", [("always", True), ("never", False)])
def test_baselines(runner, questions, questions_text, method, label):
    result = detect(runner, questions_text, "--method", method)
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
    out = parse_jsonl(result.stdout)
    assert_well_formed(out, method, [q["id"] for q in questions])
    assert all(r["ambiguity"]["label"] is label for r in out)
    assert [r["gold"] for r in out] == [q["gold"] for q in questions]  # other keys pass through


def test_answers_counts_distinct_normalised_answers(runner):
    records = [
        {"id": "a", "question": "q1", "answers": [{"text": "The Beatles"}, {"text": "beatles!"}]},
        {"id": "b", "question": "q2", "answers": [{"text": "Paris"}, {"text": "Lyon"}, {"text": "paris"}]},
        {"id": "c", "question": "q3", "answers": []},
    ]
    result = detect(runner, jsonl(records), "--method", "answers")
    assert result.exit_code == 0, result.stderr
    out = parse_jsonl(result.stdout)
    assert_well_formed(out, "answers", ["a", "b", "c"])
    assert [r["ambiguity"]["score"] for r in out] == [1.0, 2.0, 0.0]
    assert [r["ambiguity"]["label"] for r in out] == [False, True, False]


def test_tree_counts_surviving_nodes(runner):
    records = [
        {"id": "t1", "question": "q", "tree": {"nodes": [{"question": "a"}, {"question": "b", "pruned": True}]}},
        {"id": "t2", "question": "q", "tree": [{"question": "a"}, {"question": "b"}]},
        {"id": "t3", "question": "q", "dqs": ["a", "b", "c"]},
    ]
    result = detect(runner, jsonl(records), "--method", "tree")
    assert result.exit_code == 0, result.stderr
    out = parse_jsonl(result.stdout)
    assert [r["ambiguity"]["label"] for r in out] == [False, True, True]


@pytest.mark.parametrize("method,record,needle", [
    ("answers", {"id": "x1", "question": "q"}, "run cq answer --mode multi first"),
    ("answers", {"id": "x2", "question": "q", "answers": "Paris"}, "'answers' must be a list"),
    ("tree", {"id": "x3", "question": "q"}, "run cq disambiguate --tree first"),
    ("tree", {"id": "x4", "question": "q", "tree": "oops"}, "'tree' must be a list"),
])
def test_missing_or_bad_inputs_are_one_line_errors(runner, method, record, needle):
    result = detect(runner, jsonl([record]), "--method", method)
    assert result.exit_code == 1
    assert result.stdout == ""
    assert needle in result.stderr and record["id"] in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr


def test_classifier_needs_a_model(runner, questions_text):
    result = detect(runner, questions_text, "--method", "classifier")
    assert result.exit_code == 1
    assert "cq train detect" in result.stderr and result.stdout == ""


def test_classifier_model_that_is_not_a_dir(runner, tmp_path, questions_text):
    result = detect(runner, questions_text, "--method", "classifier", "--model", str(tmp_path / "nope"))
    assert result.exit_code == 1 and "Traceback" not in result.stderr


@pytest.mark.slow
def test_llm_on_fixtures(runner, questions, questions_text):
    """CLAM-style scoring with the real SmolLM2 (loaded once per process by load_generator)."""
    result = detect(runner, questions_text, "--method", "llm", "--model", SMOLLM, "--batch-size", "16")
    assert result.exit_code == 0, result.stderr
    out = parse_jsonl(result.stdout)
    assert_well_formed(out, "llm", [q["id"] for q in questions])
    assert out[0]["meta"]["detect"]["model"] == SMOLLM
    assert len({round(r["ambiguity"]["score"], 4) for r in out}) > 5  # scores depend on the question
