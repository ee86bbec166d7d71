"""Issue 56 item 3, "options are readings": a CQ's options are never fragments of a title split at a comma, the
options cover the distinct answers the passages hold, and the confidence label agrees with the evidence (a span
read from its question's first passage is not "a guess"). Hand-written records (our own sentences); no model."""
from cqtools.chat.session import NO_ANSWER, render_answers
from cqtools.metrics.cq import parse_cq
from cqtools.records import GUESS, LOW, SURE, answer_confidence
from cqtools.show import render
from cqtools.stages.gen_cq.answers import answers_cq
from cqtools.stages.gen_cq.form import canonical_cq, in_form, which


def passage(pid, title, text, rerank=5.0):
    return {"id": pid, "title": title, "text": text, "score": 1.0, "rerank_score": rerank}


def span(text, pid, score, rank):
    return {"text": text, "score": score, "passage_id": pid, "passage_rank": rank, "grounding": "span"}


HELLO = {"id": "hello", "question": "Who sings the song Hello?",
         "passages": [passage("b", "Hello, Goodbye", "Hello, Goodbye is a song recorded by the Beatles in 1967."),
                      passage("a", "Hello (Adele song)", "Hello is a song recorded by Adele for her album 25.", 4.0),
                      passage("r", "Hello (Lionel Richie song)", "Lionel Richie recorded the ballad Hello in 1984.", 3.0)],
         "answers": [span("the Beatles", "b", 2.0, 0), span("Adele", "a", 1.5, 1), span("Lionel Richie", "r", 0.7, 2)]}


def test_a_title_with_a_comma_is_one_option_and_reads_back_whole():
    cq = canonical_cq(which("one"), ["Hello, Goodbye", "Hello (Adele song)"], "pred-answers", whole=True)
    assert cq["options"] == ["Hello, Goodbye", "Hello (Adele song)"] and cq["valid"]
    assert parse_cq(cq["text"]) == ("Which one", ["Hello, Goodbye", "Hello (Adele song)"])
    three = canonical_cq(which("one"), ["Hello, Goodbye", "Rock or Bust", 'Say "Hello"'], "pred-answers", whole=True)
    assert three["options"] == ["Hello, Goodbye", "Rock or Bust", 'Say "Hello"']
    assert in_form(cq, "comma")["options"] == cq["options"]  # AskCQ's two-option form keeps it whole too


def test_the_options_cover_the_distinct_answers_the_passages_hold():
    cq = answers_cq(HELLO, max_options=4, option_text="auto", min_score=None, min_rerank_score=0.0,
                    two_options="or", fallback="titles")
    assert cq["options"] == ["Hello, Goodbye", "Hello (Adele song)", "Hello (Lionel Richie song)"]
    assert cq["answers"] == ["the Beatles", "Adele", "Lionel Richie"]
    assert "Hello" not in cq["options"] and "Goodbye" not in cq["options"]
    assert parse_cq(cq["text"])[1] == cq["options"]


def test_a_span_of_the_first_passage_is_not_a_guess():
    """Canberra read from the passage ranked first, under the reader's "no answer" score: low confidence, never
    "a guess"; the same span from a lower passage is one; a span the selection head's passage holds is not."""
    assert answer_confidence(span("Canberra", "c", -4.2, 0)) == LOW
    assert answer_confidence(span("Canberra", "c", -4.2, 2)) == GUESS
    assert answer_confidence({**span("Canberra", "c", -4.2, 2), "selected": True}) == LOW
    assert answer_confidence(span("Canberra", "c", 0.3, 2)) == SURE
    assert answer_confidence({"text": "Canberra", "grounding": "score", "passage_rank": 0}) == GUESS
    record = {"id": "au", "question": "What is the capital of Australia?",
              "passages": [passage("c", "Canberra", "Canberra is the capital city of Australia.")],
              "answers": [span("Canberra", "c", -4.2, 0)]}
    shown = [line for line in render(record).splitlines() if "answer:" in line]
    assert "Canberra" in shown[0] and "guess" not in shown[0] and "low reader confidence" in shown[0]
    chat = render_answers(record, mark=str)
    assert chat[0].startswith("answer: Canberra") and NO_ANSWER not in chat[0]
    lower = {**record, "answers": [span("Sydney", "c", -4.2, 1)]}
    assert "(a guess: no passage clearly answers it)" in render(lower)
