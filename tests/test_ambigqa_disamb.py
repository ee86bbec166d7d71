"""AmbigQA's question disambiguation as its released model reads it (--preset ambigqa) and the
DISAMBIG-FIRST baseline's steps 1-2 (--method disambig-first, --preset disambig-first), traced
through a scripted generator behind the real CLI."""
from __future__ import annotations

import json

import pytest

from cqtools.cli import cli

from .conftest import FIXTURES, jsonl, parse_jsonl
from .fakes import FakeGenerator

RELEASED = FIXTURES / "released" / "ambigqa_qd"
WORDS = "the city hosted a great many events in that year and the next one as well".split()


def long_text(n: int, words: int = 120) -> str:
    return f"passage{n} " + " ".join(WORDS[i % len(WORDS)] for i in range(words - 1))


@pytest.fixture
def lm(monkeypatch):
    """Echoes the question (a qd prompt), or writes two readings (a disambig-first prompt)."""
    from cqtools.models import load as loader

    def reply(p: str) -> str:
        if p.rstrip().endswith("Rewritten question:"):
            return p.rsplit("Question: ", 1)[1].split("\n", 1)[0]
        question = p.rsplit("Question: ", 1)[1].split("\n", 1)[0].rstrip("?")
        return f" {question} in the film?\n2. {question} in the novel?\n3. {question} in the film?"

    gen = FakeGenerator(reply, name="fake-lm")
    monkeypatch.setattr(loader, "load_generator", lambda *a, **k: gen)
    return gen


def multi_record(n_answers: int = 7, n_passages: int = 12) -> dict:
    answers = [{"text": f"Answer{i}"} for i in range(n_answers)]
    passages = [{"id": f"p{i}", "title": f"Title{i}", "text": long_text(i)} for i in range(n_passages)]
    passages[-1]["text"] += " Answer0"  # the only passage holding Answer0 is the last one
    return {"id": "m1", "question": "Who hosted it?", "answers": answers, "passages": passages}


def invoke(runner, args, records):
    result = runner.invoke(cli, ["disambiguate", "-q", *args], input=jsonl(records))
    assert result.exit_code == 0, result.stderr
    return parse_jsonl(result.stdout)


def test_qd_under_the_ambigqa_preset_conditions_as_the_released_model(runner, lm):
    """Answer, question, every other answer, then passages in reranked order up to 1,024 tokens; an
    echoed DQ stays as generated (no "AQ (title)?")."""
    from cqtools.stages import evidence
    from cqtools.records import snippets

    record = multi_record()
    [out] = invoke(runner, ["--preset", "ambigqa"], [record])
    assert len(lm.prompts) == 7
    prompt = lm.prompts[0]
    query = prompt.rsplit("Answer: Answer0\n", 1)[1]
    assert query.startswith("Question: Who hosted it?\nOther answers: Answer1; Answer2; Answer3; Answer4; "
                            "Answer5; Answer6\nPassage: Title0: passage0 ")
    shown = [line.split(": ", 2)[1] for line in query.splitlines() if line.startswith("Passage: ")]
    count = evidence.token_counter(None)
    head = "Answer: Answer0\n" + query.split("Passage: ", 1)[0] + "Rewritten question:"
    fits = evidence.fit(record["passages"], 1024, count, count(head),
                        render=lambda p: snippets([p], 1, 100)[0])
    assert 1 < len(fits) < 12 and shown == [p["title"] for p in fits]  # reranked order, budget respected
    assert out["meta"]["passages_read"]["disambiguate"] == [len(fits)] * 7
    assert [d["question"] for d in out["dqs"]] == ["Who hosted it?"] * 7  # kept as generated
    assert not any(d.get("fallback") for d in out["dqs"])
    params = out["meta"]["disambiguate"]
    assert params["layout"] == "ambigqa" and params["duplicates"] == "keep" and params["max_passage_tokens"] == 1024

    # without the preset, cq's own variant as before: answer-holding passage first, 5 shown, 5 other
    # answers, and the echo replaced by "AQ (title)?"
    lm.prompts.clear()
    [out] = invoke(runner, ["--method", "qd"], [record])
    query = lm.prompts[0].rsplit("\n\n", 1)[1]
    assert query.rsplit("Other answers: ", 1)[1].startswith("Answer1; Answer2; Answer3; Answer4; Answer5\n")
    shown = [line.split(": ", 2)[1] for line in query.splitlines() if line.startswith("Passage: ")]
    assert shown == ["Title11", "Title0", "Title1", "Title2", "Title3"]
    assert all(d.get("fallback") for d in out["dqs"][1:]) and out["dqs"][0]["question"] == "Who hosted it (Title11)?"
    assert "layout" not in out["meta"]["disambiguate"] and "passages_read" not in out["meta"]


def test_qd_prompt_puts_the_released_inputs_parts_in_their_order(runner, lm):
    """Each released QD input (fixtures/released/ambigqa_qd) against cq's prompt for the same record
    and target answer: answer, question, other answers in the same order, then the passages from the
    same first one (the released loop repeats it; cq goes on in reranked order)."""
    records = json.loads((RELEASED / "records.json").read_text())
    released = json.loads((RELEASED / "released_layout.json").read_text())
    cq_records = [{"id": r["id"], "question": r["question"], "passages": r["passages"],
                   "answers": [{"text": p["answer"][0]} for p in r["annotations"][0]["qaPairs"]]} for r in records]
    invoke(runner, ["--preset", "ambigqa"], cq_records)
    assert len(lm.prompts) == len(released)
    titles = {r["id"]: [p["title"] for p in r["passages"]] for r in records}
    for prompt, row in zip(lm.prompts, released):
        parts = row["before_passages"].replace("<s>", "").replace("</s>", "").split("<SEP>")
        answer, question, *others = [p.strip() for p in parts]
        query = prompt.rsplit("\n\n", 1)[1]
        assert query.startswith(f"Answer: {answer}\nQuestion: {question}\nOther answers: {'; '.join(others)}\n")
        shown = [line.split(": ", 2)[1] for line in query.splitlines() if line.startswith("Passage: ")]
        assert shown[0] == row["passages_in_order"][0] and shown == titles[row["id"]]


def test_disambig_first_rewrites_only_ambiguous_questions_closed_book(runner, lm):
    passages = [{"id": "p1", "title": "Wonka", "text": "Gene Wilder played Willy Wonka in 1971"}]
    records = [{"id": "a", "question": "Who played Willy Wonka?", "passages": passages, "answers": [{"text": "X"}],
                "ambiguity": {"label": True, "score": 0.9}},
               {"id": "u", "question": "Who wrote Hamlet?", "passages": passages,
                "ambiguity": {"label": False, "score": 0.1}}]
    amb, plain = invoke(runner, ["--preset", "disambig-first"], records)
    assert len(lm.prompts) == 1  # the unambiguous question asks nothing
    prompt = lm.prompts[0]
    assert "Who played Willy Wonka?" in prompt and "Gene Wilder played" not in prompt and "Passage" not in prompt
    assert "Answer" not in prompt.rsplit("Question: ", 1)[1]
    assert amb["dqs"] == [{"question": "Who played Willy Wonka in the film?"},
                          {"question": "Who played Willy Wonka in the novel?"}]  # no answers; the repeat dropped
    assert plain["dqs"] == [{"question": "Who wrote Hamlet?", "unchanged": True}]
    assert amb["meta"]["disambiguate"]["method"] == "disambig-first"
    assert [amb["meta"]["disambiguate"]["model_calls"], plain["meta"]["disambiguate"]["model_calls"]] == [1, 0]


def test_disambig_first_needs_the_detectors_label(runner, lm):
    result = runner.invoke(cli, ["disambiguate", "--method", "disambig-first", "-q"],
                           input=jsonl([{"id": "n1", "question": "Who?"}]))
    assert result.exit_code == 1 and result.stdout == "" and "Traceback" not in result.stderr
    assert "n1" in result.stderr and "cq detect" in result.stderr and len(result.stderr.strip().splitlines()) == 1
