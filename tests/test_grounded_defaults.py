"""Issue 37, item 1: the grounded CQ writer (pred-answers) is the default wherever no LM is named: `cq chat` as
`cq gen-cq`; and when no record gets a CQ, the hint names the cause of the method that ran, not a tiny LM."""
import pytest

from cqtools.cli import cli

from .conftest import jsonl


@pytest.fixture
def chat_options(monkeypatch):
    """The options `cq chat` starts its session with (the session itself is not built: no model loads)."""
    from cqtools import chat

    seen = []

    def session(opts, status=None, config=None):
        seen.append(opts)
        raise EOFError  # as if the person pressed Ctrl-D before the first question

    monkeypatch.setattr(chat, "Session", session)
    return seen


def test_chat_writes_grounded_cqs_unless_an_lm_is_named(runner, chat_options, tmp_path, monkeypatch):
    monkeypatch.delenv("CQ_MODEL_GEN_CQ", raising=False)
    for args, env, method, model in (([], {}, "pred-answers", None),
                                     (["--model", "some/llm"], {}, "llm", "some/llm"),
                                     (["--gen-cq-model", "other/llm"], {}, "llm", "other/llm"),
                                     ([], {"CQ_MODEL_GEN_CQ": "env/llm"}, "llm", "env/llm"),
                                     (["--gen-cq", "llm"], {}, "llm", None),
                                     (["--model", "some/llm", "--gen-cq", "from-dqs"], {}, "from-dqs", None)):
        result = runner.invoke(cli, ["chat", "--index", str(tmp_path), *args], env=env)
        assert result.exit_code == 0, result.output
        opts = chat_options.pop()
        assert (opts.gen_cq, opts.gen_cq_model) == (method, model), args
    text = " ".join(runner.invoke(cli, ["chat", "--help"]).stdout.split())
    assert "[default: pred-answers; llm when --model or --gen-cq-model names an LM]" in text
    assert "the llm CQ writer (SmolLM2 offline" not in text and "grounded CQ writer (pred-answers" in text


def test_the_empty_cq_hint_names_the_cause_of_the_method_that_ran(runner):
    # answers read, but every passage judged irrelevant by the reranker: nothing to offer (no model loads)
    records = [{"id": str(i), "question": f"Q{i}?", "answers": [],
                "passages": [{"id": f"p{i}", "title": f"T{i}", "text": "x", "rerank_score": -7.7}]} for i in range(3)]
    grounded = runner.invoke(cli, ["gen-cq", "--all"], input=jsonl(records))
    assert grounded.exit_code == 0, grounded.stderr
    assert "'cq' is empty on every one of the 3 records" in grounded.stderr
    assert "pred-answers found fewer than two options" in grounded.stderr and "--min-rerank-score" in grounded.stderr
    assert "tiny LM" not in grounded.stderr
    unambiguous = [{**r, "gold": {"dqs": []}} for r in records]
    gold = runner.invoke(cli, ["gen-cq", "--method", "from-dqs", "--all"], input=jsonl(unambiguous))
    assert gold.exit_code == 0, gold.stderr
    assert "gold holds two interpretations or more" in gold.stderr and "tiny LM" not in gold.stderr
