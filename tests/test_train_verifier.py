"""`cq train verifier` and `cq train spanseqgen --input-layout askcq` (issue 45 item 2): REFUEL's LM verifier, a
Fusion-in-Decoder seq2seq model trained on gold (disambiguated question, answer) pairs, scoring answers in the reader's
place with `cq answer --verify --verifier-model DIR`; AskCQ's clarification-based QA reader, read by `cq answer --mode
cq`. Tiny random BART, a few steps."""
import json

from cqtools.cli import cli

from .conftest import jsonl, parse_jsonl
from .test_train_paper_models import tiny_bart, with_passages  # noqa: F401 (fixtures)
from .test_train_resume import report

GOLD = {"annotations": [
    {"type": "multipleQAs", "qaPairs": [{"question": "Who played the Joker in The Dark Knight?",
                                         "answer": ["Heath Ledger", "Ledger"]},
                                        {"question": "Who played the Joker in Joker?", "answer": ["Joaquin Phoenix"]},
                                        {"question": "Who played the Joker in Suicide Squad?",
                                         "answer": ["Jared Leto"]}]},
    {"type": "singleAnswer", "answer": ["Nobody Known", "Jared Leto"]}]}


def test_examples_are_each_gold_pair_with_its_first_alias_found_in_the_passages(tiny_bart):
    from cqtools.stages.answer.fid import fid_inputs
    from cqtools.train.spanseqgen import seqgen_tokenizer
    from cqtools.train.verifier import VerifierTrainConfig, verifier_examples

    tokenizer = seqgen_tokenizer(tiny_bart)
    passages = [{"title": "Joker", "text": "Heath Ledger and Jared Leto played him."},
                {"title": "Other", "text": "Nothing here."}]
    record = {"id": "r", "question": "Who played the Joker?", "passages": passages, "gold": GOLD}
    cfg = VerifierTrainConfig(train="-", dev=None, model=tiny_bart, out="-", passages=1)
    examples = verifier_examples([record], tokenizer, cfg)
    # Joaquin Phoenix is in no passage: left out; the singleAnswer's first found alias is Jared Leto
    assert [target for _, target, _ in examples] == ["heath ledger", "jared leto", "jared leto"]
    questions = ["Who played the Joker in The Dark Knight?", "Who played the Joker in Suicide Squad?",
                 "Who played the Joker?"]
    assert [rows for rows, _, _ in examples] == [fid_inputs(tokenizer, q, passages, 1, cfg.max_passage_input_tokens)
                                                 for q in questions]
    assert all(len(rows) == 1 for rows, _, _ in examples)  # --passages 1: one row (question + passage) each


def test_a_trained_verifier_scores_the_answers_cq_answer_keeps(runner, tmp_path, tiny_bart, with_passages, server,
                                                               monkeypatch):
    """Trained 4 steps, saved, then given to `cq answer --verify --verify-rule refuel --verifier-model DIR`: the
    answers' scores are the verifier's log p(answer + EOS | question, passages), not the reader's, and so is what
    is kept at the same threshold."""
    from cqtools.models import openai_backend
    from cqtools.stages.answer.refuel import keep_best
    from cqtools.stages.answer.verifier import FiDVerifier

    out = str(tmp_path / "verifier")
    done = runner.invoke(cli, ["train", "verifier", "--model", tiny_bart, "--train", with_passages, "--passages", "3",
                               "--batch-size", "4", "--max-steps", "4", "--dev", with_passages, "--dev-limit", "2",
                               "--seed", "5", "--lr", "1e-3", "--out", out, "-q"])
    assert done.exit_code == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["task"] == "verifier" and summary["steps"] == 4 and summary["dev"]["n"] >= 2
    assert 0 <= summary["dev"]["em"] <= 1 and report(out)["config"]["max_answer_tokens"] == 20

    monkeypatch.setenv("CQ_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("CQ_API_KEY", "sk-test")
    openai_backend._GENERATORS.clear()
    passages = [{"id": f"p{n}", "title": f"T{n}", "text": text, "score": 1.0, "rank": n + 1} for n, text in
                enumerate(["Heath Ledger played the Joker.", "Jared Leto played him too.", "Films of 2016."])]
    record = {"id": "r", "question": "Who played the Joker?", "passages": passages}
    verifier = FiDVerifier(out, "cpu")
    pairs = [("Who played the Joker?", "Heath Ledger"), ("Who played the Joker?", "Jared Leto")]
    mine = [round(s, 4) for s in verifier.verify_pairs(pairs, passages)]
    assert mine[0] != mine[1] and all(s < 0 for s in mine)
    threshold = str(round(sum(mine) / 2, 4))  # between the verifier's two scores: it keeps one answer

    def answer(*extra):
        server.control(reset=True, reply=" Heath Ledger ; Jared Leto\n\nmore")
        result = runner.invoke(cli, ["answer", "--mode", "multi", "--model", "openai:fake", "--api-base", server.url,
                                     "--grounding", "none", "--passages", "3", "--verify", "--verify-rule", "refuel",
                                     *extra, "-q"], input=jsonl([record]))
        assert result.exit_code == 0, result.stderr
        return parse_jsonl(result.stdout)[0]

    reader_scores = [a["verify_score"] for a in answer("--verify-threshold", "-1e9")["answers"]]
    assert len(reader_scores) == 2 and reader_scores != mine
    by_reader = answer("--verify-threshold", threshold)
    by_verifier = answer("--verify-threshold", threshold, "--verifier-model", out)
    assert [a["verify_score"] for a in by_verifier["answers"]] == [max(mine)]
    assert [a["text"] for a in by_verifier["answers"]] == [pairs[mine.index(max(mine))][1]]
    assert by_verifier["meta"]["answer"]["verifier_model"] == out
    expected = keep_best([{"answer": a, "verify_score": s} for (_, a), s in zip(pairs, reader_scores)],
                         float(threshold))
    assert [a["text"] for a in by_reader["answers"]] == [p["answer"] for p in expected]
    assert [a["text"] for a in by_reader["answers"]] != [a["text"] for a in by_verifier["answers"]]
    openai_backend._GENERATORS.clear()


def test_a_verifier_model_that_is_not_one_or_without_verify_is_a_one_line_error(runner, tmp_path, tiny_bart):
    record = {"id": "r", "question": "Who?", "passages": [{"id": "p", "title": "T", "text": "x"}]}
    args = ["answer", "--mode", "multi", "--model", "openai:fake", "--api-base", "http://127.0.0.1:9", "-q"]
    wrong = runner.invoke(cli, args + ["--verify", "--verifier-model", tiny_bart], input=jsonl([record]))
    assert wrong.exit_code != 0 and "is not a `cq train` directory" in wrong.stderr
    assert "Traceback" not in wrong.stderr and len(wrong.stderr.strip().splitlines()) == 1
    unused = runner.invoke(cli, args + ["--verifier-model", str(tmp_path)], input=jsonl([record]))
    assert unused.exit_code != 0 and "add --verify" in unused.stderr and "Traceback" not in unused.stderr


def trained_config(runner, tmp_path, trainer: str, preset: str, model: str, train: str) -> dict:
    """The config `cq train TRAINER --preset PRESET` records after one step."""
    out = str(tmp_path / "recipe")
    done = runner.invoke(cli, ["train", trainer, "--preset", preset, "--model", model, "--train", train,
                               "--max-steps", "1", "--out", out, "-q"])
    assert done.exit_code == 0, done.stderr
    return report(out)["config"]


def test_preset_refuel_trains_the_verifier_with_refuels_recipe(runner, tmp_path, tiny_bart, with_passages):
    config = trained_config(runner, tmp_path, "verifier", "refuel", tiny_bart, with_passages)
    assert {k: config[k] for k in ("passages", "batch_size", "lr", "epochs", "max_answer_tokens")} == {
        "passages": 100, "batch_size": 64, "lr": 3e-5, "epochs": 30, "max_answer_tokens": 20}


# --- AskCQ's clarification-based QA reader (cq train spanseqgen --input-layout askcq, cq answer --mode cq) ---------

def test_askcq_examples_are_the_question_revised_by_each_gold_option_with_its_answers(tiny_bart):
    from cqtools.stages.answer.questions import released_revision
    from cqtools.stages.answer.seqgen import askcq_input
    from cqtools.train.spanseqgen import SpanSeqGenTrainConfig, askcq_examples, seqgen_tokenizer

    tokenizer = seqgen_tokenizer(tiny_bart)
    passages = [{"title": "Joker", "text": "Heath Ledger played him."}]
    gold = {"cq": "Which film: The Dark Knight, or Joker?",
            "dqs": [{"question": "q1", "answers": ["Heath Ledger", "Ledger"]}, {"question": "q2", "answers": ["JP"]}]}
    records = [{"id": "r", "question": "Who played the Joker?", "passages": passages, "gold": gold},
               {"id": "s", "question": "Who?", "passages": passages, "gold": {"annotations": []}}]  # no CQ: none
    cfg = SpanSeqGenTrainConfig(train="-", dev=None, model=tiny_bart, out="-", input_layout="askcq",
                                max_input_tokens=64)
    examples = askcq_examples(records, tokenizer, cfg)
    assert [t for _, t, _ in examples] == ["Heath Ledger", "Ledger", "JP"]
    first = released_revision("Who played the Joker?", "Which film", "The Dark Knight")
    assert first == "Who played the Joker? Which film The Dark Knight?"
    ids = askcq_input(tokenizer, first, passages, 64)
    assert examples[0][0] == ids and ids[:len(tokenizer(first).input_ids)] == tokenizer(first).input_ids
    assert tokenizer.decode(ids, skip_special_tokens=True).startswith("who played the joker? which film the dark")


def test_a_trained_askcq_reader_answers_each_option_in_cq_answer_mode_cq(runner, tmp_path, tiny_bart, with_passages,
                                                                         tiny_cross_encoder):
    from cqtools.stages.answer import seqgen

    out = str(tmp_path / "askcq")
    done = runner.invoke(cli, ["train", "spanseqgen", "--input-layout", "askcq", "--model", tiny_bart, "--train",
                               with_passages, "--batch-size", "4", "--max-steps", "4", "--max-input-tokens", "256",
                               "--max-answer-tokens", "8", "--num-beams", "1", "--dev", with_passages, "--dev-limit",
                               "3", "--seed", "5", "--lr", "1e-3", "--out", out, "-q"])
    assert done.exit_code == 0, done.stderr
    summary = json.loads(done.stdout)
    assert report(out)["config"]["input_layout"] == "askcq" and summary["dev"]["n"] > 0
    assert 0 <= summary["dev"]["em"] <= 1
    import orjson

    records = [orjson.loads(line) for line in open(with_passages, "rb")]
    records = [{**r, "cq": r["gold"]["cq"], "passages": r["passages"][:1]} for r in records if r["gold"].get("cq")][:2]
    result = runner.invoke(cli, ["answer", "--mode", "cq", "--reader", "seqgen", "--model", out, "--revised-question",
                                 "askcq", "--reranker", tiny_cross_encoder, "-q"], input=jsonl(records))
    assert result.exit_code == 0, result.stderr
    answered = parse_jsonl(result.stdout)
    assert answered[0]["meta"]["answer"]["input_layout"] == "askcq"
    model, tokenizer, trained = seqgen.load_seqgen(out, "cpu")
    reader = seqgen.SeqGenReader(model, tokenizer, trained, seqgen.SeqGenOptions(), "cpu", out)
    for record, source in zip(answered, records):
        asked = [a["question"] for a in record["answers"]]
        assert asked and all(q.endswith(f" {a['option']}?") for q, a in zip(asked, record["answers"]))
        made = seqgen.decode_rows(reader, [seqgen.askcq_input(tokenizer, q, source["passages"], 256) for q in asked])
        assert [a["generated"] for a in record["answers"]] == made


def test_preset_askcq_trains_the_reader_with_askcqs_recipe(runner, tmp_path, tiny_bart, with_passages):
    config = trained_config(runner, tmp_path, "spanseqgen", "askcq", tiny_bart, with_passages)
    assert {k: config[k] for k in ("input_layout", "max_input_tokens", "batch_size", "grad_accum", "lr", "epochs",
                                   "num_beams", "max_answer_tokens")} == {
        "input_layout": "askcq", "max_input_tokens": 1024, "batch_size": 10, "grad_accum": 2, "lr": 1e-5,
        "epochs": 100, "num_beams": 4, "max_answer_tokens": 127}
