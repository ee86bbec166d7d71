"""`cq gen-cq`: canonical CQ form, from-dqs against the hand-written CQs, every method end to end."""
import pytest

from cqtools.cli import cli
from cqtools.metrics.cq import micro_prf, parse_cq, score_record
from cqtools.stages.gen_cq import extract_options, format_cq, repair

from .conftest import jsonl, parse_jsonl
from .fakes import FakeGenerator

SMOLLM = "HuggingFaceTB/SmolLM2-135M-Instruct"


def gen(runner, text, *args):
    return runner.invoke(cli, ["gen-cq", *args], input=text)


def assert_cq(cq, method):
    assert set(cq) >= {"text", "category", "options", "method", "valid"}
    assert cq["method"] == method and isinstance(cq["options"], list) and cq["options"]
    if cq["valid"] and not method.endswith("zero-shot"):
        assert parse_cq(cq["text"]) == (cq["category"], cq["options"])


def test_format_cq():
    assert format_cq("Which film", ["A", "B"]) == "Which film: A or B?"
    assert format_cq("Which film", ["A", "B", "C"]) == "Which film: A, B, or C?"
    assert parse_cq(format_cq("On which continent", ["Asia", "Africa", "Europe"])) == (
        "On which continent", ["Asia", "Africa", "Europe"])


@pytest.mark.parametrize("raw,text,valid", [
    ("Which film: A, B or C?\nmore", "Which film: A, B, or C?", True),
    ("Which year: 2002 / 2012; 2017?", "Which year: 2002, 2012, or 2017?", True),
    ("film: X or Y", "Which film: X or Y?", True),
    ("Do you mean the country or the US state?", "Which one: the country or the US state?", False),
    ("I don't know.", "I don't know.", False),
])
def test_repair(raw, text, valid):
    cq = repair(raw, "llm")
    assert cq["text"] == text and cq["valid"] is valid and cq["raw"] == raw
    if text.startswith("Which"):
        assert parse_cq(cq["text"]) == (cq["category"], cq["options"])
    else:
        assert cq["category"] == cq["options"][0] == "invalid form"


def test_extract_options():
    assert extract_options("Are you asking about the film, the novel, or the song?") == [
        "the film", "the novel", "the song"]
    assert extract_options("What do you mean?") == []


def test_from_dqs_reproduces_hand_written_cqs(runner, questions_text):
    """Options F1 (AskCQ partial match, micro) of the silver CQs against the 18 hand-written
    fixture CQs. Measured 0.957 (P 0.972, R 0.943): the misses are kept parentheticals
    ("The Dark Knight (2008)") and dropped articles ("the country"). The floor 0.90 allows a
    small change in the diff heuristics, but not losing the options of two or three questions."""
    result = gen(runner, questions_text, "--method", "from-dqs")
    assert result.exit_code == 0, result.stderr
    out = parse_jsonl(result.stdout)
    sums = [0.0, 0.0, 0, 0]
    n = 0
    for r in out:
        if not r["gold"].get("cq"):
            assert r["cq"] is None  # no gold DQs: nothing to ask
            continue
        assert_cq(r["cq"], "from-dqs")
        s = score_record(r["gold"]["cq"], r["cq"]["text"])
        for i, key in enumerate(("p_sum", "r_sum", "n_pred", "n_gold")):
            sums[i] += s[key]
        n += 1
    assert n == 18
    precision, recall, f1 = micro_prf(*sums)
    assert f1 >= 0.90, (precision, recall, f1)
    by_id = {r["id"]: r["cq"] for r in out}
    assert by_id["fx04"]["text"] == "Which year: 2000, 2004, or 2008?"
    assert by_id["fx11"]["text"] == "Which season: 1, 2, 3, or 4?"
    assert by_id["fx21"]["options"] == ["Republic of the Congo", "Democratic Republic of the Congo"]


def test_unambiguous_records_pass_through_unless_all(runner, questions):
    records = [dict(q, ambiguity={"label": q["id"] != "fx01", "score": 0.0, "method": "x"}) for q in questions[:3]]
    out = parse_jsonl(gen(runner, jsonl(records), "--method", "from-dqs").stdout)
    assert out[0]["cq"] is None and out[2]["cq"]["method"] == "from-dqs"
    out = parse_jsonl(gen(runner, jsonl(records), "--method", "from-dqs", "--all").stdout)
    assert out[0]["cq"]["text"].startswith("Which")


@pytest.mark.parametrize("record,args,needle", [
    ({"id": "g1", "question": "q"}, ["--method", "from-dqs"], "has no gold.dqs"),
    ({"id": "g2", "question": "q", "ambiguity": True}, ["--method", "from-dqs"], "'ambiguity' must be"),
])
def test_bad_records_are_one_line_errors(runner, record, args, needle):
    result = gen(runner, jsonl([record]), *args)
    assert result.exit_code == 1 and result.stdout == ""
    assert needle in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_option_misuse_is_a_usage_error(runner, questions_text):
    result = gen(runner, questions_text, "--method", "from-dqs", "--with-answers", "gold")
    assert result.exit_code == 2 and "--with-answers" in result.stderr


def fake_model(monkeypatch, fake):
    from cqtools.models import load as loader

    monkeypatch.setattr(loader, "load_generator", lambda name, device="auto", dtype="auto", kind="auto", config=None: fake)
    return fake


SEQ2SEQ_INPUTS = [
    "Who played the Joker? [SEP] Heath Ledger | Joaquin Phoenix | Jared Leto [SEP] T: some text",
    "Who wrote The Lord of the Rings? [SEP] J. R. R. Tolkien [SEP] T: some text",
    "Who won the World Cup in 2019? [SEP] England | South Africa | United States [SEP] T: some text"]


@pytest.mark.parametrize("kind,suffix", [("seq2seq", ""), ("causal", "\nClarifying question:")])
def test_seq2seq_with_answers(runner, monkeypatch, questions, kind, suffix):
    """The gold answers (each cluster's first) reach the model's input exactly, between the question and
    the passages; a causal LM's input ends with the suffix it was trained on; a valid output is parsed."""
    fake = fake_model(monkeypatch, FakeGenerator({
        "Joker": "film: The Dark Knight / Joker; Suicide Squad\nmore", "Rings": "Which one: the novel or the film?"},
        on=lambda p: p, default="I am not sure.", kind=kind))
    records = [dict(q, passages=[{"id": "p", "title": "T", "text": "some text"}]) for q in questions[:3]]
    result = gen(runner, jsonl(records), "--method", "seq2seq", "--model", "m", "--with-answers", "gold",
                 "--max-new-tokens", "8")
    assert result.exit_code == 0, result.stderr
    assert fake.prompts == [text + suffix for text in SEQ2SEQ_INPUTS]
    assert fake.chats == [False] and fake.stops == [["\n"]]
    out = parse_jsonl(result.stdout)
    assert [r["cq"] for r in out] == [
        {"text": "Which film: The Dark Knight, Joker, or Suicide Squad?", "category": "Which film",
         "options": ["The Dark Knight", "Joker", "Suicide Squad"], "method": "seq2seq", "valid": True,
         "raw": "film: The Dark Knight / Joker; Suicide Squad\nmore", "grounded": [False, True, False]},
        {"text": "Which one: the novel or the film?", "category": "Which one", "options": ["the novel", "the film"],
         "method": "seq2seq", "valid": True, "raw": "Which one: the novel or the film?", "grounded": [False, False]},
        {"text": "I am not sure.", "category": "invalid form", "options": ["invalid form"], "method": "seq2seq",
         "valid": False, "raw": "I am not sure.", "grounded": [False]}]
    for r in out:
        assert_cq(r["cq"], "seq2seq")
        assert r["meta"]["gen_cq"]["with_answers"] == "gold" and r["meta"]["gen_cq"]["model"] == "fake"
        assert r["meta"]["gen_cq"]["options"] == "all"


def test_seq2seq_tiny_model_end_to_end(runner, questions, tiny_seq2seq):
    """A real (random, tiny) seq2seq model: whatever it writes, the record holds the repair of its raw text."""
    records = [dict(q, passages=[{"id": "p", "title": "T", "text": "some text"}]) for q in questions[:3]]
    result = gen(runner, jsonl(records), "--method", "seq2seq", "--model", tiny_seq2seq, "--with-answers", "gold",
                 "--max-new-tokens", "8")
    assert result.exit_code == 0, result.stderr
    out = parse_jsonl(result.stdout)
    assert [r["id"] for r in out] == [r["id"] for r in records]
    for r in out:
        assert_cq(r["cq"], "seq2seq")
        grounded = r["cq"].pop("grounded")
        assert r["cq"] == repair(r["cq"]["raw"], "seq2seq") and len(grounded) == len(r["cq"]["options"])
        assert r["meta"]["gen_cq"]["with_answers"] == "gold" and r["meta"]["gen_cq"]["kind"] == "seq2seq"


@pytest.mark.parametrize("record,args,needle", [
    ({"id": "s1", "question": "q"}, ["--with-answers", "pred"], "run cq answer --mode multi first"),
    ({"id": "s2", "question": "q", "passages": "oops"}, [], "'passages' must be a list"),
])
def test_seq2seq_bad_inputs(runner, tiny_seq2seq, record, args, needle):
    result = gen(runner, jsonl([record]), "--method", "seq2seq", "--model", tiny_seq2seq, *args)
    assert result.exit_code == 1 and result.stdout == ""
    assert needle in result.stderr and "Traceback" not in result.stderr


LLM_REPLIES = {"Joker": " film: The Dark Knight, Joker, or Suicide Squad?\nQuestion: next",
               "Rings": " Do you mean the novel or the film?", "World Cup": " I don't know"}


def test_llm_few_shot_and_zero_shot(runner, monkeypatch, questions):
    """A fake model with known replies: the prompts are the CAmbigNQ few-shot (or CLAM zero-shot) ones over
    the question and its passages; few-shot replies continue the primed "Which" and are repaired into the
    canonical form, zero-shot ones are kept as written."""
    from cqtools.records import passage_snippets
    from cqtools.stages import prompts

    records = [dict(q, passages=[{"id": f"p{i}", "title": f"T{i}", "text": f"passage {i} " * 70} for i in range(4)])
               for q in questions[:3]]
    snippets = [passage_snippets(r, 3, 60) for r in records]

    fake = fake_model(monkeypatch, FakeGenerator(LLM_REPLIES, name="fake-llm"))
    result = gen(runner, jsonl(records), "--method", "llm", "--model", "m", "--max-new-tokens", "24")
    assert result.exit_code == 0, result.stderr
    assert fake.prompts == [prompts.gencq_prefix() + prompts.gencq_prompt(r["question"], s, None, None, True)
                            for r, s in zip(records, snippets)]
    assert all(f"Question: {r['question']}\n" in p and all(x in p for x in s) and p.endswith(" Which")
               for p, r, s in zip(fake.prompts, records, snippets))
    assert fake.chats == [False] and fake.stops == [["\n"]]
    out = parse_jsonl(result.stdout)
    assert [r["cq"] for r in out] == [
        {"text": "Which film: The Dark Knight, Joker, or Suicide Squad?", "category": "Which film",
         "options": ["The Dark Knight", "Joker", "Suicide Squad"], "method": "llm", "valid": True,
         "raw": "Which film: The Dark Knight, Joker, or Suicide Squad?\nQuestion: next",
         "grounded": [False, True, False]},
        {"text": "Which one: the novel or the film?", "category": "Which one", "options": ["the novel", "the film"],
         "method": "llm", "valid": False, "raw": "Which Do you mean the novel or the film?", "repaired": True,
         "grounded": [False, False]},
        {"text": "Which I don't know", "category": "invalid form", "options": ["invalid form"], "method": "llm",
         "valid": False, "raw": "Which I don't know", "grounded": [False]}]
    assert out[0]["meta"]["gen_cq"]["model"] == "fake-llm" and out[0]["meta"]["gen_cq"]["passages"] == 3

    fake = fake_model(monkeypatch, FakeGenerator(LLM_REPLIES, name="fake-llm"))
    result = gen(runner, jsonl(records), "--method", "llm", "--zero-shot", "--model", "m", "--max-new-tokens", "24")
    assert result.exit_code == 0, result.stderr
    assert fake.prompts == [prompts.zero_shot_prompt(r["question"], s) for r, s in zip(records, snippets)]
    out = parse_jsonl(result.stdout)
    assert [r["cq"] for r in out] == [
        {"text": "film: The Dark Knight, Joker, or Suicide Squad?", "category": "film",
         "options": ["The Dark Knight", "Joker", "Suicide Squad"], "method": "llm-zero-shot", "valid": True,
         "raw": LLM_REPLIES["Joker"], "grounded": [False, True, False]},
        {"text": "Do you mean the novel or the film?", "category": "one", "options": ["the novel", "the film"],
         "method": "llm-zero-shot", "valid": False, "raw": LLM_REPLIES["Rings"], "repaired": True,
         "grounded": [False, False]},
        {"text": "I don't know", "category": "invalid form", "options": ["invalid form"],
         "method": "llm-zero-shot", "valid": False, "raw": LLM_REPLIES["World Cup"], "grounded": [False]}]
    for r in out:
        assert_cq(r["cq"], "llm-zero-shot")


@pytest.mark.slow
def test_llm_real_model_few_shot_and_zero_shot(runner, questions):
    """The real SmolLM2 (weak: checks the form, not the quality), on a few fixture records: each CQ is
    the repair of what the model wrote after the primed "Which" (zero-shot: its first question, as written)."""
    from cqtools.stages.gen_cq import free_form

    text = jsonl(questions[:3])
    result = gen(runner, text, "--method", "llm", "--model", SMOLLM, "--max-new-tokens", "24")
    assert result.exit_code == 0, result.stderr
    for r in parse_jsonl(result.stdout):
        assert_cq(r["cq"], "llm")
        grounded = r["cq"].pop("grounded")
        assert r["cq"]["raw"].startswith("Which ") and r["cq"] == repair(r["cq"]["raw"], "llm")
        assert len(grounded) == len(r["cq"]["options"])
        assert r["meta"]["gen_cq"]["model"] == SMOLLM
    result = gen(runner, text, "--method", "llm", "--zero-shot", "--model", SMOLLM, "--max-new-tokens", "24")
    assert result.exit_code == 0, result.stderr
    for r in parse_jsonl(result.stdout):
        assert_cq(r["cq"], "llm-zero-shot")
        grounded = r["cq"].pop("grounded")
        assert r["cq"] == free_form(r["cq"]["raw"], "llm-zero-shot") and "\n" not in r["cq"]["text"]
        assert len(grounded) == len(r["cq"]["options"])


# --- the record accessors (cqtools/records.py) every stage reads through ---------------------------

def test_answer_texts_reads_objects_and_strings_and_names_what_to_run():
    from cqtools.errors import InputError
    from cqtools.records import answer_texts, distinct_texts

    record = {"id": "a", "answers": [{"text": "Paris"}, "paris.", {"text": None}, {"score": 1}]}
    assert answer_texts(record) == ["Paris", "paris.", "", ""]
    assert answer_texts(record, raw=True) == ["Paris", "paris.", "None", ""]  # gen-cq's seq2seq input
    assert distinct_texts(answer_texts(record)) == ["Paris"]
    assert answer_texts({"id": "b"}) is None
    with pytest.raises(InputError, match="has no 'answers'; run cq answer first"):
        answer_texts({"id": "b"}, "run cq answer first")
    with pytest.raises(InputError, match="'answers' must be a list"):
        answer_texts({"id": "c", "answers": "Paris"})


def test_passage_text_verbatim_or_cut_to_words():
    from cqtools.errors import InputError
    from cqtools.records import passage_snippets, passage_text, snippets

    p = {"id": "p", "title": " T ", "text": "one  two three"}
    assert passage_text(p, sep="\n") == " T \none  two three"  # what the cross-encoder reads
    assert passage_text(p, words=2) == "T: one two"
    assert passage_text({"text": "x y"}, words=5) == "x y"
    assert snippets([p, p], 1, 2) == ["T: one two"]
    assert passage_snippets({"id": "r", "passages": [p]}, 3, 60) == ["T: one  two three".replace("  ", " ")]
    assert passage_snippets({"id": "r"}, 3, 60) == [] and passage_snippets({"id": "r", "passages": [p]}, 0, 60) == []
    with pytest.raises(InputError, match="'passages' must be a list"):
        snippets(["oops"], 1, 5)


def test_read_cq_from_a_dict_or_its_text():
    from cqtools.errors import InputError
    from cqtools.records import read_cq

    assert read_cq("Which year: 2000 or 2004?") == ("Which year: 2000 or 2004?", "Which year", ["2000", "2004"])
    assert read_cq({"text": "Which year: 2000 or 2004?", "category": "year"}) == (
        "Which year: 2000 or 2004?", "year", ["2000", "2004"])
    assert read_cq({"category": "film", "options": ["A", "B"]}) == ("", "film", ["A", "B"])
    with pytest.raises(InputError, match="'cq' must be"):
        read_cq(["A", "B"], "r1")
