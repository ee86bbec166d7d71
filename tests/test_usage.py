"""LM calls, tokens and seconds per stage (issue 46 item 4): what a tiny model's calls count
(cqtools/models/usage.py), what the stream engine notes in ``meta.usage.<stage>`` with ``CQ_USAGE=1``
(cqtools/stream/usage.py), and ``cq score --task clam --curves``'s cost per answered question."""
import json

import pytest
from click.testing import CliRunner

from cqtools.cli import cli
from cqtools.models import usage

from .conftest import jsonl, parse_jsonl


@pytest.fixture(scope="module")
def gen(tiny_causal):
    from cqtools.models.load import load_generator

    return load_generator(tiny_causal, "cpu")


def hf_new_tokens(gen, prompt: str, max_new_tokens: int) -> int:
    """The tokens transformers' own greedy generate makes for ``prompt`` (up to and with the end token)."""
    import torch

    ids = gen.tokenizer(prompt, return_tensors="pt").input_ids
    with torch.inference_mode():
        out = gen.model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=max_new_tokens,
                                 do_sample=False, pad_token_id=gen.pad_id)
    new = out[0, ids.shape[1]:].tolist()
    eos = gen.model.generation_config.eos_token_id
    return new.index(eos) + 1 if eos in new else len(new)


def test_a_tiny_models_generation_counts_its_calls_prompt_and_generated_tokens(gen):
    prompts = ["who wrote the song", "when was the tower built in paris", "who wrote the song"]
    with usage.counting() as ledger:
        out = gen.generate(prompts, max_new_tokens=7)
    assert len(out) == 3
    assert ledger.calls == 3  # each prompt asked counts, the repeated one too (the same counts whatever its batch)
    assert ledger.prompt_tokens == sum(len(gen.tokenizer(p).input_ids) for p in prompts)
    assert ledger.generated_tokens == sum(hf_new_tokens(gen, p, 7) for p in prompts)
    assert 0 < ledger.generated_tokens <= 21 and ledger.seconds > 0


def test_scoring_counts_each_pair_and_no_open_ledger_counts_nothing(gen):
    with usage.counting() as ledger:
        gen.score(["is it", "is it not"], [" yes", " no"], prefix="Q: ")
    ids = lambda text: gen.tokenizer(text, add_special_tokens=False).input_ids  # noqa: E731
    assert ledger.calls == 2 and ledger.generated_tokens == 0
    assert ledger.prompt_tokens == len(ids("Q: is it")) + len(ids(" yes")) + len(ids("Q: is it not")) + len(ids(" no"))
    with usage.counting() as outer:
        with usage.counting() as inner:
            gen.generate(["who"], max_new_tokens=2)
    assert inner.calls == 1 and outer.calls == 0
    assert not usage.active()


def _answer(records, tiny, batch_size, monkeypatch, on: bool):
    if on:
        monkeypatch.setenv("CQ_USAGE", "1")
    else:
        monkeypatch.delenv("CQ_USAGE", raising=False)
    result = CliRunner().invoke(cli, ["answer", "--mode", "single", "--model", tiny, "--max-new-tokens", "5",
                                      "--batch-size", str(batch_size), "-q"], input=jsonl(records))
    assert result.exit_code == 0, result.stderr
    return parse_jsonl(result.stdout)


def test_cq_usage_notes_each_records_share_and_changes_nothing_else(questions, tiny_causal, monkeypatch):
    passages = [{"id": "p1", "title": "Song", "text": "The song was written in 1970."},
                {"id": "p2", "title": "Tower", "text": "The tower was built in 1889."}]
    records = [{"id": q["id"], "question": q["question"], "passages": passages} for q in questions[:3]]
    plain = _answer(records, tiny_causal, 1, monkeypatch, on=False)
    alone = _answer(records, tiny_causal, 1, monkeypatch, on=True)
    together = _answer(records, tiny_causal, 3, monkeypatch, on=True)
    assert all("usage" not in r.get("meta", {}) for r in plain)  # off by default: records as before
    for a, b in zip(plain, alone):
        noted = b["meta"].pop("usage")
        assert a == b and list(noted) == ["answer"]
    shares = [r["meta"]["usage"]["answer"] for r in together]
    own = [r["meta"]["usage"]["answer"] for r in _answer(records, tiny_causal, 1, monkeypatch, on=True)]
    assert all(s["batch"] == 3 for s in shares) and all(o["batch"] == 1 for o in own)
    assert all(o["calls"] >= 1 and o["prompt_tokens"] > 0 and o["generated_tokens"] > 0 for o in own), own
    for key in ("calls", "prompt_tokens", "generated_tokens"):  # a run's shares add up to what it cost
        assert sum(s[key] for s in shares) == pytest.approx(sum(o[key] for o in own))


def _clam(rid, answer, share=None):
    rec = {"id": rid, "question": f"q {rid}", "gold": {"ambiguous": False, "answers": [["A"]]}, "cq": None,
           "answers": [{"text": answer}] if answer is not None else []}
    if share is not None:
        rec["meta"] = {"usage": share}
    return rec


def _score(records, *args):
    return CliRunner().invoke(cli, ["score", "--task", "clam", "--curves", *args], input=jsonl(records))


def test_clam_curves_reports_the_cost_per_answered_question():
    """r1 and r2 answered, r3 not: (3 + 1 + 2) calls / 2 answered = 3; prompt tokens (30 + 10 + 20) / 2 = 30;
    generated (6 + 2 + 0) / 2 = 4; seconds (1.5 + 0.5 + 1.0) / 2 = 1.5. r4 (answered) carries no usage: left out,
    and noted."""
    records = [
        _clam("r1", "A", {"detect": {"calls": 1, "prompt_tokens": 10, "generated_tokens": 0, "seconds": 0.5},
                          "answer": {"calls": 2, "prompt_tokens": 20, "generated_tokens": 6, "seconds": 1.0}}),
        _clam("r2", "B", {"answer": {"calls": 1, "prompt_tokens": 10, "generated_tokens": 2, "seconds": 0.5,
                                     "batch": 1}}),
        _clam("r3", None, {"answer": {"calls": 2, "prompt_tokens": 20, "generated_tokens": 0, "seconds": 1.0}}),
        _clam("r4", "A")]
    result = _score(records)
    assert result.exit_code == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["cost"]["per_answered_question"] == {"calls": 3.0, "prompt_tokens": 30.0, "generated_tokens": 4.0,
                                                        "seconds": 1.5}
    assert summary["cost"]["answered"] == 2 and summary["cost"]["with_usage"] == 3
    assert any("1 record(s) carry no meta.usage" in n for n in summary["notes"])
    table = _score(records, "--format", "table")
    assert "cost.per_answered_question.calls" in table.stdout
    plain = json.loads(CliRunner().invoke(cli, ["score", "--task", "clam"], input=jsonl(records)).stdout)
    assert plain["cost"] == summary["cost"]  # issue 59: the cost is reported without --curves too


def test_clam_curves_without_usage_has_no_cost_and_bad_usage_is_a_one_line_error():
    summary = json.loads(_score([_clam("r1", "A")]).stdout)
    assert summary["cost"] is None and not any("usage" in n for n in summary["notes"])
    bad = _score([_clam("r1", "A"), _clam("r2", "A", {"answer": {"calls": "three"}})])
    assert bad.exit_code != 0 and "Traceback" not in bad.stderr
    assert "meta.usage.answer.calls must be a number" in bad.stderr and "line 2" in bad.stderr


def test_an_api_models_calls_count_the_servers_token_counts(server, tmp_path, monkeypatch):
    """tests/openai_server.py answers completions with usage {prompt_tokens: its tokens of the prompt,
    completion_tokens: 1} and chat with {1, 1}; a repeated prompt is one request but two calls."""
    from cqtools.models.openai_backend import OpenAIGenerator

    from .openai_server import tokenize

    server.control(reset=True, reply=" Which one?")
    monkeypatch.setenv("CQ_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("CQ_API_KEY", "sk-test")
    gen = OpenAIGenerator("fake", server.url)
    with usage.counting() as ledger:
        gen.generate(["who wrote it", "when", "who wrote it"], max_new_tokens=4, chat=False)
        gen.generate(["hello"], max_new_tokens=4)
    assert ledger.calls == 4
    assert ledger.prompt_tokens == 2 * len(tokenize("who wrote it")) + len(tokenize("when")) + 1
    assert ledger.generated_tokens == 4
    with usage.counting() as scored:
        gen.score(["Q: is it"], [" True"])
    assert (scored.calls, scored.prompt_tokens, scored.generated_tokens) == (1, 0, 0)
