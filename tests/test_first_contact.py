"""Issue 48, "First contact": what a newcomer meets in `cq chat` and `make demo`.

One detector for both (DEFAULT_DETECTOR); a CQ's options are readings of the question, not candidate answers of
one reading; an option's answer is read from the passages that option stands for; an answer read from its
option's own passage is given (not "no passage answers this"), and `cq show` says when an answer is a guess.
The passages here are written for these tests (facts, our own sentences); no model runs."""
import inspect
import re
from pathlib import Path

import pytest

from cqtools.chat.session import NO_ANSWER, ChatOptions, render_answers
from cqtools.cli import cli
from cqtools.show import render
from cqtools.stages import detect
from cqtools.stages.answer.questions import questions_of
from cqtools.stages.gen_cq.answers import answers_cq
from cqtools.stages.options import DEFAULT_DETECTOR

ROOT = Path(__file__).resolve().parents[1]


def passage(pid, title, text, rerank=5.0):
    return {"id": pid, "title": title, "text": text, "score": 1.0, "rerank_score": rerank}


def read(text, pid, score=1.0):
    return {"text": text, "score": score, "passage_id": pid, "grounding": "span"}


def grounded_cq(record):
    """cq gen-cq's default CQ writer (pred-answers) with its default settings."""
    return answers_cq(record, max_options=4, option_text="auto", min_score=None, min_rerank_score=0.0,
                      two_options="or", fallback="titles")


# --- one detector --------------------------------------------------------------------------------

def detect_cli_default() -> str:
    from cqtools.cli.detect import cli as detect_cli

    return next(p.default for p in detect_cli.params if p.name == "method")


def demo_detector() -> str:
    """The --method of the `cq detect` in the Makefile's demo recipe (cq detect's default when it names none)."""
    text = (ROOT / "Makefile").read_text()
    recipe = text[text.index("\ndemo:"):].split("\n\n")[0]
    found = re.search(r"\$\(CQ\) detect\b([^|\n]*)", recipe)
    assert found, "the demo recipe runs no cq detect"
    method = re.search(r"--method[ =](\S+)", found.group(1))
    return method.group(1) if method else detect_cli_default()


def test_chat_and_the_demo_use_one_detector(runner, monkeypatch, tmp_path):
    from cqtools import chat

    seen = []

    def session(opts, status=None, config=None):
        seen.append(opts)
        raise EOFError  # the person pressed Ctrl-D before asking: no model loads

    monkeypatch.setattr(chat, "Session", session)
    result = runner.invoke(cli, ["chat", "--index", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert seen[0].detect == ChatOptions(index_dir="x").detect == DEFAULT_DETECTOR == demo_detector()
    assert detect_cli_default() == inspect.signature(detect.build).parameters["method"].default == DEFAULT_DETECTOR


# --- options are readings ------------------------------------------------------------------------

CITIES = {"id": "au", "question": "What is the capital of Australia?",
          "passages": [passage("c1", "Canberra", "Canberra was picked as the seat of the federal government of "
                                                 "Australia in 1908."),
                       passage("c2", "Sydney", "Sydney is the most populous city in Australia."),
                       passage("c3", "Melbourne", "Melbourne held the federal parliament until 1927.")],
          "answers": [read("Canberra", "c1", -4.0), read("Sydney", "c2", -5.0), read("Melbourne", "c3", -6.0)]}


def test_candidate_answers_are_not_offered_as_readings():
    """Passages about three candidate answers of one reading give no CQ (the question is answered directly),
    neither from their answers nor from their titles."""
    assert grounded_cq(CITIES) is None
    one = {**CITIES, "answers": CITIES["answers"][:1]}  # only "Canberra" read: its neighbours are candidates too
    assert grounded_cq(one) is None


def test_readings_whose_titles_are_not_answers_are_still_offered():
    record = {"id": "lotr", "question": "Who wrote The Lord of the Rings?",
              "passages": [passage("n1", "The Lord of the Rings", "The Lord of the Rings is a fantasy novel by "
                                                                  "J. R. R. Tolkien."),
                           passage("f1", "The Lord of the Rings (film series)", "The film trilogy was written for "
                                   "the screen by Fran Walsh, Philippa Boyens and Peter Jackson.")],
              "answers": [read("J. R. R. Tolkien", "n1"), read("Fran Walsh", "f1")]}
    cq = grounded_cq(record)
    assert cq["options"] == ["The Lord of the Rings", "The Lord of the Rings (film series)"]
    assert cq["option_passages"] == [["n1"], ["f1"]]


# --- an option's answer is its own passage's -----------------------------------------------------

SONG = {"id": "hal", "question": "Who sang Hallelujah?",
        "passages": [passage("h1", "Hallelujah (Leonard Cohen song)", "Leonard Cohen first recorded Hallelujah "
                             "for his 1984 album Various Positions.", 9.0),
                     passage("h2", "Messiah (Handel)", "Hallelujah is the chorus closing the second part of the "
                             "oratorio Messiah, written by George Frideric Handel.", 8.5)],
        "answers": [read("Leonard Cohen", "h1", -4.9), read("George Frideric Handel", "h2", 1.8)]}


def test_each_option_reads_only_the_passages_it_stands_for():
    record = {**SONG, "cq": grounded_cq(SONG)}
    assert record["cq"]["options"] == ["Hallelujah (Leonard Cohen song)", "Messiah (Handel)"]
    questions = questions_of([record], "cq")
    assert [[p["id"] for p in q.passages] for q in questions] == [["h1"], ["h2"]]
    assert all(q.own for q in questions)
    typed = questions_of([{**record, "selected_option": "the Jeff Buckley cover"}], "cq", selected=True)
    assert [p["id"] for p in typed[0].passages] == ["h1", "h2"]  # a typed reading stands for no passage: all


def test_an_answer_read_from_its_options_own_passage_is_given():
    """Hallelujah: the shipped reader scores "Leonard Cohen" under "no answer here" (-4.9), yet it is read from
    the option's own passage: chat gives it (low confidence), not "no passage answers this"."""
    option = "Hallelujah (Leonard Cohen song)"
    own = {**read("Leonard Cohen", "h1", -4.9), "option": option, "option_passage": True}
    lines = render_answers({**SONG, "answers": [own]}, mark=lambda t: f"[{t}]")
    assert lines[0].startswith(f"answer ({option}): Leonard Cohen") and NO_ANSWER not in lines[0]
    assert lines[1].startswith('  from "Hallelujah (Leonard Cohen song)" [h1]: [Leonard Cohen] first recorded')
    elsewhere = {**read("Leonard Cohen", "h1", -4.9), "option": option}  # read over every passage: still a guess
    assert NO_ANSWER in render_answers({**SONG, "answers": [elsewhere]}, mark=str)[0]


# --- cq show says when an answer is a guess -------------------------------------------------------

def test_show_says_when_an_answer_is_a_guess():
    record = {"id": "g", "question": "Who sang Hallelujah?",
              "answers": [read("George Frideric Handel", "h2", 1.8), read("Jeff Buckley", "h1", -6.0),
                          {**read("Leonard Cohen", "h1", -4.9), "option": "x", "option_passage": True},
                          {"text": "Rufus Wainwright", "grounding": "score"}]}
    lines = [line for line in render(record).splitlines() if "answer:" in line]
    assert "guess" not in lines[0]
    assert "(a guess: no passage clearly answers it)" in lines[1] and "(a guess: no passage" in lines[3]
    assert "low reader confidence" in lines[2]


@pytest.mark.parametrize("score", [0.0, 2.5])
def test_show_marks_no_answer_the_reader_is_sure_of(score):
    assert "guess" not in render({"id": "s", "question": "q", "answers": [read("Canberra", "c1", score)]})


# --- a question called ambiguous gets a CQ or says why not (issue 56) -----------------------------

def test_an_ambiguous_question_without_a_cq_says_why(capsys):
    from cqtools.chat.dialogue import clarify_and_answer
    from cqtools.stages import gen_cq

    called = {**CITIES, "ambiguity": {"label": True, "score": 0.6, "method": "classifier", "threshold": 0.15}}
    direct = {**CITIES, "id": "au2", "ambiguity": {**called["ambiguity"], "label": False, "score": 0.1}}
    out = gen_cq.build()([dict(called), dict(direct)])
    assert out[0]["cq"] is None and "3 distinct answers" in out[0][gen_cq.NO_CQ]
    assert out[1]["cq"] is None and gen_cq.NO_CQ not in out[1]  # judged unambiguous: nothing to explain
    assert f"clarify: none: {out[0][gen_cq.NO_CQ]}" in render(out[0])
    assert "clarify" not in render(out[1])

    class Term:
        def write(self, line):
            written.append(line)

        def mark(self, text):
            return text

    class Session:
        def answer(self, record, choice, selected):
            assert (choice, selected) == ("direct", None)
            return {**record, "answers": [read("Canberra", "c1", 2.0)]}

    written = []
    clarify_and_answer(Session(), Term(), out[0])
    assert written[0] == f"(no clarifying question: {out[0][gen_cq.NO_CQ]})"
    assert written[1].startswith("answer: Canberra")


# --- make demo's eight answers, as a reader of their passages would judge them (issue 56) ----------
# What each fixture question must get: the gold answers (fixtures/questions.jsonl) of the readings named here,
# and no answer outside the accepted ones. A consequence of the reader and detector, not a target: no stage
# reads these words. Cases that fail today are xfail with the reason (docs/benchmarks/first-contact.md).

FILM_WRITERS = ["Peter Jackson", "Fran Walsh", "Philippa Boyens"]  # what the film series' passage supports
DEMO_CASES = {  # id: (readings that must be answered (indices into gold.answers), extra accepted, needs a CQ)
    "fx01": ((0, 1), ["Jack Nicholson"], True),  # Batman (1989)'s Joker, as its passage says
    "fx02": ((0,), FILM_WRITERS, False),
    "fx03": ((0, 1, 2), [], True),
    "fx04": ((0, 1, 2), [], True),
    "fx05": ((0,), [], False),
    "fx06": ((0, 1), [], True),
    "fx07": ((0,), [], False),
    "fx08": ((0, 1), ["George Frideric Handel"], True),  # the Hallelujah chorus's
}
DEMO_FAILING = {  # the shipped reader (MiniLM-L-12, 46c0697), measured 2026-12-02
    "fx03": "the Cricket World Cup's winner is right now (England), but the other two readings get a host or a "
            "finalist: the Rugby World Cup 'England' (South Africa won), the Women's World Cup 'France' (the hosts)",
    "fx04": "the 2000s reading: the CQ offers 2012 (London), which is not in the 2000s, and misses 2004 (Athens)",
    "fx06": "the US state's reading (Atlanta) is not offered: only Tbilisi is answered",
}
# Passing since (docs/benchmarks/first-contact.md): fx02 (the film series' writer Peter Jackson, not the actor) and
# fx07 (the painter, not the sitter) with the 12-layer reader; fx05 (Canberra read over the no-answer score, +5.7,
# so not a guess) with it too; fx08 (an option's reading may answer with the option's own words: "Leonard Cohen"
# for "Hallelujah (Leonard Cohen song)") since the answer stage's `asked`.


def _matches(text: str, aliases) -> bool:
    """SQuAD token F1 over 0.5 with an alias: "the Canadian singer Leonard Cohen" is Leonard Cohen, "England and
    Wales" (0.5) is not England."""
    from cqtools.metrics.normalize import token_f1

    return any(token_f1(alias, text) > 0.5 for alias in aliases)


@pytest.fixture(scope="module")
def demo_records(tmp_path_factory):
    """`make demo` as a newcomer runs it (its own WORK: the fixture index built, every default), its records."""
    import subprocess

    from .conftest import parse_jsonl

    work = tmp_path_factory.mktemp("demo-work")
    done = subprocess.run(["make", "-s", "demo", f"WORK={work}"], cwd=ROOT, capture_output=True, text=True,
                          timeout=3600)
    assert done.returncode == 0, done.stderr[-3000:]
    return {r["id"]: r for r in parse_jsonl((work / "demo.jsonl").read_text())}


@pytest.mark.slow
@pytest.mark.parametrize("qid", [pytest.param(q, marks=pytest.mark.xfail(reason=DEMO_FAILING[q], strict=False))
                                 if q in DEMO_FAILING else q for q in DEMO_CASES])
def test_make_demo_answers_like_a_reader_of_its_passages(demo_records, qid):
    from cqtools.records import answer_confidence

    record = demo_records[qid]
    readings, extra, needs_cq = DEMO_CASES[qid]
    gold = record["gold"]["answers"]
    accepted = [a for aliases in gold for a in aliases] + extra
    given = [a for a in record["answers"] if a.get("text")]
    assert given, f"{qid}: no answer"
    assert all(_matches(a["text"], accepted) for a in given), [a["text"] for a in given]
    assert all(any(_matches(a["text"], gold[i]) for a in given) for i in readings), [a["text"] for a in given]
    assert not any(answer_confidence(a) == "guess" for a in given), [(a["text"], a.get("score")) for a in given]
    if needs_cq:
        assert record["ambiguity"]["label"] and record["cq"] and len(record["cq"]["options"]) >= 2
