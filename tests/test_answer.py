"""cq answer: answer cleaning, the three modes, round trip, verification, errors, the pipeline."""
import pytest

from cqtools.cli import cli
from cqtools.metrics.cq import parse_cq
from cqtools.metrics.normalize import normalize_answer
from cqtools.stages.answer import (AnswerConfig, AnswerStage, GenerativeReader, answer_batch, candidate_spans,
                                   clean_answer, ground, record_cq, revised_question, shown_passages, snap_spans,
                                   split_answers)

from .conftest import jsonl, parse_jsonl
from .conftest_models import bm25_index, retrieved  # noqa: F401
from .fakes import FakeCrossEncoder, FakeGenerator


@pytest.mark.parametrize("raw, clean", [
    ("The answer is Paris.", "Paris"), ("Answer: \"Heath Ledger\"", "Heath Ledger"), ("Canberra.\nMore text", "Canberra"),
    ("The capital of France is Paris.", "Paris"), ("1989", "1989"), ("  'Tolkien'  ", "Tolkien"),
    ("\n [2] Fifty Shades Darker", "Fifty Shades Darker"), ("1. Heath Ledger\n2. Jack", "Heath Ledger")])
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


def good_or_x(prompt, continuation):
    """log p of a verified answer: high for "good ..." and "x", low for anything else."""
    return -1.0 if "good" in continuation.lower() or continuation.strip().lower() == "x" else -20.0


def _stage(generator, config, cross_encoder=None):
    return AnswerStage(config, GenerativeReader(generator, config), cross_encoder)


def _record(**extra):
    passages = [{"id": f"p{i}", "title": f"T{i}", "text": f"text {i} Alpha Beta", "score": 1.0, "rank": i + 1}
                for i in range(4)]
    return {"id": "r1", "question": "Who?", "passages": passages, **extra}


def test_cq_mode_one_answer_per_option():
    gen = FakeGenerator({"A1": "Answer one.", "B2": "The answer is two"})
    cfg = AnswerConfig(mode="cq", grounding="none")
    record = _record(cq={"text": "Which thing: A1 or B2?", "category": "Which thing", "options": ["A1", "B2"]})
    out = answer_batch([record], _stage(gen, cfg, FakeCrossEncoder()), {"mode": "cq"})[0]
    assert out["answers"] == [
        {"text": "Answer one", "grounding": "none", "option": "A1", "question": "Who?, Which thing: A1"},
        {"text": "two", "grounding": "none", "option": "B2", "question": "Who?, Which thing: B2"}]
    assert out["meta"]["answer"] == {"mode": "cq"}


def test_cq_mode_selected_option_only():
    gen = FakeGenerator({"B2": "two"})
    record = _record(cq={"category": "thing", "options": ["A1", "B2"]}, selected_option="B2")
    out = answer_batch([record], _stage(gen, AnswerConfig(mode="cq", selected=True, grounding="none"), None), {})[0]
    assert [(a["option"], a["text"]) for a in out["answers"]] == [("B2", "two")]


def test_multi_mode_round_trip_and_verify():
    gen = FakeGenerator({"[T": "good c ; x", "Who?": "X ; good b ; x"}, good_or_x)
    cfg = AnswerConfig(mode="multi", round_trip=True, max_rounds=3, verify=True, verify_threshold=-5,
                       grounding="none")
    record = _record()
    record["passages"][1]["text"] = "here good b is"
    out = answer_batch([record], _stage(gen, cfg), {})[0]
    texts = [a["text"] for a in out["answers"]]
    assert texts == ["X", "good b", "good c"]  # "x" deduplicated; round trip found "good c"
    assert out["answers"][2]["question"] == "Who? [T1]"
    assert all(a["verify_score"] == -1.0 for a in out["answers"])
    cfg.verify_threshold = 0.0
    assert answer_batch([_record()], _stage(gen, cfg), {})[0]["answers"] == []


# --- grounding ----------------------------------------------------------------------------------

SHOWN = [("The Dark Knight", "Heath Ledger played the Joker in The Dark Knight, released on July 18, 2008. "
                             "Christopher Nolan directed it for Warner Bros."),
         ("Joker (2019 film)", "Joaquin Phoenix won the Academy Award for Best Actor in 2020.")]


def test_ground_keeps_an_answer_that_is_a_span():
    assert ground("Heath Ledger", "who played the joker", SHOWN) == {"text": "Heath Ledger", "grounding": "exact"}
    gen = FakeGenerator("", {"Joaquin Phoenix": -1.0})
    assert ground("heath ledger", "who played the joker", SHOWN, gen, "P") == {"text": "heath ledger",
                                                                              "grounding": "exact"}
    assert gen.score_calls == []  # a usable answer costs no model call


@pytest.mark.parametrize("generated, span", [
    ("the actor Heath Ledger", "Heath Ledger"),
    ("18 July 2008", "July 18, 2008"),
    ("Christopher Nolan (director)", "Christopher Nolan"),
    ("Ledger, Heath", "Heath Ledger")])
def test_ground_snaps_a_paraphrase_to_the_passage_span(generated, span):
    out = ground(generated, "who played the joker", SHOWN, FakeGenerator(""), "P")
    assert out == {"text": span, "grounding": "span", "generated": generated}


@pytest.mark.parametrize("generated", ["Christopher Nolan Jr", "1500 ft", "Heath"])
def test_ground_never_snaps_away_a_name_or_number(generated):
    gen = FakeGenerator("", {"Christopher Nolan": -1.0, "Heath Ledger": -1.0, "2008": -1.0})
    out = ground(generated, "who made it", SHOWN, gen, "P")
    assert out["grounding"] in ("score", "exact") and out["text"] != "Nolan"


def test_ground_reads_possessives_as_the_name():
    shown = [("Do You Love Me", "built around lead singer Billy Gordon's screaming vocals")]
    assert ground("Billy Gordon", "who sang do you love me", shown) == {"text": "Billy Gordon", "grounding": "exact"}
    assert snap_spans("Billy Gordon (The Contours)", shown)[0][1].text == "Billy Gordon"  # span without 's


def test_snap_spans_rank_by_f1_and_skip_question_words():
    ranked = snap_spans("Heath Ledger in The Dark Knight", SHOWN, "who played the joker in the dark knight")
    assert ranked[0][1].text == "Heath Ledger" and ranked[0][0] == 1.0  # F1 on the words not in the question
    assert all(s.norm != ("dark", "knight") for _, s in ranked)  # only question words


@pytest.mark.parametrize("generated", ["", "who played the joker in the dark knight", "Jack Nicholson"])
def test_ground_scores_candidate_spans_when_the_generation_is_unusable(generated):
    gen = FakeGenerator("", {"Heath Ledger": -2.0, "Joaquin Phoenix": -3.0})
    out = ground(generated, "who played the joker in the dark knight", SHOWN, gen, "PROMPT")
    assert out["text"] == "Heath Ledger" and out["grounding"] == "score"
    assert out.get("generated", "") == generated
    [(prompts, continuations, prefix)] = gen.score_calls  # one batched call, prompt as the cached prefix
    assert prefix == "PROMPT" and prompts == [""] * len(continuations) and 1 < len(continuations) <= 30
    assert all(c.startswith(" ") and c.endswith("\n") for c in continuations)
    assert "Dark Knight" not in [c.strip() for c in continuations]  # only question words
    question = "who played the joker in the dark knight"
    assert ground(generated, question, SHOWN) == {"text": generated, "grounding": "none"}  # no scorer


def test_candidate_spans_follow_the_question_type_and_are_bounded():
    when = [s.text for s in candidate_spans(SHOWN, "when was the dark knight released")]
    assert when == ["July 18, 2008", "2008", "2019", "2020"]
    who = [s.text for s in candidate_spans(SHOWN, "who directed the dark knight")]
    assert who[:4] == ["Heath Ledger", "Joker", "Christopher Nolan", "Warner Bros"] and "2008" not in who
    many = [(f"T{i}", " ".join(f"Name{i}x{j} and" for j in range(40))) for i in range(3)]
    assert len(candidate_spans(many, "who", limit=30)) == 30


def test_grounding_is_deterministic_and_ties_go_to_the_earliest_span():
    gen = FakeGenerator("", {})  # every candidate scores -50
    runs = [ground("", "who directed the dark knight", SHOWN, gen, "P") for _ in range(3)]
    assert runs[0] == runs[1] == runs[2] == {"text": "Heath Ledger", "grounding": "score", "generated": ""}
    first, again = snap_spans("Ledger", SHOWN * 2)[0][1], snap_spans("Ledger", SHOWN * 2)[0][1]
    assert first == again and first.order == (1, 6, 1)  # passage 1's text (piece 1), not its copy (piece 5)


def test_answer_batch_records_the_grounding_and_passes_only_shown_text():
    passages = [{"id": "p1", "title": "The Dark Knight", "text": SHOWN[0][1]},
                {"id": "p2", "title": "Other", "text": "Gary Oldman played Gordon."}]
    record = {"id": "r", "question": "who played the joker", "passages": passages}
    gen = FakeGenerator("The Joker was played by the actor Heath Ledger.", {"Gary Oldman": 0.0})
    cfg = AnswerConfig(n_passages=1, passage_chars=60)
    out = answer_batch([dict(record)], _stage(gen, cfg), {"grounding": cfg.grounding})[0]
    assert out["answers"] == [{"text": "Heath Ledger", "grounding": "span",
                               "generated": "The Joker was played by the actor Heath Ledger"}]
    assert gen.chats == [False]  # few-shot completion prompt, no chat template
    gen.replies = "nobody"
    out = answer_batch([dict(record)], _stage(gen, cfg), {})[0]
    assert out["answers"][0]["grounding"] == "score" and out["answers"][0]["text"] != "Gary Oldman"  # not shown
    assert shown_passages(passages, 1, 60) == [("The Dark Knight",
                                                "Heath Ledger played the Joker in The Dark Knight, released")]
    out = answer_batch([dict(record)], _stage(gen, AnswerConfig(grounding="none")), {})[0]
    assert out["answers"] == [{"text": "nobody", "grounding": "none"}]


@pytest.mark.heavy(reason="cq answer --mode cq loads the INT8 reranker before it reads the record")
def test_record_without_cq_is_a_clear_error(runner):
    result = runner.invoke(cli, ["answer", "--mode", "cq"], input=jsonl([_record()]))
    assert result.exit_code == 1
    assert "has no 'cq'; run `cq gen-cq` first" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.heavy(reason="cq answer loads the shipped reader before it reads the record")
def test_record_without_passages_is_a_clear_error(runner):
    result = runner.invoke(cli, ["answer"], input=jsonl([{"id": "x", "question": "Who?"}]))
    assert result.exit_code == 1
    # one error line; the only other line a run may print is where its model came from (once per process)
    errors = [line for line in result.stderr.splitlines() if not line.startswith("cq: model ")]
    assert len(errors) == 1 and "line 1: record x has no 'passages'; run `cq retrieve` first" in errors[0]


def test_selected_needs_cq_mode(runner):
    result = runner.invoke(cli, ["answer", "--selected"], input="")
    assert result.exit_code == 2 and "--selected does not apply to --mode single" in result.stderr


def test_grounding_option_is_checked(runner):
    result = runner.invoke(cli, ["answer", "--grounding", "fuzzy"], input="")
    assert result.exit_code == 2 and "'fuzzy' is not one of 'span', 'none'" in result.stderr


@pytest.mark.slow
def test_pipeline_retrieve_rerank_answer_single(runner, bm25_index, questions_text):
    lines = "".join(questions_text.splitlines(True)[4:7])  # fx05 fx06 fx07
    retrieved_ = runner.invoke(cli, ["retrieve", "--index", bm25_index, "--hits", "10", "-q"], input=lines)
    reranked = runner.invoke(cli, ["rerank", "--top", "3", "-q"], input=retrieved_.stdout)
    answered = runner.invoke(cli, ["answer", "--mode", "single", "--reader", "generative", "-q"], input=reranked.stdout)
    assert answered.exit_code == 0, answered.stderr
    out = parse_jsonl(answered.stdout)
    assert [r["id"] for r in out] == ["fx05", "fx06", "fx07"]
    for record in out:
        assert len(record["answers"]) == 1 and 1 <= len(record["answers"][0]["text"].split()) <= 8
        assert record["meta"]["answer"]["mode"] == "single" and "model" in record["meta"]["answer"]
        assert record["meta"]["answer"]["grounding"] == "span" and record["answers"][0]["grounding"] in (
            "exact", "span", "score")
        assert "rerank" in record["meta"] and "retrieve" in record["meta"]
    for record in out:  # span grounding: every answer is a span of the passages shown (titles included)
        shown = " ".join(f"{p['title']} {p['text'][:600]}" for p in record["passages"][:3])
        assert normalize_answer(record["answers"][0]["text"]) in normalize_answer(shown)
    # SmolLM2-135M, greedy, few-shot prompt: fx05 (capital of Australia) gets "Sydney", a passage
    # city; the reader's accuracy is measured in docs/benchmarks/models.md, not pinned here


@pytest.mark.slow
def test_cq_mode_on_fixtures_with_gold_cq(runner, retrieved):
    records = []
    for record in retrieved:
        if record["id"] in ("fx01", "fx16"):
            category, options = parse_cq(record["gold"]["cq"])
            records.append({**record, "cq": {"text": record["gold"]["cq"], "category": category, "options": options}})
    result = runner.invoke(cli, ["answer", "--mode", "cq", "--reader", "generative", "-q", "--passages", "2",
                                 "--max-new-tokens", "8"], input=jsonl(records))
    assert result.exit_code == 0, result.stderr
    out = parse_jsonl(result.stdout)
    assert [r["id"] for r in out] == ["fx01", "fx16"]
    for record in out:
        options = record["cq"]["options"]
        assert [a["option"] for a in record["answers"]] == options
        assert all(a["question"].endswith(a["option"]) for a in record["answers"])
    assert out[0]["meta"]["answer"]["reranker"] == "cross-encoder/ms-marco-MiniLM-L-12-v2"


# --- the reader registry and build() ---------------------------------------------------------------

def test_build_uses_the_registered_generative_reader_and_passes_batch_size_per_call(monkeypatch):
    from cqtools.models import load as loader
    from cqtools.protocols import AnswerVerifier
    from cqtools.protocols import Reader as ReaderProtocol
    from cqtools.registry import READERS
    from cqtools.stages import answer

    gen = FakeGenerator({"Who?": "Alpha"}, batch_size=16)
    monkeypatch.setattr(loader, "load_generator", lambda name, device="auto", dtype="auto", kind="auto", config=None: gen)
    assert "generative" in READERS.names()
    reader = READERS.build("generative", model="m", n_passages=2, batch_size=4)
    assert isinstance(reader, ReaderProtocol) and isinstance(reader, AnswerVerifier)
    run = answer.build(mode="single", reader="generative", model="m", grounding="none", batch_size=4, seed=0)
    out = run([_record()])[0]
    assert out["answers"] == [{"text": "Alpha", "grounding": "none"}]
    assert out["meta"]["answer"] == {"reader": "generative", **gen.info, "mode": "single", "passages": 3, "passage_chars": 600,
                                     "max_new_tokens": 16, "grounding": "none", "seed": 0}
    assert gen.sizes() == [4] and gen.batch_size == 16  # per call; the shared model is left as it was


def test_unknown_reader_is_a_usage_error(runner):
    result = runner.invoke(cli, ["answer", "--reader", "nope"], input="")
    assert result.exit_code == 2 and "Invalid value for '--reader': 'nope'" in result.stderr
