"""The extractive reader's answer-type prior (``--type-prior``, cqtools/stages/answer/anstype.py): the kind
of answer a question's form asks for, which spans are of it, and the span choice it changes."""
import pytest

from cqtools.cli import cli
from cqtools.stages.answer.extractive import ExtractiveOptions, ExtractiveReader


@pytest.mark.parametrize("question, kind", [
    ("Who designed the lighthouse on the north pier?", "name"),
    ("whose portrait hangs in the town hall", "name"),
    ("When did the ferry line to the island open?", "date"),
    ("In what year was the north pier rebuilt?", "date"),
    ("How many lamps does the lighthouse have?", "number"),
    ("Where was the ferry line's first boat built?", "place"),
    ("What colour is the lighthouse?", None),
    ("the pier that who rebuilt", "name"),
])
def test_the_question_form_gives_the_kind_of_answer(question, kind):
    from cqtools.stages.answer.anstype import expected_type

    assert expected_type(question) == kind


@pytest.mark.parametrize("kind, text, fit", [
    ("name", "Marta Oyelaran", True), ("name", "the engineer", False), ("name", "1887", False),
    ("place", "Port Sellick", True), ("place", "in 1887", False),
    ("date", "14 March 1887", True), ("date", "early spring", True), ("date", "Marta Oyelaran", False),
    ("number", "twelve", True), ("number", "12 lamps", True), ("number", "the keeper", False),
    (None, "anything at all", True),
])
def test_a_span_fits_a_kind_by_its_surface(kind, text, fit):
    from cqtools.stages.answer.anstype import fits

    assert fits(kind, text) is fit


def _reader(spans: list[dict], **options) -> ExtractiveReader:
    """An extractive reader whose span model is replaced by ``spans`` (best first, as spans() gives them)."""
    reader = object.__new__(ExtractiveReader)
    reader.options = ExtractiveOptions(**options)
    reader.spans = lambda question, passages: [dict(s) for s in spans]
    return reader


def _span(text, score, rank, start=0):
    return {"text": text, "score": score, "passage_id": f"p{rank}", "passage_rank": rank, "start": start,
            "end": start + len(text), "grounding": "span"}


# The first passage's best span is a role ("the engineer"), its second a name: the question asks "who".
SPANS = [_span("the engineer", 3.0, 0), _span("Marta Oyelaran", 2.0, 0, 20), _span("1887", 1.5, 1),
         _span("Tomas Rell", -0.5, 1, 9)]
WHO = "Who designed the lighthouse on the north pier?"


def test_the_prior_picks_a_passages_best_span_of_the_wanted_kind():
    assert _reader(SPANS).read([WHO], [[{}]])[0][0]["text"] == "the engineer"  # off: as before
    best = _reader(SPANS, type_prior=2.0).read([WHO], [[{}]])[0][0]
    assert best["text"] == "Marta Oyelaran" and best["score"] == 2.0  # the reader's score is kept
    # a weight under the gap leaves the choice alone; a question of no known kind is never changed
    assert _reader(SPANS, type_prior=0.5).read([WHO], [[{}]])[0][0]["text"] == "the engineer"
    assert _reader(SPANS, type_prior=2.0).read(["What is on the pier?"], [[{}]])[0][0]["text"] == "the engineer"


def test_multi_drops_spans_of_the_wrong_kind_under_the_threshold_with_the_prior():
    texts = lambda **o: [a["text"] for a in _reader(SPANS, **o).read([WHO], [[{}]], multi=True)[0]]
    assert texts() == ["the engineer", "1887", "Marta Oyelaran"]
    # under the prior: Marta 2, Rell -0.5, "the engineer" 3 - 4 = -1, "1887" 1.5 - 4: none but the best is over 0
    assert texts(type_prior=4.0) == ["Marta Oyelaran"]
    assert texts(type_prior=4.0, multi_threshold=-1.0) == ["Marta Oyelaran", "Tomas Rell", "the engineer"]


def test_type_prior_is_a_flag_of_the_extractive_reader_and_is_checked(runner):
    from cqtools.registry import READERS

    assert READERS.get("extractive").option("type_prior").default == ExtractiveOptions().type_prior == 0.0
    result = runner.invoke(cli, ["answer", "--reader", "extractive", "--type-prior", "-1", "-q"], input="")
    assert result.exit_code != 0 and "Traceback" not in result.output
