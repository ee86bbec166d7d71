"""cq answer: answer cleaning, the three modes, round trip, verification, errors, the pipeline."""
import pytest

from cqtools.cli import cli
from cqtools.metrics.cq import parse_cq
from cqtools.stages.answer import (AnswerConfig, Reader, answer_batch, clean_answer, record_cq, revised_question,
                                   split_answers)

from .conftest import jsonl, parse_jsonl
from .conftest_models import FakeCrossEncoder, bm25_index, retrieved  # noqa: F401


@pytest.mark.parametrize("raw, clean", [
    ("The answer is Paris.", "Paris"), ("Answer: \"Heath Ledger\"", "Heath Ledger"), ("Canberra.\nMore text", "Canberra"),
    ("The capital of France is Paris.", "Paris"), ("1989", "1989"), ("  'Tolkien'  ", "Tolkien")])
def test_clean_answer(raw, clean):
    assert clean_answer(raw) == clean


def test_split_answers_dedupes_by_normalised_text():
    assert split_answers("Heath Ledger ; Joaquin Phoenix; heath ledger.; the Jared Leto\n- Jared Leto") == [
        "Heath Ledger", "Joaquin Phoenix", "the Jared Leto"]


def test_revised_question_follows_askcq():
    assert revised_question("Who played the Joker?", "film", "Joker") == "Who played the Joker?, Which film: Joker"
    assert revised_question("Q?", "Which film", "X") == "Q?, Which film: X"
    assert revised_question("Q?", "On which continent", "Asia") == "Q?, On which continent: Asia"
    assert record_cq({"cq": "Which year: 2000, 2004, or 2008?"}) == ("Which year", ["2000", "2004", "2008"])


class FakeGenerator:
    """Answers with the first capitalised word of the prompt's question's revision or passage."""

    info = {"model": "fake", "source": "test", "device": "cpu", "dtype": "float32"}

    def __init__(self, replies):
        self.replies = replies
        self.prompts = []

    def generate(self, prompts, max_new_tokens=32, chat=None, stop=None):
        self.prompts += prompts
        out = []
        for p in prompts:
            question = p.rsplit("Question: ", 1)[1]
            out.append(next((v for k, v in self.replies.items() if k in question), "unknown"))
        return out

    def score(self, prompts, continuations, prefix=""):
        return [-1.0 if "good" in c.lower() or c.strip().lower() == "x" else -20.0 for c in continuations]


def _record(**extra):
    passages = [{"id": f"p{i}", "title": f"T{i}", "text": f"text {i} Alpha Beta", "score": 1.0, "rank": i + 1}
                for i in range(4)]
    return {"id": "r1", "question": "Who?", "passages": passages, **extra}


def test_cq_mode_one_answer_per_option():
    gen = FakeGenerator({"A1": "Answer one.", "B2": "The answer is two"})
    cfg = AnswerConfig(mode="cq")
    record = _record(cq={"text": "Which thing: A1 or B2?", "category": "Which thing", "options": ["A1", "B2"]})
    out = answer_batch([record], Reader(gen, cfg, FakeCrossEncoder()), {"mode": "cq"})[0]
    assert out["answers"] == [{"text": "Answer one", "option": "A1", "question": "Who?, Which thing: A1"},
                              {"text": "two", "option": "B2", "question": "Who?, Which thing: B2"}]
    assert out["meta"]["answer"] == {"mode": "cq"}


def test_cq_mode_selected_option_only():
    gen = FakeGenerator({"B2": "two"})
    record = _record(cq={"category": "thing", "options": ["A1", "B2"]}, selected_option="B2")
    out = answer_batch([record], Reader(gen, AnswerConfig(mode="cq", selected=True), None), {})[0]
    assert [(a["option"], a["text"]) for a in out["answers"]] == [("B2", "two")]


def test_multi_mode_round_trip_and_verify():
    gen = FakeGenerator({"[T": "good c ; x", "Who?": "X ; good b ; x"})
    cfg = AnswerConfig(mode="multi", round_trip=True, max_rounds=3, verify=True, verify_threshold=-5)
    record = _record()
    record["passages"][1]["text"] = "here good b is"
    out = answer_batch([record], Reader(gen, cfg), {})[0]
    texts = [a["text"] for a in out["answers"]]
    assert texts == ["X", "good b", "good c"]  # "x" deduplicated; round trip found "good c"
    assert out["answers"][2]["question"] == "Who? [T1]"
    assert all(a["verify_score"] == -1.0 for a in out["answers"])
    cfg.verify_threshold = 0.0
    assert answer_batch([_record()], Reader(gen, cfg), {})[0]["answers"] == []


def test_record_without_cq_is_a_clear_error(runner):
    result = runner.invoke(cli, ["answer", "--mode", "cq"], input=jsonl([_record()]))
    assert result.exit_code == 1
    assert "has no 'cq'; run `cq gen-cq` first" in result.stderr and "Traceback" not in result.stderr


def test_record_without_passages_is_a_clear_error(runner):
    result = runner.invoke(cli, ["answer"], input=jsonl([{"id": "x", "question": "Who?"}]))
    assert result.exit_code == 1
    assert "run `cq retrieve` first" in result.stderr and result.stderr.count("\n") == 1


def test_selected_needs_cq_mode(runner):
    result = runner.invoke(cli, ["answer", "--selected"], input="")
    assert result.exit_code == 2 and "--selected needs --mode cq" in result.stderr


@pytest.mark.slow
def test_pipeline_retrieve_rerank_answer_single(runner, bm25_index, questions_text):
    lines = "".join(questions_text.splitlines(True)[4:7])  # fx05 fx06 fx07
    retrieved_ = runner.invoke(cli, ["retrieve", "--index", bm25_index, "--hits", "10", "-q"], input=lines)
    reranked = runner.invoke(cli, ["rerank", "--top", "3", "-q"], input=retrieved_.stdout)
    answered = runner.invoke(cli, ["answer", "--mode", "single", "-q"], input=reranked.stdout)
    assert answered.exit_code == 0, answered.stderr
    out = parse_jsonl(answered.stdout)
    assert [r["id"] for r in out] == ["fx05", "fx06", "fx07"]
    for record in out:
        assert len(record["answers"]) == 1 and 1 <= len(record["answers"][0]["text"].split()) <= 8
        assert record["meta"]["answer"]["mode"] == "single" and "model" in record["meta"]["answer"]
        assert "rerank" in record["meta"] and "retrieve" in record["meta"]
    assert out[0]["answers"][0]["text"] == "Canberra"  # measured with SmolLM2-135M, greedy


@pytest.mark.slow
def test_cq_mode_on_fixtures_with_gold_cq(runner, retrieved):
    records = []
    for record in retrieved:
        if record["id"] in ("fx01", "fx16"):
            category, options = parse_cq(record["gold"]["cq"])
            records.append({**record, "cq": {"text": record["gold"]["cq"], "category": category, "options": options}})
    result = runner.invoke(cli, ["answer", "--mode", "cq", "-q", "--passages", "2", "--max-new-tokens", "8"],
                           input=jsonl(records))
    assert result.exit_code == 0, result.stderr
    out = parse_jsonl(result.stdout)
    assert [r["id"] for r in out] == ["fx01", "fx16"]
    for record in out:
        options = record["cq"]["options"]
        assert [a["option"] for a in record["answers"]] == options
        assert all(a["question"].endswith(a["option"]) for a in record["answers"])
    assert out[0]["meta"]["answer"]["reranker"] == "cross-encoder/ms-marco-MiniLM-L-12-v2"
