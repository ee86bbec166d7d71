"""Issue 56: `cq chat` with every default (the shipped classifier and its stored threshold, the pred-answers CQ
writer, the shipped reader), in tmux, on five kinds of question; each turn must make sense. The passages are
the fixture corpus's (fixtures/corpus.jsonl, written for the tests). A consequence of the reader and the
detector, not a target: no stage reads these words. A kind that fails today is xfail with the reason."""
from __future__ import annotations

import time

import pytest

from .conftest import parse_jsonl
from .test_chat import CQ, Tmux, bm25_index, needs_tmux  # noqa: F401 (bm25_index is a fixture)
from .test_first_contact import _matches

QUESTIONS = [  # (kind, question)
    ("one reading, a name", "Who painted the Mona Lisa?"),
    ("a title with a comma among the readings", "Who sings the song Hello?"),
    ("one reading, a place", "What is the capital of Australia?"),
    ("a name two places share", "What is the capital of Georgia?"),
    ("a span of years", "Which city hosted the Summer Olympics in the 2000s?"),
]
FAILING = {  # the shipped reader (MiniLM-L-12, 46c0697) and detector, measured 2026-12-02
    "a name two places share": "the US state's reading (Atlanta) is not offered",
}
# Passing since the 12-layer reader (46c0697): the Mona Lisa's painter (the old reader named the sitter), Canberra
# read over the no-answer score (it was -4.2: a guess); "Hello, Goodbye" no longer split at its comma (h56r's
# options as readings).


@pytest.fixture(scope="module")
def turns(bm25_index, tmp_path_factory):  # noqa: F811
    """One chat session: each question typed, the first option picked when a CQ is asked; its turn log."""
    tmp = tmp_path_factory.mktemp("chat-first-contact")
    log = tmp / "log.jsonl"
    term = Tmux(tmp, [CQ, "chat", "--index", bm25_index, "--retrieve", "bm25", "--log", str(log)])
    try:
        term.wait_for("question>", timeout=600)
        for n, (_, question) in enumerate(QUESTIONS, start=1):
            picks = term.screen().count("pick>")
            term.type(question)
            deadline = time.monotonic() + 600
            while time.monotonic() < deadline:
                screen = term.screen()
                if screen.count("pick>") > picks:
                    term.type("1")
                    term.wait_for("question>", count=n + 1, timeout=600)
                    break
                if screen.count("question>") > n:
                    break
                time.sleep(0.3)
        screen = term.screen()
        term.keys("C-d")
        term.wait_for("EXIT:0")
    finally:
        term.close()
    records = parse_jsonl(log.read_text())
    assert [r["question"] for r in records] == [q for _, q in QUESTIONS], screen
    return dict(zip([k for k, _ in QUESTIONS], records)), screen


def _kind(kind: str):
    return pytest.param(kind, marks=pytest.mark.xfail(reason=FAILING[kind], strict=False)) if kind in FAILING else kind


def answers_of(record: dict) -> list[str]:
    return [a["text"] for a in record.get("answers") or [] if a.get("text")]


def called_ambiguous_has_a_cq_or_says_why(record: dict) -> bool:
    return not record["ambiguity"]["label"] or bool(record.get("cq")) or isinstance(record.get("no_cq"), str)


@pytest.mark.slow
@needs_tmux
@pytest.mark.parametrize("kind", [_kind(k) for k, _ in QUESTIONS])
def test_each_kind_of_question_makes_sense_in_chat(turns, kind):
    from cqtools.records import answer_confidence

    record = turns[0][kind]
    texts = answers_of(record)
    assert texts, f"{kind}: no answer"
    assert called_ambiguous_has_a_cq_or_says_why(record)
    options = (record.get("cq") or {}).get("options") or []
    titles = {p["title"] for p in record["passages"]}
    # an option is never a piece of a passage title cut at its comma ("Hello, Goodbye" -> "Hello", "Goodbye")
    pieces = {part.strip() for t in titles if "," in t for part in t.split(",")} - titles
    assert not set(options) & pieces, options
    if kind == "one reading, a name":
        assert all(_matches(t, ["Leonardo da Vinci"]) for t in texts), texts
    elif kind == "a title with a comma among the readings":
        assert any(_matches(t, ["Adele", "Lionel Richie", "The Beatles"]) for t in texts), texts
    elif kind == "one reading, a place":
        assert texts == ["Canberra"] or all(_matches(t, ["Canberra"]) for t in texts), texts
        assert not any(answer_confidence(a) == "guess" for a in record["answers"]), record["answers"]
    elif kind == "a name two places share":
        assert record["cq"] and any(_matches(t, ["Atlanta"]) for t in texts + options), (options, texts)
    elif kind == "a span of years":
        assert record["ambiguity"]["label"] and record["cq"] and len(options) >= 2, options
        assert all(_matches(t, ["Sydney", "Athens", "Beijing"]) for t in texts), texts


@pytest.mark.slow
@needs_tmux
def test_one_reading_is_not_asked_back(turns):
    """Issue 57 item 13: "What is the capital of Australia?" has one reading; chat answers it and asks nothing
    back (no CQ, no pick> prompt for that turn)."""
    record = turns[0]["one reading, a place"]
    assert not record.get("cq"), record.get("cq")
    assert answers_of(record), record
