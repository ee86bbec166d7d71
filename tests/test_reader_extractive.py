"""The extractive reader: `cq train reader` on a tiny locally built span model, then
`cq answer --reader extractive` (spans are passage substrings, multi is distinct, batch invariant)."""
import json
import os

import orjson
import pytest

from cqtools.config import RunConfig

from cqtools.cli import cli
from cqtools.metrics.normalize import normalize_answer
from cqtools.stages.answer.extractive import ExtractiveOptions, ExtractiveReader, context_of, load_extractive
from cqtools.train.span_reader import (ReaderTrainConfig, _split, examples_of, find_answer, gold_aliases,
                                      training_questions)

from .conftest import _save_tiny_model, jsonl, parse_jsonl

FACTS = [
    ("Who wrote Hamlet?", "Hamlet", "Hamlet is a tragedy written by William Shakespeare around 1600.",
     ["William Shakespeare", "Shakespeare"]),
    ("What is the capital of France?", "Paris", "Paris is the capital and largest city of France.", ["Paris"]),
    ("Who painted the Mona Lisa?", "Mona Lisa", "The Mona Lisa was painted by Leonardo da Vinci in Florence.",
     ["Leonardo da Vinci"]),
    ("When did the Berlin Wall fall?", "Berlin Wall", "The Berlin Wall fell on 9 November 1989 after weeks of unrest.",
     ["9 November 1989", "1989"]),
    ("Who discovered penicillin?", "Penicillin", "Penicillin was discovered in 1928 by Alexander Fleming in London.",
     ["Alexander Fleming"]),
    ("What is the largest planet?", "Jupiter", "Jupiter is the largest planet in the Solar System.", ["Jupiter"]),
    ("Who composed the Magic Flute?", "The Magic Flute", "The Magic Flute is an opera by Wolfgang Amadeus Mozart.",
     ["Wolfgang Amadeus Mozart", "Mozart"]),
    ("What is the boiling point of water?", "Water", "At sea level water boils at 100 degrees Celsius.",
     ["100 degrees Celsius"]),
]
FILLER = {"id": "neg", "title": "Weather", "text": "Rain is liquid water in the form of droplets that fall from clouds."}


def record(i: int) -> dict:
    question, title, text, answers = FACTS[i]
    return {"id": f"r{i}", "question": question,
            "gold": {"ambiguous": False, "annotations": [{"type": "singleAnswer", "answer": answers}],
                     "answers": [answers], "dqs": []},
            "passages": [{**FILLER, "id": f"neg{i}"}, {"id": f"p{i}", "title": title, "text": text}]}


RECORDS = [record(i) for i in range(len(FACTS))]


@pytest.fixture(scope="module")
def tiny_qa(tmp_path_factory) -> str:
    """A random, tiny 2-layer BERT with a span head (stand-in for MiniLM; never downloaded)."""
    from transformers import BertConfig, BertForQuestionAnswering

    return _save_tiny_model(str(tmp_path_factory.mktemp("tinyqa")), lambda tok: BertForQuestionAnswering(
        BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                   intermediate_size=64, max_position_embeddings=512)))


@pytest.fixture(scope="module")
def trained(tiny_qa, tmp_path_factory):
    """`cq train reader`: 40 steps on 6 records (2 held out), a few seconds."""
    from click.testing import CliRunner

    work = tmp_path_factory.mktemp("reader")
    train = work / "train.jsonl"
    train.write_text(jsonl(RECORDS))
    out = str(work / "model")
    result = CliRunner().invoke(cli, ["train", "reader", "--train", str(train), "--holdout", "2", "--model", tiny_qa,
                                      "--out", out, "--epochs", "40", "--max-steps", "40", "--batch-size", "4",
                                      "--lr", "1e-3", "--max-length", "64", "--seed", "3", "--eval-every", "20"])
    assert result.exit_code == 0, result.output
    return out, orjson.loads(result.stdout)


def test_distant_supervision_finds_whole_word_aliases():
    assert gold_aliases(RECORDS[0]) == ["William Shakespeare", "Shakespeare"]
    text = "Hamlet is a tragedy written by William Shakespeare."
    assert text[slice(*find_answer(["Shakespeare", "William Shakespeare"], text))] == "William Shakespeare"
    assert find_answer(["Paris"], "Comparison of Parisian cafes") is None
    assert find_answer(["1989"], "in 1989.") == (3, 7)


GEORGIA = {"id": "ga", "question": "What is the capital of Georgia?",
           "gold": {"ambiguous": True, "annotations": [{"type": "multipleQAs", "qaPairs": [
               {"question": "What is the capital of the country Georgia?", "answer": ["Tbilisi"]},
               {"question": "What is the capital of the US state of Georgia?", "answer": ["Atlanta"]}]},
               {"type": "multipleQAs", "qaPairs": [  # a second annotator repeats one DQ: taught once
                   {"question": "What is the capital of the country Georgia?", "answer": ["Tbilisi"]}]}]},
           "passages": [{"id": "t", "title": "Tbilisi", "text": "Tbilisi is the capital of Georgia, the country."},
                        {"id": "a", "title": "Atlanta", "text": "Atlanta is the capital of the US state of Georgia."}]}


def test_dq_questions_teach_each_reading_its_own_span_and_the_other_passage_as_no_answer(tiny_qa):
    from transformers import AutoTokenizer

    assert training_questions(GEORGIA, False) == [("What is the capital of Georgia?", ["Tbilisi", "Atlanta"])]
    assert training_questions(GEORGIA, True)[1:] == [("What is the capital of the country Georgia?", ["Tbilisi"]),
                                                     ("What is the capital of the US state of Georgia?", ["Atlanta"])]
    tok = AutoTokenizer.from_pretrained(tiny_qa)
    cfg = ReaderTrainConfig(train="x", model="x", out="y", positives=2, negatives=1)
    plain, counts = examples_of([GEORGIA], tok, cfg)
    assert [len(group) for group in plain] == [2] and counts["positive"] == 2 and "dq_questions" not in counts
    cfg.dq_questions = True
    groups, counts = examples_of([GEORGIA], tok, cfg)  # one group per training question: positives, negatives
    assert counts == {"questions": 1, "questions_used": 1, "without_passages": 0, "positive": 4, "negative": 2,
                      "dq_questions": 2, "dq_questions_used": 2, "held_out_answers_skipped": 0}
    examples = [example for group in groups for example in group]

    def target(example):  # the text a training example points at ("" for [CLS], "no answer")
        features, (start, end) = example
        return tok.decode(features["input_ids"][start:end + 1]) if start else ""

    assert [target(e) for e in examples[2:]] == ["tbilisi", "", "atlanta", ""]


def test_a_span_made_of_the_question_s_own_words_is_never_the_answer(tiny_qa):
    """"What is the capital of Georgia?" read off "Tbilisi is the capital of Georgia": a model whose best span is
    "Georgia" (a word of the question) answers with its next span; skip_question_spans=False keeps it."""
    import torch
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_qa)
    question = "What is the capital of Georgia?"
    passage = {"id": "t", "title": "Tbilisi", "text": "Tbilisi is the capital of Georgia."}
    context = context_of(passage)
    enc = tok(question, context, return_offsets_mapping=True)
    offsets, in_context = enc["offset_mapping"], [i for i, s in enumerate(enc.sequence_ids()) if s == 1]
    words = {context[offsets[i][0]:offsets[i][1]].lower(): i for i in reversed(in_context)}  # first occurrence
    start, end = torch.full((len(offsets),), -10.0), torch.full((len(offsets),), -10.0)
    start[0] = end[0] = 0.0
    for word, logit in (("georgia", 5.0), ("tbilisi", 3.0)):
        start[words[word]] = end[words[word]] = logit

    class Fixed(ExtractiveReader):  # the span model's logits, fixed
        def _logits(self, question, contexts):
            return [(start, end, offsets, in_context)]

    def best(**options) -> str:
        reader = Fixed(tok, None, {}, ExtractiveOptions(max_answer_tokens=1, **options))
        return reader.read([question], [[passage]])[0][0]["text"]

    assert best() == "Tbilisi"
    assert best(skip_question_spans=False) == "Georgia"


def test_the_first_answer_comes_from_the_passage_ranked_first_unless_order_is_score(tiny_qa):
    """order=rank (the default): each passage's best span in the order the passages come, so the reranker's
    first passage answers first even where a lower passage has a span that scores higher; order=score:
    by span score alone."""
    import torch
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_qa)
    question = "What is the capital of Australia?"
    passages = [{"id": "c", "title": "Canberra", "text": "Canberra is the capital."},
                {"id": "s", "title": "Sydney", "text": "Sydney is a state capital."}]
    rows = []
    for passage, logit in zip(passages, (2.0, 6.0)):  # the second passage's title span scores higher
        enc = tok(question, context_of(passage), return_offsets_mapping=True)
        in_context = [i for i, s in enumerate(enc.sequence_ids()) if s == 1]
        start, end = torch.full((len(in_context) + 20,), -10.0), torch.full((len(in_context) + 20,), -10.0)
        start[0] = end[0] = 0.0
        start[in_context[0]] = end[in_context[0]] = logit
        rows.append((start, end, enc["offset_mapping"], in_context))

    class Fixed(ExtractiveReader):
        def _logits(self, question, contexts):
            return rows[:len(contexts)]

    def answers(**options) -> list[str]:
        reader = Fixed(tok, None, {}, ExtractiveOptions(max_answer_tokens=1, **options))
        return [a["text"] for a in reader.read([question], [passages], multi=True)[0]]

    assert answers() == ["Canberra", "Sydney"]
    assert answers(order="score") == ["Sydney", "Canberra"]


def test_holdout_is_by_question_id_and_drops_held_questions_from_more_train(tmp_path):
    train = tmp_path / "t.jsonl"
    train.write_text(jsonl(RECORDS))
    more = tmp_path / "m.jsonl"
    more.write_text(jsonl(RECORDS))  # the same questions again: held-out ones must not come back
    kept, held, _ = _split(ReaderTrainConfig(train=str(train), model="x", out="y", holdout=3, more_train=(str(more),)))
    held_ids = {r["id"] for r in held}
    assert len(held) == 3 and not held_ids & {r["id"] for r in kept}
    assert len(kept) == 2 * (len(RECORDS) - 3)


def test_dev_records_are_never_trained_on_even_inside_train(tmp_path):
    """--dev questions that --train (or --more-train) also holds are dropped from training, by id or
    by question text (the grid evaluates on dev questions the reader's --train file contains)."""
    train = tmp_path / "t.jsonl"
    train.write_text(jsonl(RECORDS))
    dev = tmp_path / "d.jsonl"
    dev.write_text(jsonl([RECORDS[0], {**RECORDS[1], "id": "other-id"}]))  # same id; same question, new id
    kept, held, _ = _split(ReaderTrainConfig(train=str(train), model="x", out="y", dev=str(dev)))
    assert [r["id"] for r in held] == ["r0", "other-id"]
    assert [r["id"] for r in kept] == [r["id"] for r in RECORDS[2:]]


def test_training_lowers_the_loss_and_writes_a_report(trained):
    out, summary = trained
    assert summary["steps"] == 40 and summary["examples"] == 12  # 6 questions x (1 positive + 1 negative)
    assert summary["last_loss"] < summary["first_loss"]
    assert set(summary["validation"]) == {"em", "f1", "answer_in_passages", "records"}
    assert summary["validation"]["records"] == 2
    with open(os.path.join(out, "cq_train.json")) as fh:
        report = json.load(fh)
    assert report["config"]["max_length"] == 64 and report["config"]["seed"] == 3
    assert report["threads"] >= 1  # float rounding depends on it: the model card names it
    assert len(report["holdout_ids"]) == 2 and len(report["history"]) == 1
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= set(os.listdir(out))


def test_reader_returns_passage_substrings_and_the_trained_settings(trained):
    out, _ = trained
    reader = load_extractive(out, RunConfig(device="cpu"), n_passages=2)
    assert reader.options.max_length == 64  # from cq_train.json
    found = reader.read([r["question"] for r in RECORDS], [r["passages"] for r in RECORDS])
    assert len(found) == len(RECORDS)
    for r, answers in zip(RECORDS, found):
        assert len(answers) == 1
        a = answers[0]
        passage = next(p for p in r["passages"] if p["id"] == a["passage_id"])
        assert context_of(passage)[a["start"]:a["end"]] == a["text"] and a["text"] == a["text"].strip()


def test_multi_returns_distinct_answers_above_the_threshold(trained):
    out, _ = trained
    base = load_extractive(out, RunConfig(device="cpu"))
    every = ExtractiveReader(base.tokenizer, base.model, base.info,
                             ExtractiveOptions(n_passages=2, max_length=64, multi_threshold=-1e9, max_answers=4,
                                               order="score"))
    answers = every.read([RECORDS[0]["question"]], [RECORDS[0]["passages"]], multi=True)[0]
    keys = [normalize_answer(a["text"]) for a in answers]
    assert len(answers) == 4 and len(set(keys)) == 4 and all(keys)
    assert [a["score"] for a in answers] == sorted((a["score"] for a in answers), reverse=True)
    every.options.order = "rank"  # the default: each passage's best first, in passage order, then by score
    ranked = every.read([RECORDS[0]["question"]], [RECORDS[0]["passages"]], multi=True)[0]
    assert [a["passage_rank"] for a in ranked[:2]] == [0, 1] and len(ranked) == 4
    none = ExtractiveReader(base.tokenizer, base.model, base.info,
                            ExtractiveOptions(n_passages=2, max_length=64, multi_threshold=1e9))
    assert len(none.read([RECORDS[0]["question"]], [RECORDS[0]["passages"]], multi=True)[0]) == 1  # the best stays


@pytest.mark.parametrize("mode", ["single", "multi"])
def test_cq_answer_extractive_end_to_end_and_batch_invariant(runner, trained, mode):
    out, _ = trained
    stdin = jsonl(RECORDS)
    outputs = []
    for batch in ("1", "3"):
        result = runner.invoke(cli, ["answer", "--reader", "extractive", "--model", out, "--mode", mode,
                                     "--passages", "2", "--batch-size", batch], input=stdin)
        assert result.exit_code == 0, result.output
        outputs.append(parse_jsonl(result.stdout))
    records = outputs[0]
    assert [r["id"] for r in records] == [r["id"] for r in RECORDS]
    for r in records:
        assert r["answers"] and all(a["grounding"] == "span" for a in r["answers"])
        assert r["meta"]["answer"]["model"] == out and r["meta"]["answer"]["mode"] == mode
        assert r["meta"]["answer"]["passages"] == 2
    assert [r["answers"] for r in outputs[0]] == [r["answers"] for r in outputs[1]]


def test_span_order_and_question_spans_are_flags_of_the_extractive_reader(runner, trained):
    """--span-order score and --question-spans keep reach the reader (its options, in meta.answer); --span-order
    score lists multi's answers by score alone; a generative reader has no such option (a one-line error)."""
    out, _ = trained
    args = ["answer", "--reader", "extractive", "--model", out, "--mode", "multi", "--passages", "2"]
    default = parse_jsonl(runner.invoke(cli, args, input=jsonl(RECORDS)).stdout)
    result = runner.invoke(cli, args + ["--span-order", "score", "--question-spans", "keep"], input=jsonl(RECORDS))
    assert result.exit_code == 0, result.output
    by_score = parse_jsonl(result.stdout)
    assert default[0]["meta"]["answer"]["order"] == "rank" and default[0]["meta"]["answer"]["skip_question_spans"]
    meta = by_score[0]["meta"]["answer"]
    assert meta["order"] == "score" and meta["skip_question_spans"] is False
    for r in by_score:
        assert [a["score"] for a in r["answers"]] == sorted((a["score"] for a in r["answers"]), reverse=True)
    bad = runner.invoke(cli, args + ["--span-order", "length"], input=jsonl(RECORDS))
    assert bad.exit_code != 0 and "rank" in bad.output and "Traceback" not in bad.output


def test_extractive_reader_refuses_a_language_model(runner, tiny_causal, monkeypatch):
    monkeypatch.setenv("CQ_OFFLINE", "1")
    result = runner.invoke(cli, ["answer", "--reader", "extractive", "--model", tiny_causal], input=jsonl(RECORDS[:1]))
    assert result.exit_code != 0
    assert "--reader extractive needs a span" in result.output and "cq train reader" in result.output


def test_auto_reader_follows_the_model(trained, tiny_causal, tmp_path, monkeypatch):
    """--reader auto (the default): an installed reader in $CQ_MODELS/reader when no model is named,
    else the named model's kind decides; long answers and --verify keep the generator."""
    from cqtools.errors import ResourceError
    from cqtools.models.roles import installed_reader, role
    from cqtools.stages.answer import DEFAULT_READER, choose_reader

    from cqtools.models import roles

    out, _ = trained
    monkeypatch.setenv("CQ_MODELS", str(tmp_path))
    monkeypatch.setattr(roles, "SHIPPED_DIR", str(tmp_path / "none-shipped"))  # tests/test_shipped.py: the shipped one
    assert installed_reader(RunConfig.from_env()) is None and role("reader").model(RunConfig.from_env()) == DEFAULT_READER
    assert choose_reader("auto", None, RunConfig.from_env()) == ("generative", None)
    with pytest.raises(ResourceError, match=r"\$CQ_MODELS/reader"):
        choose_reader("extractive", None, RunConfig.from_env())
    os.symlink(out, tmp_path / "reader")
    installed = str(tmp_path / "reader")
    assert installed_reader(RunConfig.from_env()) == installed and role("reader").model(RunConfig.from_env()) == installed
    assert choose_reader("auto", None, RunConfig.from_env()) == ("extractive", installed)
    assert choose_reader("extractive", None, RunConfig.from_env()) == ("extractive", installed)
    assert choose_reader("auto", None, RunConfig.from_env(), generator_only=True) == ("generative", None)
    assert choose_reader("generative", None, RunConfig.from_env()) == ("generative", None)
    assert choose_reader("auto", tiny_causal, RunConfig.from_env()) == ("generative", tiny_causal)
    assert choose_reader("auto", out, RunConfig.from_env()) == ("extractive", out)
    monkeypatch.setenv("CQ_MODEL_READER", tiny_causal)  # the role's variable still wins in `cq models`
    assert role("reader").model(RunConfig.from_env()) == tiny_causal


def test_cq_answer_defaults_to_the_installed_reader(runner, trained, tmp_path, monkeypatch):
    out, _ = trained
    monkeypatch.setenv("CQ_MODELS", str(tmp_path))
    os.symlink(out, tmp_path / "reader")
    explicit = runner.invoke(cli, ["answer", "--reader", "extractive", "--model", out, "--passages", "2"],
                             input=jsonl(RECORDS))
    default = runner.invoke(cli, ["answer", "--passages", "2"], input=jsonl(RECORDS))
    assert explicit.exit_code == 0 and default.exit_code == 0, default.output
    mine, theirs = parse_jsonl(default.stdout), parse_jsonl(explicit.stdout)
    assert [r["answers"] for r in mine] == [r["answers"] for r in theirs]
    assert {(r["meta"]["answer"]["reader"], r["meta"]["answer"]["model"]) for r in mine} == \
        {("extractive", str(tmp_path / "reader"))}


def test_a_span_never_runs_from_the_title_into_the_text():
    """The reader reads "title: text"; a span crossing the joint ("Tbilisi: Tbilisi is the capital", the demo's
    answer for Georgia) is no answer: the best span lies in the title or in the text."""
    import torch

    reader = object.__new__(ExtractiveReader)
    reader.options = ExtractiveOptions(n_passages=1, top_k=3, skip_question_spans=False)
    passage = {"id": "p1", "title": "Tbilisi", "text": "Tbilisi is the capital"}
    assert context_of(passage) == "Tbilisi: Tbilisi is the capital"
    # tokens: [CLS] | Tbilisi (title) | : | Tbilisi | is | the | capital
    offsets = [(0, 0), (0, 7), (7, 8), (9, 16), (17, 19), (20, 23), (24, 31)]
    starts = torch.tensor([0.0, 9.0, 0.0, 5.0, 0.0, 0.0, 0.0])  # the title's token starts best
    ends = torch.tensor([0.0, 1.0, 0.0, 4.0, 0.0, 0.0, 8.0])  # "capital" ends best
    reader._logits = lambda question, contexts: [(starts, ends, offsets, list(range(1, 7)))]
    spans = reader.spans("What is the capital of Georgia?", [passage])
    assert spans[0]["text"] == "Tbilisi is the capital"  # 5 + 8, not the crossing 9 + 8
    assert all(s["end"] <= len("Tbilisi") or s["start"] >= len("Tbilisi: ") for s in spans)
    assert {"Tbilisi", "Tbilisi is the capital"} <= {s["text"] for s in spans}


def test_a_span_never_starts_or_ends_inside_a_word():
    """A subword token's offsets can cut a word ("jah (Leonard Cohen" of "Hallelujah (Leonard Cohen song)", the demo's
    fx08 under the MiniLM-L-12 reader): such a span is no answer, whatever its score."""
    from cqtools.stages.answer.extractive import inside_word

    context = "Hallelujah (Leonard Cohen song): a song by Leonard Cohen, 1984."
    at = context.index
    assert inside_word(context, at("jah"), at(" song)"))
    assert inside_word(context, at("Leonard"), at("Leonard") + 4)  # "Leon"
    assert not inside_word(context, at("Leonard"), at(" song)"))
    assert not inside_word(context, 0, len("Hallelujah"))
    assert not inside_word(context, at("1984"), at("1984") + 4)
    assert not inside_word(context, context.rindex("Leonard"), context.rindex("Cohen") + 5)


def test_a_question_about_what_no_passage_mentions_is_answered_with_low_confidence():
    """A span scored over "no answer here" from passages that never mention what the question asks about
    ("mercury", the passages being about water) is a low-confidence reading, with the words named; question-frame
    words ("who", "sang", "film") and a word's other forms ("boiling"/"boils") do not count as unmatched."""
    from cqtools.records import LOW, SURE, answer_confidence, low_note
    from cqtools.stages.answer.support import unmatched_words

    water = [{"title": "Boiling point", "text": "At sea level, pure water boils at 100 degrees Celsius."}]
    assert unmatched_words("What is the boiling point of mercury?", water) == ["mercury"]
    assert unmatched_words("What is the boiling point of water?", water) == []
    assert unmatched_words("Who sang the song in the film?", water) == []
    span = {"text": "100", "score": 2.6, "grounding": "span", "passage_rank": 0}
    assert answer_confidence(span) == SURE
    assert answer_confidence({**span, "unmatched": ["mercury"]}) == LOW
    assert "mercury" in low_note({**span, "unmatched": ["mercury"]})
