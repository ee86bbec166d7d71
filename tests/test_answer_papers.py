"""cq answer as the papers ran it (issue 24): evidence budgets, REFUEL's round trip and LM
verification, AmbigQA's DISAMBIG-FIRST (--mode dqs), AskCQ's per-option reading; traces of what a
scripted generator was asked."""
import re

import pytest

from cqtools.cli import cli
from cqtools.stages.answer import AnswerConfig, AnswerStage, GenerativeReader, answer_batch
from cqtools.stages.answer.refuel import QDWriter, keep_best

from .conftest import jsonl, parse_jsonl
from .fakes import FakeCrossEncoder, FakeGenerator, FakeSearcher, after_question


def _passages(*lengths):
    """Passages whose reader line "[1] Tn: text\\n" is exactly ``length`` characters (4 a token)."""
    out = []
    for n, length in enumerate(lengths):
        text = "x" * (length - len(f"[1] T{n}: ") - 1)
        out.append({"id": f"p{n}", "title": f"T{n}", "text": text, "score": 1.0, "rank": n + 1})
    return out


def _stage(generator, config, **parts):
    return AnswerStage(config, GenerativeReader(generator, config), **parts)


def shown_titles(prompt: str) -> list[str]:
    return re.findall(r"^\[\d+\] (T\d+):", prompt, re.M)


# --- evidence budgets -----------------------------------------------------------------------------

def test_the_reader_reads_what_fits_the_budget_in_order_and_the_count_is_recorded():
    gen = FakeGenerator("Alpha")
    # "Who?" is 1 token; each passage line 40 characters = 10 tokens: 3 fit in 31, the fourth would not,
    # and the short fifth never jumps the queue
    record = {"id": "r", "question": "Who?", "passages": _passages(40, 40, 40, 40, 8)}
    cfg = AnswerConfig(mode="multi", max_passage_tokens=31, n_passages=None, grounding="none")
    out = answer_batch([record], _stage(gen, cfg), {})[0]
    assert shown_titles(gen.prompts[0]) == ["T0", "T1", "T2"]
    assert out["meta"]["passages_read"] == {"answer": 3}
    cfg = AnswerConfig(mode="multi", max_passage_tokens=30, n_passages=None, grounding="none")
    answer_batch([dict(record, passages=_passages(40, 40, 40, 40, 8))], _stage(gen, cfg), {})
    assert shown_titles(gen.prompts[1]) == ["T0", "T1"]
    # without a budget: the top --passages, as before, and nothing noted
    out = answer_batch([dict(record, meta={})], _stage(gen, AnswerConfig(mode="single", grounding="none")), {})[0]
    assert shown_titles(gen.prompts[2]) == ["T0", "T1", "T2"] and "passages_read" not in out["meta"]


def test_cq_mode_reranks_every_passage_and_reads_up_to_the_budget_per_option():
    gen = FakeGenerator("Alpha")
    passages = _passages(40, 40, 40, 40, 40)
    passages[4]["text"] = "zebra " + passages[4]["text"][6:]  # the last passage is the one about the option
    record = {"id": "r", "question": "Who?", "passages": passages,
              "cq": {"category": "Which animal", "options": ["zebra", "lion"]}}
    cfg = AnswerConfig(mode="cq", rerank_depth=100, max_passage_tokens=27, n_passages=None, grounding="none")
    out = answer_batch([record], _stage(gen, cfg, cross_encoder=FakeCrossEncoder()), {})[0]
    assert shown_titles(gen.prompts[0])[0] == "T4"  # reranked over all 5, not the first 20 (or 3)
    assert out["meta"]["passages_read"] == {"answer": [2, 2]}


def test_extractive_reader_fits_its_own_tokens():
    from cqtools.stages.answer.extractive import ExtractiveOptions, ExtractiveReader

    class Tok:
        is_fast = True

        def __call__(self, text, add_special_tokens=False, verbose=False):
            return type("Enc", (), {"input_ids": text.split()})()

    reader = ExtractiveReader(Tok(), None, {"model": "m"}, ExtractiveOptions(n_passages=None, max_passage_tokens=9))
    passages = [{"id": i, "title": "", "text": "a b c"} for i in range(4)]
    assert [p["id"] for p in reader.evidence("who is it", passages)] == [0, 1]  # 3 + 3 + 3 = 9 tokens


def test_budget_zero_needs_a_model_that_says_its_input_length():
    from cqtools.errors import InputError

    cfg = AnswerConfig(mode="single", max_passage_tokens=0, n_passages=None, grounding="none")
    with pytest.raises(InputError, match="does not say how long"):
        answer_batch([{"id": "r", "question": "Who?", "passages": _passages(40)}], _stage(FakeGenerator("A"), cfg), {})
    gen = FakeGenerator("A")
    gen.context = 60  # tokens: 60 - 16 new tokens - the prompt without passages leaves room for a few lines
    out = answer_batch([{"id": "r", "question": "Who?", "passages": _passages(40, 40, 40, 40)}], _stage(gen, cfg), {})
    assert 1 <= out[0]["meta"]["passages_read"]["answer"] < 4


# --- REFUEL's round trip -------------------------------------------------------------------------

READINGS = {"Who won?": "Ann ; Bob", "Who won Ann?": "Ann ; Cy", "Who won Bob?": "Bob", "Who won Cy?": "Cy ; Dee",
            "Who won Dee?": "Dee"}


def refuel_replies(prompt: str) -> str:
    """The reader lists answers for each question; the DQ writer rewrites "Who won?" for its answer."""
    if prompt.rstrip().endswith("Answers:"):
        return READINGS[after_question(prompt).split("\n")[0]]
    answer = re.findall(r"^Answer: (.*)$", prompt, re.M)[-1]
    return f"Who won {answer}?"


def _refuel(max_rounds=9, **extra):
    gen = FakeGenerator(refuel_replies)
    cfg = AnswerConfig(mode="multi", round_trip=True, round_trip_method="refuel", max_rounds=max_rounds,
                       grounding="none", **extra)
    stage = _stage(gen, cfg, qd_writer=QDWriter(gen))
    record = {"id": "r", "question": "Who won?", "passages": _passages(40, 40, 40, 40)}
    return gen, answer_batch([record], stage, {})[0]


def asked(gen) -> list[list[str]]:
    """The questions the reader was asked, one list per reader call."""
    out, k = [], 0
    for method, n, _ in gen.calls:
        if method != "generate":
            continue
        prompts = gen.prompts[k:k + n]
        k += n
        if prompts and prompts[0].rstrip().endswith("Answers:"):
            out.append([after_question(p).split("\n")[0] for p in prompts])
    return out


def test_refuel_round_trip_reasks_every_dq_until_no_answer_is_new():
    gen, out = _refuel()
    assert asked(gen) == [["Who won?"], ["Who won Ann?", "Who won Bob?"], ["Who won Ann?", "Who won Bob?", "Who won Cy?"],
                          ["Who won Ann?", "Who won Bob?", "Who won Cy?", "Who won Dee?"]]  # the last pass finds nothing new
    assert [a["text"] for a in out["answers"]] == ["Ann", "Bob", "Cy", "Dee"]
    assert out["answers"][2]["question"] == "Who won Ann?" and out["answers"][3]["question"] == "Who won Cy?"
    assert [(d["question"], d["answer"], d["pass"]) for d in out["dqs"]] == [
        ("Who won Ann?", "Ann", 0), ("Who won Bob?", "Bob", 0), ("Who won Cy?", "Cy", 1), ("Who won Dee?", "Dee", 2)]
    dq_prompts = [p for p in gen.prompts if p.rstrip().endswith("question:")]
    assert len(dq_prompts) == 2 + 3 + 4  # a DQ for every answer of each pass that found a new one
    assert all("Question: Who won?\n" in p for p in dq_prompts)  # conditioned on the prompt question
    assert out["meta"]["answer"] == {}  # the info passed in; the stage adds nothing else


def test_refuel_round_trip_stops_at_the_cap():
    gen, out = _refuel(max_rounds=1)
    assert asked(gen) == [["Who won?"], ["Who won Ann?", "Who won Bob?"]]
    assert [a["text"] for a in out["answers"]] == ["Ann", "Bob", "Cy"]
    assert [d["answer"] for d in out["dqs"]] == ["Ann", "Bob", "Cy"]  # the capped pass's answers still get their DQ


def test_refuel_round_trip_records_are_independent_of_their_batch():
    gen = FakeGenerator(refuel_replies)
    cfg = AnswerConfig(mode="multi", round_trip=True, round_trip_method="refuel", max_rounds=9, grounding="none")
    one = {"id": "r", "question": "Who won?", "passages": _passages(40)}
    alone = answer_batch([dict(one)], _stage(gen, cfg, qd_writer=QDWriter(gen)), {})[0]
    gen2 = FakeGenerator(lambda p: refuel_replies(p) if "Who won" in p else
                         "Eve" if p.rstrip().endswith("Answers:") else "Who lost to Eve?")
    other = {"id": "s", "question": "Who lost?", "passages": _passages(40)}
    both = answer_batch([dict(one), other], _stage(gen2, cfg, qd_writer=QDWriter(gen2)), {})
    assert both[0]["answers"] == alone["answers"] and both[0]["dqs"] == alone["dqs"]


# --- REFUEL's LM verification ----------------------------------------------------------------------

def _pair(question, answer, score):
    return {"question": question, "answer": answer, "verify_score": score}


def test_keep_best_keeps_each_answers_best_dq_and_drops_weak_pairs():
    pairs = [_pair("q1", "A", -3.0), _pair("q2", "A", -1.0), _pair("q3", "B", -9.0), _pair("q4", "the C", -2.0),
             _pair("q5", "C", -2.5)]
    assert [(p["question"], p["answer"]) for p in keep_best(pairs, -5.0)] == [("q2", "A"), ("q4", "the C")]


def test_keep_best_keeps_the_best_pair_when_none_passes():
    pairs = [_pair("q1", "A", -9.0), _pair("q2", "B", -7.0), _pair("q3", "B", -8.0)]
    assert keep_best(pairs, -5.0) == [_pair("q2", "B", -7.0)]
    assert keep_best([], -5.0) == []


def test_keep_best_ties():
    # equal DQs for one answer: the earlier; a score equal to the threshold does not pass (lm_score < Th);
    # none passing and two answers tied: the earlier answer
    pairs = [_pair("q1", "A", -5.0), _pair("q2", "A", -5.0), _pair("q3", "B", -5.0)]
    assert keep_best(pairs, -5.0) == [_pair("q1", "A", -5.0)]
    assert keep_best(pairs, -6.0) == [_pair("q1", "A", -5.0), _pair("q3", "B", -5.0)]


def test_refuel_verification_scores_each_dq_answer_pair_with_its_end():
    scores = {("Who won Ann?", " Ann\n"): -1.0, ("Who won Bob?", " Bob\n"): -9.0, ("Who won Cy?", " Cy\n"): -2.0,
              ("Who won Dee?", " Dee\n"): -3.0}

    def score(prompt, continuation):
        question = after_question(prompt).split("\n")[0]
        return scores.get((question, continuation), -50.0)

    gen = FakeGenerator(refuel_replies, score)
    cfg = AnswerConfig(mode="multi", round_trip=True, round_trip_method="refuel", verify=True, verify_rule="refuel",
                       verify_threshold=-6.1, grounding="none")
    record = {"id": "r", "question": "Who won?", "passages": _passages(40, 40)}
    out = answer_batch([record], _stage(gen, cfg, qd_writer=QDWriter(gen)), {})[0]
    assert [(d["question"], d["answer"], d["verify_score"]) for d in out["dqs"]] == [
        ("Who won Ann?", "Ann", -1.0), ("Who won Cy?", "Cy", -2.0), ("Who won Dee?", "Dee", -3.0)]
    assert [(a["text"], a["verify_score"]) for a in out["answers"]] == [("Ann", -1.0), ("Cy", -2.0), ("Dee", -3.0)]
    (prompts, continuations, prefix), = gen.score_calls  # one scoring call for the record's pairs
    assert continuations == [" Ann\n", " Bob\n", " Cy\n", " Dee\n"] and "[1] T0:" in prefix and "[2] T1:" in prefix


def test_threshold_rule_is_unchanged_and_can_drop_every_answer():
    gen = FakeGenerator({"Who?": "Xu ; Yves"}, lambda p, c: -9.0)
    cfg = AnswerConfig(mode="multi", verify=True, verify_threshold=-8.0, grounding="none")
    out = answer_batch([{"id": "r", "question": "Who?", "passages": _passages(40)}], _stage(gen, cfg), {})[0]
    assert out["answers"] == [] and "dqs" not in out
    cfg.verify_rule = "refuel"
    out = answer_batch([{"id": "r", "question": "Who?", "passages": _passages(40)}], _stage(gen, cfg), {})[0]
    assert [a["text"] for a in out["answers"]] == ["Xu"]  # REFUEL keeps the best pair


# --- DISAMBIG-FIRST: --mode dqs --------------------------------------------------------------------

CORPUS = [{"id": "d1", "title": "The Dark Knight", "text": "Heath Ledger played the Joker in the 2008 film."},
          {"id": "d2", "title": "Joker (2019 film)", "text": "Joaquin Phoenix played the Joker in the 2019 film."},
          {"id": "d3", "title": "Batman (1989 film)", "text": "Jack Nicholson played the Joker in 1989."}]


def test_dqs_mode_retrieves_for_each_dq_not_the_ambiguous_question():
    gen = FakeGenerator({"2008": "Heath Ledger", "2019": "Joaquin Phoenix"})
    searcher = FakeSearcher(CORPUS)
    cfg = AnswerConfig(mode="dqs", index="idx", hits=2, n_passages=1, grounding="none")
    record = {"id": "r", "question": "Who played the Joker?",
              "dqs": [{"question": "Who played the Joker in the 2008 film?"},
                      {"question": "Who played the Joker in the 2019 film?"}]}
    out = answer_batch([record], _stage(gen, cfg, cross_encoder=FakeCrossEncoder(), searcher=searcher), {})[0]
    assert searcher.queries == ["Who played the Joker in the 2008 film?", "Who played the Joker in the 2019 film?"]
    assert [d["answer"] for d in out["dqs"]] == ["Heath Ledger", "Joaquin Phoenix"]
    assert [(a["text"], a["question"]) for a in out["answers"]] == [
        ("Heath Ledger", "Who played the Joker in the 2008 film?"),
        ("Joaquin Phoenix", "Who played the Joker in the 2019 film?")]
    assert "Dark Knight" in gen.prompts[0] and "Joaquin" not in gen.prompts[0]  # each read its own passages


@pytest.mark.heavy(reason="cq answer --mode dqs loads the INT8 reranker before it says --index is missing")
def test_dqs_mode_notes_passages_read_per_dq_and_needs_dqs_and_an_index(runner):
    gen = FakeGenerator("Heath Ledger")
    cfg = AnswerConfig(mode="dqs", index="idx", hits=3, max_passage_tokens=50, n_passages=None, grounding="none")
    record = {"id": "r", "question": "Who played the Joker?", "dqs": [{"question": "Who played the Joker?"}]}
    out = answer_batch([record], _stage(gen, cfg, cross_encoder=FakeCrossEncoder(), searcher=FakeSearcher(CORPUS)),
                       {})[0]
    assert out["dqs"] == [{"question": "Who played the Joker?", "answer": "Heath Ledger"}]
    assert out["meta"]["passages_read"]["answer"] == [2]
    result = runner.invoke(cli, ["answer", "--mode", "dqs"], input=jsonl([record]))
    assert result.exit_code == 1 and "give --index IDX" in result.stderr and "Traceback" not in result.stderr
    from cqtools.errors import InputError

    with pytest.raises(InputError, match="has no 'dqs'"):
        answer_batch([{"id": "q", "question": "Q?"}], _stage(gen, cfg, searcher=FakeSearcher(CORPUS)), {})


def test_refuel_options_need_their_switch(runner):
    result = runner.invoke(cli, ["answer", "--mode", "multi", "--round-trip-method", "refuel", "--reader", "generative",
                                 "--model", "openai:none", "--api-base", "http://127.0.0.1:9/v1"], input="")
    assert result.exit_code == 1 and "add --round-trip" in result.stderr


def test_presets_set_the_papers_answer_options():
    from cqtools import presets

    refuel = presets.values("refuel", "answer")
    assert refuel["round_trip_method"] == "refuel" and refuel["verify_rule"] == "refuel"
    assert refuel["max_passage_tokens"] == 0 and refuel["verify_threshold"] == -6.1
    assert presets.values("ambigqa", "answer")["max_passage_tokens"] == 1024
    assert presets.values("askcq", "answer")["rerank_depth"] == 100
    assert presets.values("disambig-first", "answer")["mode"] == "dqs"


# --- tuning REFUEL's threshold on a dev split --------------------------------------------------------

def test_make_tune_refuel_threshold_answers_a_split_the_grid_does_not_score(tmp_path):
    import subprocess

    from .conftest import ROOT

    proc = subprocess.run(["make", "-n", "-C", str(ROOT), "tune-refuel-threshold", f"WORK={tmp_path}/w", "N_TUNE=7"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    plan = proc.stdout
    assert "if i not in grid" in plan and "ambignq.m.jsonl" in plan  # the model tier's questions are left out
    assert "--ids" in plan and "--limit 7" in plan
    assert "answer --preset refuel" in plan and "--verify-threshold -1e9" in plan
    assert plan.index("answer --preset refuel") < plan.index("bench/tune_refuel_threshold.py")
    assert "--out docs/refuel-threshold.md" in plan


def test_threshold_sweep_reapplies_keep_best_and_picks_by_answer_f1():
    import importlib.util

    from .conftest import ROOT

    spec = importlib.util.spec_from_file_location("tune", ROOT / "bench" / "tune_refuel_threshold.py")
    tune = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tune)
    gold = {"annotations": [{"type": "multipleQAs", "qaPairs": [{"question": "q1", "answer": ["Ann"]},
                                                                 {"question": "q2", "answer": ["Bob"]}]}]}
    records = [{"id": "r", "gold": gold, "dqs": [_pair("q1", "Ann", -2.0), _pair("q2", "Bob", -4.0),
                                                 _pair("q3", "Zed", -9.0)]}]
    rows = dict((t, f1) for t, f1, _ in tune.sweep(records, [-10.0, -5.0, -3.0, -1.0]))
    assert rows == {-10.0: 80.0, -5.0: 100.0, -3.0: 66.67, -1.0: 66.67}  # -1: none passes, the best pair stays
    assert tune.best(tune.sweep(records, [-10.0, -5.0, -4.5]))[0] == -5.0  # ties: the first in the grid
    assert len(tune.GRID) == 201 and tune.GRID[0] == -20.5 and tune.GRID[-1] == -0.5


# --- through an OpenAI-compatible server ---------------------------------------------------------------

def test_the_refuel_preset_through_an_openai_server(runner, server, tmp_path, monkeypatch):
    """Every request of `cq answer --preset refuel`, as the server saw it: one reading, the DQs, every DQ
    read again, one scoring request per (DQ, answer) pair with the answer's newline end."""
    from cqtools.models import openai_backend

    monkeypatch.setenv("CQ_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("CQ_API_KEY", "sk-test")
    openai_backend._GENERATORS.clear()
    server.control(reset=True, reply=" Ann ; Bob\n\nmore")
    record = {"id": "r", "question": "Who won?", "passages": _passages(40, 40, 40, 40)}
    args = ["answer", "--preset", "refuel", "--model", "openai:fake", "--api-base", server.url]
    # the preset's budget (0: the model's input length) comes from the server: it advertises 60 tokens here, which
    # the prompt and the answers' 3 x 16 tokens fill: only the first passage is read (always one)
    from cqtools.models import served_context

    served_context._KNOWN.clear()
    server.control(reset=True, reply=" Ann ; Bob\n\nmore", context=60)
    advertised = runner.invoke(cli, args + ["--verify-threshold", "-1e9"], input=jsonl([record]))
    assert advertised.exit_code == 0, advertised.stderr
    assert parse_jsonl(advertised.stdout)[0]["meta"]["passages_read"] == {"answer": 1}
    assert "does not say how long" not in advertised.stderr
    # a server that says nothing: cq's default budget, said once, never a refusal
    served_context._KNOWN.clear()
    served_context._NOTED.clear()
    server.control(reset=True, reply=" Ann ; Bob\n\nmore")
    default = runner.invoke(cli, args + ["--verify-threshold", "-1e9"], input=jsonl([record]))
    assert default.exit_code == 0, default.stderr
    assert default.stderr.count("does not say how long an input fake takes: reading passages up to 4096") == 1
    assert parse_jsonl(default.stdout)[0]["meta"]["passages_read"] == {"answer": 4}
    # a server that says nothing until it refuses a prompt as over its context, saying the context (llama-cpp-python's
    # server): the batch is read again with the passages that fit what it said, and every later prompt fits it
    served_context._KNOWN.clear()
    server.control(reset=True, reply=" Ann ; Bob\n\nmore", limit=240)
    worded = {**record, "passages": [{**p, "text": " ".join(["word"] * 40)} for p in record["passages"]]}
    learned = runner.invoke(cli, args + ["--verify-threshold", "-1e9"], input=jsonl([worded]))
    assert learned.exit_code == 0, learned.stderr
    assert "says fake takes 240 tokens: prompts are fitted to that" in learned.stderr
    (out,) = parse_jsonl(learned.stdout)
    assert out["meta"]["passages_read"]["answer"] < 4 and [a["text"] for a in out["answers"]] == ["Ann", "Bob"]
    from tests.openai_server import requested

    bodies = [r["body"] for r in server.requests()]
    assert requested(bodies[0]) > 240 and all(requested(b) <= 240 for b in bodies[1:]) and len(bodies) > 2
    # words of one letter: the server counts a token every 2 characters, where cq estimates 4; its refusal's own
    # count ("you requested X tokens") teaches cq that, and the batch read again fits
    served_context._KNOWN.clear()
    server.control(reset=True, reply=" Ann ; Bob\n\nmore", limit=240)
    short = {**record, "passages": [{**p, "text": " ".join(["a"] * 60)} for p in record["passages"]]}
    counted = runner.invoke(cli, args + ["--verify-threshold", "-1e9"], input=jsonl([short]))
    assert counted.exit_code == 0, counted.stderr
    assert "characters a token: budgets count with that" in counted.stderr
    bodies = [r["body"] for r in server.requests()]
    assert requested(bodies[0]) > 240 and all(requested(b) <= 240 for b in bodies[1:])
    served_context._KNOWN.clear()
    served_context._CHARS.clear()
    server.control(reset=True, reply=" Ann ; Bob\n\nmore")
    result = runner.invoke(cli, args + ["--max-passage-tokens", "26", "--verify-threshold", "-1e9"],
                           input=jsonl([record]), catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    (out,) = parse_jsonl(result.stdout)
    bodies = [r["body"] for r in server.requests()]
    scoring = [b for b in bodies if b.get("echo")]
    generating = [b for b in bodies if not b.get("echo") and not b.get("logprobs")]  # not the scoring probes
    readings = [b for b in generating if "Answers:" in str(b.get("prompt") or b.get("messages"))]
    # the question, then the DQ: this server writes the same DQ for both answers, kept as written (no "AQ
    # (title)?" fallback inside REFUEL), so it is re-asked once (no new answer: the loop ends)
    assert len(readings) == 1 + 1 and "Question: Ann ; Bob?" in str(readings[1])
    assert len(generating) - len(readings) == 2  # a DQ for each of the two answers
    assert [a["text"] for a in out["answers"]] == ["Ann", "Bob"] and len(out["dqs"]) == 2
    assert all(isinstance(d["verify_score"], float) for d in out["dqs"])
    assert len(scoring) == 2 and all(b["prompt"].endswith(("Ann\n", "Bob\n")) for b in scoring)
    assert out["meta"]["passages_read"] == {"answer": 2}  # "Who won?" is 2 tokens, each passage line 10: 2 + 2 * 10
    assert out["meta"]["answer"]["round_trip_method"] == "refuel" and out["meta"]["answer"]["verify_rule"] == "refuel"
    assert out["meta"]["presets"] == {"answer": "refuel"}
    openai_backend._GENERATORS.clear()


def test_refuel_round_trip_and_verification_follow_the_hand_traced_release():
    import json

    from .conftest import FIXTURES

    trace = json.loads((FIXTURES / "released" / "refuel" / "round_trip_trace.json").read_text())
    readings = {q: " ; ".join(a) for q, a in trace["stub"]["answer_prediction"].items()}
    lm_score = trace["stub"]["lm_score"]

    def replies(prompt):
        if prompt.rstrip().endswith("Answers:"):
            return readings[after_question(prompt).split("\n")[0]]
        return "Who won " + re.findall(r"^Answer: (.*)$", prompt, re.M)[-1] + "?"

    gen = FakeGenerator(replies, lambda p, c: -lm_score[c.strip()])
    cfg = AnswerConfig(mode="multi", round_trip=True, round_trip_method="refuel", max_rounds=9, grounding="none")
    record = {**trace["record"], "passages": _passages(40)}
    out = answer_batch([dict(record)], _stage(gen, cfg, qd_writer=QDWriter(gen)), {})[0]
    assert asked(gen) == [p["ap_inputs"] for p in trace["passes"]]
    assert [[d["question"], d["answer"]] for d in out["dqs"]] == trace["passes"][-1]["noambq"]
    gen = FakeGenerator(replies, lambda p, c: -lm_score[c.strip()])
    cfg.verify, cfg.verify_rule, cfg.verify_threshold = True, "refuel", -trace["lm_filtering"]["threshold"]
    out = answer_batch([dict(record)], _stage(gen, cfg, qd_writer=QDWriter(gen)), {})[0]
    assert [[d["question"], d["answer"].lower(), -d["verify_score"]] for d in out["dqs"]] == \
        trace["lm_filtering"]["kept"]


# --- from the audit of this change -------------------------------------------------------------------

@pytest.mark.parametrize("category,head", [("In terms of what", "In terms of what"), ("What year", "What year"),
                                           ("Are you referring to", "Are you referring to"), ("film", "Which film"),
                                           ("which film do you mean", "Which film do you mean"), (None, "Which one")])
def test_the_revised_question_keeps_a_head_that_is_already_a_question(category, head):
    from cqtools.stages.answer.questions import revised_question

    assert revised_question("Who won the cup?", category, "X") == f"Who won the cup?, {head}: X"


def test_refuel_verification_is_refused_where_answers_are_for_other_questions():
    from cqtools.errors import InputError
    from cqtools.stages import answer

    with pytest.raises(InputError, match="--verify-rule refuel verifies"):
        answer.build(mode="cq", reader="generative", model="fake", verify=True, verify_rule="refuel")


def test_a_reader_whose_verify_takes_no_end_is_a_one_line_error():
    from cqtools.errors import InputError
    from cqtools.stages.answer.refuel import score_pairs

    class OldReader:
        name = "old"

        def verify(self, question, passages, answers):
            return [0.0] * len(answers)

    with pytest.raises(InputError, match="takes no end="):
        score_pairs(OldReader(), [("Who won?", "Ann")], [])


@pytest.mark.parametrize("preset", ["ambigqa", "askcq"])
def test_reading_presets_name_the_generative_reader_even_with_an_extractive_one_installed(preset, monkeypatch):
    from cqtools import presets

    assert presets.values(preset, "answer")["reader_name"] == "generative"


def test_disambig_first_reads_each_dqs_retrieved_set_not_a_top_3(fixture_index, tiny_causal, tiny_cross_encoder):
    """Step 3 of DISAMBIG-FIRST: DPR's reader reads the DQ's retrieved set; the preset's reader reads as many of the
    DQ's reranked 100 passages as fit its input (it read the top 3 before, issue 35 item 5)."""
    from cqtools import presets

    record = {"id": "r", "question": "Who played the Joker?", "dqs": [{"question": "Who played the Joker in 2008?"}]}
    stage = presets.stage("disambig-first", "answer", index=fixture_index, reader="generative", model=tiny_causal,
                          reranker=tiny_cross_encoder, grounding="none")
    (out,) = stage([record])
    (read,) = out["meta"]["passages_read"]["answer"]
    assert read > 3, read
    assert out["meta"]["answer"]["mode"] == "dqs" and out["meta"]["answer"]["hits"] == 100
