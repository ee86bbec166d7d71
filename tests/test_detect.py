"""`cq detect`: every method on the fixture records; clear one-line errors on bad input."""
import pytest

from cqtools.cli import cli

from .conftest import jsonl, parse_jsonl
from .fakes import FakeGenerator

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


def test_classifier_needs_a_model_where_none_is_trained_or_shipped(runner, questions_text, tmp_path, monkeypatch):
    from cqtools.models import roles

    monkeypatch.setattr(roles, "SHIPPED_DIR", str(tmp_path / "no-shipped-models"))  # an install without them
    result = detect(runner, questions_text, "--method", "classifier")
    assert result.exit_code == 1
    assert "cq train detect" in result.stderr and result.stdout == ""


def test_classifier_model_that_is_not_a_dir(runner, tmp_path, questions_text):
    result = detect(runner, questions_text, "--method", "classifier", "--model", str(tmp_path / "nope"))
    assert result.exit_code == 1 and "Traceback" not in result.stderr


def log_odds_table(questions) -> dict[str, tuple[float, float, float]]:
    """Per question: (log p(" True"), log p(" False"), their difference); the sign alternates, the
    size grows (exact binary fractions, so the difference is exact)."""
    table = {}
    for i, q in enumerate(questions):
        diff = (i + 1) * 0.25 * (1 if i % 2 == 0 else -1)
        table[q["question"].strip()] = (-3.0 + diff / 2, -3.0 - diff / 2, diff)
    return table


@pytest.mark.parametrize("threshold", [None, "0.6"])
def test_llm_on_fixtures(runner, monkeypatch, questions, questions_text, threshold):
    """CLAM: score = log p(" True") - log p(" False") after the few-shot prefix, label = score > threshold;
    a fake generator gives known log-probs per question, both signs."""
    from cqtools.models import load as loader
    from cqtools.stages import prompts

    table = log_odds_table(questions)
    by_prompt = {prompts.detect_prompt(q): v for q, v in table.items()}

    def logp(prompt, continuation):
        true, false, _ = by_prompt[prompt]
        return {" True": true, " False": false}[continuation]

    fake = FakeGenerator("", logp, name="fake-clam")
    monkeypatch.setattr(loader, "load_generator", lambda name, device="auto", dtype="auto", kind="auto", config=None: fake)
    args = ["--method", "llm", "--model", "m", "--batch-size", "4"] + (["--threshold", threshold] if threshold else [])
    result = detect(runner, questions_text, *args)
    assert result.exit_code == 0, result.stderr
    out = parse_jsonl(result.stdout)
    assert_well_formed(out, "llm", [q["id"] for q in questions])
    cut = float(threshold or 0.0)
    expected = [table[q["question"].strip()][2] for q in questions]
    assert [r["ambiguity"]["score"] for r in out] == expected
    assert [r["ambiguity"]["label"] for r in out] == [s > cut for s in expected]
    assert {r["ambiguity"]["threshold"] for r in out} == {cut}
    assert any(s > cut for s in expected) and any(s <= cut for s in expected)
    # every question scored once for each label, after the shared few-shot prefix
    assert sorted(fake.scored) == sorted((prompts.detect_prompt(q["question"]), label)
                                         for q in questions for label in prompts.DETECT_LABELS)
    assert {prefix for _, _, prefix in fake.score_calls} == {prompts.detect_prefix()}
    for call_prompts, labels, _ in fake.score_calls:  # first every " True", then every " False", same prompts
        n = len(call_prompts) // 2
        assert labels == [" True"] * n + [" False"] * n and call_prompts[:n] == call_prompts[n:]
    assert out[0]["meta"]["detect"]["model"] == "fake-clam"


@pytest.mark.slow
def test_llm_real_model_on_fixtures(runner, questions, questions_text):
    """CLAM-style scoring with the real SmolLM2 (loaded once per process by load_generator): the score
    is the model's own log-odds of " True" over " False"."""
    from cqtools.models.load import load_generator
    from cqtools.stages import prompts

    result = detect(runner, questions_text, "--method", "llm", "--model", SMOLLM, "--batch-size", "16")
    assert result.exit_code == 0, result.stderr
    out = parse_jsonl(result.stdout)
    assert_well_formed(out, "llm", [q["id"] for q in questions])
    assert out[0]["meta"]["detect"]["model"] == SMOLLM
    assert len({round(r["ambiguity"]["score"], 4) for r in out}) > 5  # scores depend on the question
    gen = load_generator(SMOLLM, "auto")
    texts = [prompts.detect_prompt(q["question"]) for q in questions[:3]]
    true = gen.score(texts, [" True"] * 3, prefix=prompts.detect_prefix())
    false = gen.score(texts, [" False"] * 3, prefix=prompts.detect_prefix())
    assert [r["ambiguity"]["score"] for r in out[:3]] == pytest.approx([t - f for t, f in zip(true, false)], abs=1e-3)
