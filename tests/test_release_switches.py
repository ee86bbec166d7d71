"""Issue 55's stage rows that were real divergences and are now a flag away: each flag does what the release
does, and where the release sets it the paper's preset row sets it (docs/methods.md, tests/test_preset_rows.py)."""
from __future__ import annotations

import re

from click.testing import CliRunner

from cqtools import presets
from cqtools.stages.answer import AnswerConfig, answer_batch
from cqtools.stages.answer.refuel import QDWriter

from .fakes import FakeCrossEncoder, FakeGenerator, after_question
from .test_answer_papers import _passages, _stage, asked
from .test_train_paper_models import tiny_bart  # noqa: F401  (fixture)


def _help(*command: str) -> str:
    from cqtools.cli import cli

    result = CliRunner().invoke(cli, [*command, "--help"])
    assert result.exit_code == 0, result.output
    return result.output


# --- ToC: equal cross-encoder scores (toc/retrieval/combine.py:5 @75a3ddd) ---------------------------------

def test_toc_ties_argsort_is_the_releases_reversed_numpy_argsort():
    import numpy

    from cqtools.stages.toc.run import tie_ranked

    assert tie_ranked([1.0, 2.0, 2.0, 0.5, 2.0], "earlier") == [1, 2, 4, 0, 3]
    assert tie_ranked([1.0, 2.0, 2.0, 0.5, 2.0], "argsort") == [4, 2, 1, 0, 3]  # the later of equal scores first
    for scores in ([0.0] * 40, [float(n % 3) for n in range(50)]):  # long lists: numpy's unstable order, as released
        assert tie_ranked(scores, "argsort") == [int(n) for n in numpy.argsort(scores)[::-1]]
    assert tie_ranked([0.25, 3.0, -1.0], "argsort") == tie_ranked([0.25, 3.0, -1.0], "earlier") == [1, 0, 2]


def test_toc_runner_ranks_ties_by_the_tie_order_and_the_preset_sets_the_releases():
    from cqtools.stages.toc import TocConfig
    from cqtools.stages.toc.run import TocRunner

    pool = [{"id": f"p{n}", "title": f"T{n}", "text": "same words"} for n in range(4)]
    flat = FakeCrossEncoder(lambda query, passage: 1.0)

    def ranked(**options):
        runner = TocRunner(None, flat, None, None, TocConfig(**options))
        return [p["id"] for p in runner.rank(["q"], [pool], 3)[0]]

    assert ranked() == ["p0", "p1", "p2"]
    assert ranked(tie_order="argsort") == ["p3", "p2", "p1"]
    assert presets.get("toc").values("disambiguate")["tie_order"] == "argsort"
    assert "--tie-order [earlier|argsort]" in _help("disambiguate", "--method", "toc")


# --- REFUEL: an answer is new by its raw string (run.py:1098-1107, 1121 @159090e) ----------------------------

READINGS = {"Who won?": "Ann ; Bob", "Who won Ann?": "Ann ; Cy", "Who won Bob?": "ann", "Who won Cy?": "Cy",
            "Who won ann?": "ann"}


def _replies(readings: dict):
    def reply(prompt: str) -> str:
        if prompt.rstrip().endswith("Answers:"):
            return readings[after_question(prompt).split("\n")[0]]
        return "Who won " + re.findall(r"^Answer: (.*)$", prompt, re.M)[-1] + "?"

    return reply


def _refuel(readings=READINGS, scorer=None, qd_one_answer="keep", **extra):
    gen = FakeGenerator(_replies(readings), scorer)
    cfg = AnswerConfig(mode="multi", round_trip=True, round_trip_method="refuel", grounding="none",
                       **{"max_rounds": 9, **extra})
    record = {"id": "r", "question": "Who won?", "passages": _passages(40)}
    writer = QDWriter(gen, one_answer=qd_one_answer)
    return gen, answer_batch([record], _stage(gen, cfg, qd_writer=writer), {})[0]


def test_refuel_round_trip_raw_tells_answers_apart_by_their_strings():
    gen, out = _refuel()
    assert [a["text"] for a in out["answers"]] == ["Ann", "Bob", "Cy"]  # "ann" is Ann, normalised
    assert [(d["question"], d["answer"], d["pass"]) for d in out["dqs"]] == [
        ("Who won Ann?", "Ann", 0), ("Who won Bob?", "Bob", 0), ("Who won Cy?", "Cy", 1)]
    gen, out = _refuel(round_trip_match="raw")
    assert [a["text"] for a in out["answers"]] == ["Ann", "Bob", "Cy", "ann"]  # a new string is a new answer
    # "ann" gets its own DQ, written beside the other answers (the writer takes distinct answers)
    assert [(d["question"], d["answer"], d["pass"]) for d in out["dqs"]] == [
        ("Who won Ann?", "Ann", 0), ("Who won Bob?", "Bob", 0), ("Who won Cy?", "Cy", 1), ("Who won ann?", "ann", 1)]
    assert asked(gen)[-1] == ["Who won Ann?", "Who won Bob?", "Who won Cy?", "Who won ann?"]
    assert out["meta"]["answer"] == {}  # the info passed in
    assert presets.get("refuel").values("answer")["round_trip_match"] == "raw"
    assert "--round-trip-match [normalised|raw]" in _help("answer", "--mode", "multi")


CHAIN = {"Who won?": "Ann ; Bob", "Who won Ann?": "Ann ; Cy", "Who won Bob?": "Bob", "Who won Cy?": "Cy ; Dee",
         "Who won Dee?": "Dee"}


def test_refuel_max_rounds_verifies_every_pair_up_to_that_pass_as_the_releases_pass_x():
    for cap, dqs in ((1, ["Ann", "Bob", "Cy"]), (2, ["Ann", "Bob", "Cy", "Dee"]), (9, ["Ann", "Bob", "Cy", "Dee"])):
        scored: list[str] = []

        def score(prompt, continuation):
            scored.append(after_question(prompt).split("\n")[0])
            return -1.0

        _, out = _refuel(CHAIN, score, max_rounds=cap, round_trip_match="raw", verify=True, verify_rule="refuel",
                         verify_threshold=-5.0)
        assert [d["answer"] for d in out["dqs"]] == dqs  # every pair kept (all score over the threshold)
        assert {d["pass"] for d in out["dqs"]} == set(range(min(cap, 2) + 1))  # pass X: its pairs and the earlier
        assert sorted(set(scored)) == [f"Who won {a}?" for a in dqs]  # every pair through pass X is verified
    assert "--max-rounds" in _help("answer", "--mode", "multi")


# --- AmbigQA's QD input: the release repeats its first passage (QGData.py:316-322 @5c8cdb1) ---------------------

PASSAGES = [{"id": f"p{n}", "title": f"Title{n}", "text": f"words of passage {n} here"} for n in range(6)]


def test_qd_first_repeated_shows_the_first_passage_over_and_over_within_the_budget():
    from cqtools.stages.disambiguate.qd import QdOptions, qd_batch

    record = {"id": "r", "question": "Who won?", "answers": [{"text": "Ann"}, {"text": "Bob"}],
              "passages": PASSAGES}

    def shown(**options):
        gen = FakeGenerator("Who won first?")
        qd_batch([dict(record)], gen, QdOptions(layout="ambigqa", duplicates="keep", max_others=0, n_passages=100,
                                                max_passage_tokens=60, **options))
        return re.findall(r"Title\d+", gen.prompts[0])

    assert shown(passage_order="reranked")[:3] == ["Title0", "Title1", "Title2"]
    repeated = shown(passage_order="first-repeated")
    assert set(repeated) == {"Title0"} and 1 < len(repeated) == len(shown(passage_order="reranked"))
    assert presets.get("ambigqa").values("disambiguate")["passage_order"] == "reranked"  # the paper's; a flag away
    assert "first-repeated" in _help("disambiguate", "--method", "qd")


def test_train_qd_first_repeated_trains_and_reads_the_releases_repeat(tiny_bart, monkeypatch):
    from cqtools.stages.answer import seqgen
    from cqtools.stages.disambiguate import qd_model
    from cqtools.train.qd import QDTrainConfig, record_examples
    from cqtools.train.spanseqgen import seqgen_tokenizer

    tok = seqgen_tokenizer(tiny_bart)
    record = {"id": "r", "question": "Who played the Joker", "passages": PASSAGES[:3], "gold": {"annotations": [
        {"type": "multipleQAs", "qaPairs": [{"question": "Q one?", "answer": ["Ann"]},
                                            {"question": "Q two?", "answer": ["Bob"]}]}]}}

    def inputs(order):
        cfg = QDTrainConfig(train="t", dev=None, model="m", out="o", max_input_tokens=128, passage_order=order)
        return [tok.decode(ids) for ids, _, _ in record_examples(record, tok, cfg)]

    plain, repeated = inputs("reranked"), inputs("first-repeated")
    assert all("title1" in text for text in plain) and not any("title1" in text for text in repeated)
    assert all(text.count("title0") > 2 and len(tok(text).input_ids) >= 120 for text in repeated)  # filled to the cut
    # a model trained so is read so: cq disambiguate --model DIR feeds it the same repeat
    rows: list = []
    monkeypatch.setattr(seqgen, "decode_rows", lambda writer, batch: rows.extend(batch) or ["dq"] * len(batch))
    writer = object.__new__(qd_model.TrainedQD)
    writer.tokenizer, writer.max_input, writer.passage_order = tok, 128, "first-repeated"
    assert writer.write([("Who played the Joker", "Ann", ["Bob"], PASSAGES[:3])]) == ["dq"]
    assert tok.decode(rows[0]) == repeated[0]
    assert "--passage-order [reranked|first-repeated]" in _help("train", "qd")


# --- AmbigQA's and AskCQ's inputs cut at token 1,024: the last passage read in part ------------------------------

def test_fit_cuts_the_passage_over_the_budget_where_the_budget_is_full():
    from cqtools.stages import evidence

    passages = [{"id": f"p{n}", "title": "", "text": "abcd " * 10} for n in range(3)]  # 50 characters: 13 tokens
    count = evidence.token_counter()  # 4 characters a token
    whole = evidence.fit(passages, 30, count, used=2)
    assert [p["id"] for p in whole] == ["p0", "p1"] and whole[1] is passages[1]
    cut = evidence.fit(passages, 30, count, used=2, cut=True)
    assert [p["id"] for p in cut] == ["p0", "p1", "p2"] and cut[:2] == whole
    assert 2 + sum(count(evidence.passage_text(p)) for p in cut) == 30  # filled to the last token
    assert passages[2]["text"].startswith(cut[2]["text"]) and len(cut[2]["text"]) < len(passages[2]["text"])
    assert evidence.fit(passages, 28, count, used=2, cut=True)[2:] == []  # no room left: nothing of it
    assert evidence.fit(passages, 100, count, cut=True) == passages  # everything fits: nothing cut


def test_the_reader_reads_the_cut_passage_under_passage_cut_last():
    gen = FakeGenerator("Alpha")
    # "Who?" is 1 token; each reader line 40 characters = 10 tokens: 3 fit in 36 whole, and 5 tokens of the fourth
    record = {"id": "r", "question": "Who?", "passages": _passages(40, 40, 40, 40)}
    cfg = AnswerConfig(mode="multi", max_passage_tokens=36, n_passages=None, grounding="none")
    answer_batch([dict(record)], _stage(gen, cfg), {})
    cfg = AnswerConfig(mode="multi", max_passage_tokens=36, n_passages=None, grounding="none", passage_cut="last")
    out = answer_batch([dict(record)], _stage(gen, cfg), {})[0]
    assert re.findall(r"^\[\d+\] (T\d+):", gen.prompts[0], re.M) == ["T0", "T1", "T2"]
    last = re.findall(r"^\[\d+\] T3: (x*)$", gen.prompts[1], re.M)
    assert last and 0 < len(last[0]) < len(record["passages"][3]["text"])
    assert out["meta"]["passages_read"] == {"answer": 4}
    for name in ("ambigqa", "askcq"):
        assert presets.get(name).values("answer")["passage_cut"] == "last"
    assert "--passage-cut [whole|last]" in _help("answer", "--mode", "multi")


def test_gen_cq_and_its_trainer_read_the_cut_passage_as_askcq():
    from cqtools.stages.gen_cq.inputs import read_passages
    from cqtools.train.cq_generator import LAYOUT_DEFAULTS, cq_examples

    record = {"id": "r", "question": "Which one?", "passages": [{"title": "T", "text": "word " * 20}] * 3,
              "gold": {"cq": "Which one: a, or b?"}}
    count = len  # a token a character
    taken = ["Which one?"]  # 10 + 1 separator + 2
    whole = read_passages(dict(record), 100, 240, count, taken)
    cut = read_passages(dict(record), 100, 240, count, taken, cut=True)
    assert len(whole) == 2 and cut[:2] == whole and 0 < len(cut[2]) < len(whole[0])
    assert 13 + sum(len(t) + 2 for t in cut) == 240  # each passage's text and its <s> </s>, to the budget
    source = cq_examples([record], 100, None, max_passage_tokens=240, count=count, cut=True)[0][0][0]
    assert cut[2] in source and LAYOUT_DEFAULTS["askcq"]["passage_cut"] == "last"
    assert presets.get("askcq").values("gen-cq")["passage_cut"] == "last"
    assert "--passage-cut [whole|last]" in _help("gen-cq", "--method", "seq2seq")
    assert "--passage-cut [whole|last]" in _help("train", "gen-cq")


def test_refuel_qd_one_answer_write_gives_a_passs_only_answer_a_dq_as_the_release():
    single = {"Who won?": "Ann", "Who won Ann?": "Ann ; Bob", "Who won Bob?": "Bob"}
    gen, out = _refuel(single)
    assert [a["text"] for a in out["answers"]] == ["Ann"] and out["dqs"][0]["question"] == "Who won?"
    gen, out = _refuel(single, qd_one_answer="write")
    assert [a["text"] for a in out["answers"]] == ["Ann", "Bob"]  # its DQ re-asked finds Bob
    assert [(d["question"], d["answer"], d["pass"]) for d in out["dqs"]] == [
        ("Who won Ann?", "Ann", 0), ("Who won Bob?", "Bob", 1)]
    assert presets.get("refuel").values("answer")["qd_one_answer"] == "write"
    assert "--qd-one-answer [keep|write]" in _help("answer", "--mode", "multi")
    assert "--one-answer [keep|write]" in _help("disambiguate", "--method", "qd")
    from cqtools.stages.answer import GenerativeReader, qd_writer_for

    reader = GenerativeReader(FakeGenerator("x"), AnswerConfig())
    writer = qd_writer_for(reader, None, None, qd_layout="refuel", qd_num_beams=1, qd_one_answer="write")
    assert writer.one_answer == "write" and writer.params == {"qd_layout": "refuel", "qd_one_answer": "write"}


# --- AskCQ's clarification-based QA reader: one example per option, an alias drawn (CQDataset.py:155-156) ---------

def test_train_spanseqgen_askcq_draws_one_alias_a_time_under_aliases_draw(tiny_bart):
    import torch

    from cqtools.train.spanseqgen import SpanSeqGenTrainConfig, askcq_examples, batch_encoder, seqgen_tokenizer

    from .test_askcq_training import RECORD

    tok = seqgen_tokenizer(tiny_bart)

    def examples(aliases):
        cfg = SpanSeqGenTrainConfig(train="-", dev=None, model=tiny_bart, out="-", input_layout="askcq",
                                    max_input_tokens=200, reranker="none", aliases=aliases)
        return askcq_examples([RECORD], tok, cfg, None)

    each, drawn = examples("each"), examples("draw")
    options = len({tuple(ids) for ids, _, _ in each})
    assert len(drawn) == options and all(isinstance(t, tuple) for _, t, _ in drawn)
    assert [a for _, t, _ in drawn for a in t] == [t for _, t, _ in each]  # the same aliases, one example an option
    many = [(ids, ("first", "second"), r) for ids, _, r in drawn]
    encode = batch_encoder(tok, 8)
    torch.manual_seed(0)
    seen = {tok.decode(encode(many[:1])["labels"][0][:2].tolist(), skip_special_tokens=True) for _ in range(40)}
    assert seen == {"first", "second"}  # drawn afresh each time it is batched
    assert presets.get("askcq").values("train spanseqgen")["aliases"] == "draw"
    assert "--aliases [each|draw]" in _help("train", "spanseqgen")


# --- AmbigQA's QD dev metric: PTB tokens, then normalised (QGData.py:444-460 @5c8cdb1) ----------------------------

def test_train_qd_dev_edit_f1_tokenizes_as_the_dev_tokenizer_says(tmp_path, monkeypatch, tiny_bart):
    import json

    from cqtools.score import tokenizers
    from cqtools.stages.disambiguate import qd_model
    from cqtools.train.qd import QDTrainConfig, dev_edit_f1
    from cqtools.train.spanseqgen import seqgen_tokenizer

    record = {"id": "d", "question": "Who won the cup?", "passages": [], "gold": {"annotations": [
        {"type": "multipleQAs", "qaPairs": [{"question": "Who won the cup in 1990? | Who won the 1990 cup?",
                                             "answer": ["Ann"]},
                                            {"question": "Who won the cup in 1994?", "answer": ["Bob"]}]}]}}
    dev = tmp_path / "dev.jsonl"
    dev.write_text(json.dumps(record) + "\n")

    class Writer:
        tokenizer = seqgen_tokenizer(tiny_bart)

        def __init__(self, *args):
            pass

        def write(self, jobs):
            return ["Who won the 1990 cup?", "Who won the cup in 1994?"]

    monkeypatch.setattr(qd_model, "TrainedQD", Writer)
    cfg = QDTrainConfig(train="t", dev=str(dev), model="m", out="o")
    assert dev_edit_f1(cfg, "cpu") == {"edit_f1": 1.0, "n": 2}  # the second '|' variant is a reference too
    calls = []

    def ptb(name):
        def tokenize(texts):
            calls.append((name, len(texts)))
            return [tokenizers.simple_tokenize([t])[0] for t in texts]
        return tokenize

    monkeypatch.setattr(tokenizers, "make_tokenizer", ptb)
    cfg = QDTrainConfig(train="t", dev=str(dev), model="m", out="o", dev_tokenizer="ptb")
    assert dev_edit_f1(cfg, "cpu") == {"edit_f1": 1.0, "n": 2}
    assert calls == [("ptb", 2 + 2 + 3)]  # one run: the DQs, the prompt questions, every reference
    assert presets.get("ambigqa").values("train qd")["dev_tokenizer"] == "ptb"
    assert "--dev-tokenizer [simple|ptb]" in _help("train", "qd")


def test_train_qd_dev_scores_the_annotation_chosen_as_at_training(tmp_path, monkeypatch, tiny_bart):
    """The release evaluates the first of the annotations missing the fewest answers, with its found aliases
    (QGData.py:379-383 @5c8cdb1), not the record's first annotation."""
    import json

    from cqtools.stages.disambiguate import qd_model
    from cqtools.train.qd import QDTrainConfig, dev_edit_f1
    from cqtools.train.spanseqgen import seqgen_tokenizer

    record = {"id": "d", "question": "Who won?", "passages": [{"title": "Cup", "text": "Cy won in 1990, Dee in 1994."}],
              "gold": {"annotations": [
                  {"type": "multipleQAs", "qaPairs": [{"question": "Who won first?", "answer": ["Ann"]},
                                                      {"question": "Who won next?", "answer": ["Bob"]}]},
                  {"type": "multipleQAs", "qaPairs": [{"question": "Who won in 1990?", "answer": ["Zed", "Cy"]},
                                                      {"question": "Who won in 1994?", "answer": ["Dee"]}]}]}}
    dev = tmp_path / "dev.jsonl"
    dev.write_text(json.dumps(record) + "\n")
    asked = []

    class Writer:
        tokenizer = seqgen_tokenizer(tiny_bart)

        def __init__(self, *args):
            pass

        def write(self, jobs):
            asked.extend(jobs)
            return ["Who won in 1990?", "Who won in 1994?"]

    monkeypatch.setattr(qd_model, "TrainedQD", Writer)
    assert dev_edit_f1(QDTrainConfig(train="t", dev=str(dev), model="m", out="o"), "cpu") == {"edit_f1": 1.0, "n": 2}
    assert [(answer, others) for _, answer, others, _ in asked] == [("Cy", ["Dee"]), ("Dee", ["Cy"])]


def test_train_qd_finds_an_alias_as_a_run_of_the_passages_tokens(tiny_bart):
    """QGData.py:295-300 @5c8cdb1: an alias is in the passages when its tokens are a run of theirs; "ann" inside
    "anne" is not (its text is)."""
    from cqtools.train.qd import QDTrainConfig, chosen_annotations
    from cqtools.train.spanseqgen import seqgen_tokenizer

    record = {"id": "r", "question": "Who won?", "passages": [{"title": "Cup", "text": "Anne won, then Cy."}],
              "gold": {"annotations": [
                  {"type": "multipleQAs", "qaPairs": [{"question": "Q a?", "answer": ["Ann"]},
                                                      {"question": "Q c?", "answer": ["Cy"]}]},
                  {"type": "multipleQAs", "qaPairs": [{"question": "Q anne?", "answer": ["Anne"]},
                                                      {"question": "Q cy?", "answer": ["Zed", "Cy"]}]}]}}
    _, chosen = chosen_annotations(record, seqgen_tokenizer(tiny_bart), QDTrainConfig(train="t", dev=None, model="m",
                                                                                       out="o"))
    assert [(pairs[0]["question"], aliases) for pairs, aliases in chosen] == [("Q anne?", ["Anne", "Cy"])]
