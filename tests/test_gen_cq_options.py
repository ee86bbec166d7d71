"""`cq gen-cq` options: distinct always (repeats dropped, the text re-written, the parser agrees),
grounded in what the model read (marked; dropped with --options grounded), from-dqs untouched."""
import json

import pytest

from cqtools.cli import cli
from cqtools.metrics.cq import parse_cq, score_record
from cqtools.stages.gen_cq.form import canonical_cq, distinct, drop_options, repair
from cqtools.stages.gen_cq import free_form, ground, grounded, shown_words

from .conftest import jsonl, parse_jsonl
from .fakes import FakeGenerator
from .test_gen_cq import fake_model, gen

FASCIST = "Which party: the Italian Fascist Party, the National Fascist Party, or the Italian Fascist Party?"


def round_trips(cq):
    """Text, category and options agree with what the scorer's parser reads back; no repeats."""
    assert parse_cq(cq["text"]) == (cq["category"], cq["options"])
    assert distinct(cq["options"]) == (cq["options"], [])


# --- distinct, always ----------------------------------------------------------------------------

def test_the_repeated_fascist_party_is_dropped_and_the_text_rewritten():
    cq = repair(FASCIST, "llm")
    assert cq == {"text": "Which party: the Italian Fascist Party or the National Fascist Party?",
                  "category": "Which party", "options": ["the Italian Fascist Party", "the National Fascist Party"],
                  "method": "llm", "valid": True, "raw": FASCIST,
                  "dropped": {"repeated": ["the Italian Fascist Party"]}}
    round_trips(cq)
    # what the released scorer reads: two options, neither repeated
    assert score_record("Which party: the Italian Fascist Party or the National Fascist Party?",
                        cq["text"])["options_f1"] == 1.0


@pytest.mark.parametrize("raw,text,options,repeated,valid", [
    ("Which band: The Beatles, beatles, or the Rolling Stones?", "Which band: The Beatles or the Rolling Stones?",
     ["The Beatles", "the Rolling Stones"], ["beatles"], True),
    ("Which band: The Beatles, Beatles., or  the beatles ?", "Which band: The Beatles?", ["The Beatles"],
     ["Beatles.", "the beatles"], False),  # one option left: not a CQ
    ("Which year: 2002 / 2002; 2012?", "Which year: 2002 or 2012?", ["2002", "2012"], ["2002"], True),
    ("Do you mean the film, The Film or the novel?", "Which one: the film or the novel?", ["the film", "the novel"],
     ["The Film"], False),  # options recovered from free text stay not valid
])
def test_case_article_and_punctuation_variants_are_one_option(raw, text, options, repeated, valid):
    cq = repair(raw, "llm")
    assert (cq["text"], cq["options"], cq["dropped"], cq["valid"]) == (text, options, {"repeated": repeated}, valid)
    round_trips(cq)


def test_a_cq_without_repeats_has_no_dropped_and_one_option_is_not_valid():
    cq = repair("Which film: A, B, or C?", "llm")
    assert "dropped" not in cq and cq["valid"] is True
    assert repair("Which film: Joker?", "llm")["valid"] is False


def test_options_the_parser_splits_out_of_the_text_are_checked_too():
    """"Joker or Batman" next to "joker": the text written reads back as three options, one a repeat."""
    cq = canonical_cq("Which film", ["Joker or Batman", "joker"], "x")
    assert cq["text"] == "Which film: Joker or Batman?" and cq["options"] == ["Joker", "Batman"]
    assert cq["dropped"] == {"repeated": ["joker"]}
    round_trips(cq)


def test_zero_shot_cq_with_a_repeat_is_rewritten_in_the_canonical_form():
    kept = free_form("film: Joker, Batman, or Joker?", "llm-zero-shot")
    assert kept["text"] == "Which film: Joker or Batman?" and kept["dropped"] == {"repeated": ["Joker"]}
    round_trips(kept)
    free = free_form("Do you mean the film, the novel, or The Film?", "llm-zero-shot")
    assert free["text"] == "Which one: the film or the novel?" and free["valid"] is False and free["repaired"]
    assert free["dropped"] == {"repeated": ["The Film"]}
    round_trips(free)
    as_written = free_form("Do you mean the film or the novel?", "llm-zero-shot")
    assert as_written["text"] == "Do you mean the film or the novel?" and "dropped" not in as_written


def test_dropping_every_option_leaves_the_invalid_form():
    cq = drop_options(repair("Which film: A or B?", "llm"), [True, True], "ungrounded")
    assert cq["text"] == "Which film?" and parse_cq(cq["text"]) == (cq["category"], cq["options"])
    assert cq["options"] == ["invalid form"] and cq["valid"] is False
    assert cq["dropped"] == {"ungrounded": ["A", "B"]}


# --- grounded in what the model read -------------------------------------------------------------

PASSAGES = [
    {"id": "p1", "title": "National Fascist Party",
     "text": "The National Fascist Party was an Italian political party created by Benito Mussolini's followers."},
    {"id": "p2", "title": "J. R. R. Tolkien", "text": "Tolkien's novel was filmed. " + "filler " * 80 + "Beyond"},
    {"id": "p3", "title": "Other", "text": "Nothing here."},
    {"id": "p4", "title": "Unread", "text": "The Communist Party of Italy."},  # fourth: not shown with 3 passages
]
QUESTION = "Which party did Mussolini lead?"


def test_grounded_rule_on_a_hand_written_record():
    from cqtools.records import passage_snippets

    words = shown_words([QUESTION, *passage_snippets({"id": "r", "passages": PASSAGES}, 3, 60)])
    flags = {o: grounded(o, words) for o in [
        "the National Fascist Party",     # every word in passage 1
        "The national fascist party.",    # the same, normalised
        "Mussolini",                      # "Mussolini's" in the passage, "Mussolini" in the question
        "Tolkien",                        # "Tolkien's": split at the apostrophe
        "the Italian Communist Party",    # "communist" only in passage 4, which the model did not read
        "Beyond",                         # after the 60 words the model read of passage 2
        "the",                            # no word left after normalisation
        "invalid form",
    ]}
    assert flags == {"the National Fascist Party": True, "The national fascist party.": True, "Mussolini": True,
                     "Tolkien": True, "the Italian Communist Party": False, "Beyond": False, "the": False,
                     "invalid form": False}


def test_ground_marks_each_option_and_drops_the_ungrounded_on_request():
    shown = [QUESTION, "National Fascist Party: The National Fascist Party was an Italian political party."]
    raw = "Which party: the National Fascist Party, the Italian Communist Party, or the Fascist Party?"
    marked = ground(repair(raw, "llm"), shown, "all")
    assert marked["grounded"] == [True, False, True] and len(marked["options"]) == 3
    kept = ground(repair(raw, "llm"), shown, "grounded")
    assert kept["text"] == "Which party: the National Fascist Party or the Fascist Party?"
    assert kept["grounded"] == [True, True] and kept["dropped"] == {"ungrounded": ["the Italian Communist Party"]}
    round_trips(kept)
    invalid = ground(repair("I don't know", "llm"), shown, "grounded")
    assert invalid["options"] == ["invalid form"] and invalid["grounded"] == [False] and "dropped" not in invalid


REPLIES = {"did Mussolini lead": " party: the National Fascist Party, the Italian Communist Party, or the national "
                                 "fascist party"}


def records():
    return [{"id": "m1", "question": QUESTION, "passages": PASSAGES},
            {"id": "m2", "question": "Who wrote the novel?", "passages": PASSAGES}]


@pytest.mark.parametrize("method", ["llm", "seq2seq"])
def test_options_grounded_through_the_cli(runner, monkeypatch, method):
    fake_model(monkeypatch, FakeGenerator(REPLIES, on=lambda p: p, default=" one: Tolkien or Lewis?"))
    args = ["--method", method, "--model", "m"]
    out = parse_jsonl(gen(runner, jsonl(records()), *args).stdout)
    assert [r["cq"]["options"] for r in out] == [["the National Fascist Party", "the Italian Communist Party"],
                                                 ["Tolkien", "Lewis"]]
    assert [r["cq"]["grounded"] for r in out] == [[True, False], [True, False]]
    assert out[0]["cq"]["dropped"] == {"repeated": ["the national fascist party"]}
    assert out[0]["meta"]["gen_cq"]["options"] == "all"

    result = gen(runner, jsonl(records()), *args, "--options", "grounded")
    assert result.exit_code == 0, result.stderr
    out = parse_jsonl(result.stdout)
    first, second = out[0]["cq"], out[1]["cq"]
    assert first["text"] == "Which party: the National Fascist Party?" and first["valid"] is False
    assert first["dropped"] == {"repeated": ["the national fascist party"],
                                "ungrounded": ["the Italian Communist Party"]}
    assert second["text"] == "Which one: Tolkien?" and second["dropped"] == {"ungrounded": ["Lewis"]}
    for r in out:
        round_trips(r["cq"])
        assert all(r["cq"]["grounded"]) and r["meta"]["gen_cq"]["options"] == "grounded"


def test_resume_with_other_options_is_refused(runner, monkeypatch, tmp_path):
    fake_model(monkeypatch, FakeGenerator(REPLIES, on=lambda p: p, default=" one: Tolkien or Lewis?"))
    out = str(tmp_path / "cqs.jsonl")
    first = gen(runner, jsonl(records()), "--method", "llm", "--model", "m", "--resume", out)
    assert first.exit_code == 0, first.stderr
    record = json.loads((tmp_path / "cqs.jsonl.cq.json").read_text())
    assert record["params"]["options"] == "all"
    again = gen(runner, jsonl(records()), "--method", "llm", "--model", "m", "--resume", out, "--options", "grounded")
    assert again.exit_code == 1 and "--options: 'all' != 'grounded'" in again.stderr


# --- from-dqs is untouched -----------------------------------------------------------------------

def test_from_dqs_has_no_grounding_and_refuses_options_grounded(runner, questions_text):
    result = gen(runner, questions_text, "--method", "from-dqs", "--all")
    assert result.exit_code == 0, result.stderr
    cqs = [r["cq"] for r in parse_jsonl(result.stdout) if r["cq"]]
    assert len(cqs) == 18
    assert all(set(cq) == {"text", "category", "options", "method", "valid"} and cq["valid"] for cq in cqs)
    refused = gen(runner, questions_text, "--method", "from-dqs", "--options", "grounded")
    assert refused.exit_code == 2 and "--options" in refused.stderr and refused.stdout == ""


# --- a one-option CQ downstream: answer --mode cq, oracle, score --task cq -----------------------

def test_a_one_option_cq_still_flows_downstream(runner):
    from cqtools.stages.answer import AnswerConfig, AnswerStage, GenerativeReader, answer_batch

    cq = repair("Which band: The Beatles, the beatles?", "llm")
    assert cq["options"] == ["The Beatles"] and cq["valid"] is False
    record = {"id": "b", "question": "Who sang Help?", "passages": PASSAGES[:1], "cq": cq,
              "gold": {"dqs": [{"question": "Who sang Help in 1965?", "answers": ["The Beatles"]}],
                       "cq": "Which year: 1965 or 2007?"}}
    cfg = AnswerConfig(mode="cq", grounding="none")
    answered = answer_batch([dict(record)], AnswerStage(cfg, GenerativeReader(FakeGenerator("Lennon"), cfg)), {})[0]
    assert [(a["option"], a["text"]) for a in answered["answers"]] == [("The Beatles", "Lennon")]
    oracle = runner.invoke(cli, ["oracle", "-q"], input=jsonl([record]))
    assert oracle.exit_code == 0, oracle.stderr
    assert parse_jsonl(oracle.stdout)[0]["selected_option"] == "The Beatles"
    scored = runner.invoke(cli, ["score", "--task", "cq", "--no-bertscore"], input=jsonl([record]))
    assert scored.exit_code == 0, scored.stderr
    assert json.loads(scored.stdout)["n"] == 1


def test_silver_cq_is_the_cq_from_dqs_writes():
    """`cq convert --silver-cq` references and `gen-cq --method from-dqs` agree even when the parser
    would read an option twice ("song, released in 1964" ... "song, released in 2016"), so from-dqs
    stays the exact upper bound."""
    from cqtools.stages.gen_cq import from_dqs_method
    from cqtools.stages.gen_cq.silver import add_silver_cq

    question = "Who sang Hello?"
    dqs = ["Who sang Hello as a song, released in 1964?", "Who sang Hello on the album?",
           "Who sang Hello as a song, released in 2016?"]
    gold = {"ambiguous": True, "dqs": [{"question": d} for d in dqs]}
    add_silver_cq(gold, question)
    made = from_dqs_method().run([{"id": "s1", "question": question, "gold": gold}])[0]
    assert gold["cq"] == made["text"] == "Which one: song, released in 1964, album, or released in 2016?"
