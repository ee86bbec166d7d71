"""`cq train spanseqgen | qd | fid` (issue 45 item 2): AmbigQA's SpanSeqGen and question-disambiguation model and
REFUEL's Fusion-in-Decoder reader, their inputs and targets as the releases build them; tiny BART / T5 models (random
weights, built from configurations) trained through the shared loop, saved, and read back by `cq answer --reader
seqgen|fid` and `cq disambiguate --method qd --model DIR`; a killed and resumed run equals an uninterrupted one;
--preset ambigqa / refuel give the recipes. CPU only, no hub."""
import json
import os

import orjson
import pytest

from cqtools.cli import cli

from .conftest import FIXTURES, _save_tiny_model, parse_jsonl
from .test_train_resume import Killed, assert_equal_weights, report, with_near_passages


@pytest.fixture(scope="module")
def tiny_bart(tmp_path_factory) -> str:
    """A random 2-layer BART with MiniLM's tokenizer, [CLS]/[SEP] standing for BART's <s>/</s>."""
    from transformers import BartConfig, BartForConditionalGeneration

    out = str(tmp_path_factory.mktemp("tinybart"))

    def build(tok):
        tok.bos_token, tok.eos_token = "[CLS]", "[SEP]"
        return BartForConditionalGeneration(BartConfig(
            vocab_size=len(tok), d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=2,
            decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=1100,
            pad_token_id=tok.pad_token_id, bos_token_id=tok.cls_token_id, eos_token_id=tok.sep_token_id,
            decoder_start_token_id=tok.sep_token_id, forced_eos_token_id=None))

    return _save_tiny_model(out, build)


@pytest.fixture(scope="module")
def with_passages(tmp_path_factory) -> str:
    """The fixture questions, each with the 5 corpus passages sharing most of its words."""
    return with_near_passages(tmp_path_factory.mktemp("seqgen") / "retrieved.jsonl")


def _args(model: str, records: str) -> list[str]:
    return ["train", "spanseqgen", "--model", model, "--train", records, "--batch-size", "4", "--max-steps", "6",
            "--max-input-tokens", "256", "--max-answer-tokens", "12", "--num-beams", "2", "--seed", "5", "--lr", "1e-3"]


def test_the_input_is_ambigqas_layout(tiny_bart):
    """"<s> question?" then each passage's "title SEP text" without its BOS, lower-cased, cut at the budget."""
    from transformers import AutoTokenizer

    from cqtools.stages.answer.seqgen import ambigqa_input, join_answers, split_answers

    tok = AutoTokenizer.from_pretrained(tiny_bart)
    passages = [{"title": "Joker", "text": "Heath Ledger played him."}, {"title": "Batman", "text": "Jack Nicholson."}]
    ids = ambigqa_input(tok, "Who played the Joker", passages)
    assert tok.decode(ids) == ("[CLS] [CLS] who played the joker? [SEP] joker [SEP] heath ledger played him. [SEP] "
                               "batman [SEP] jack nicholson. [SEP]")
    assert len(ambigqa_input(tok, "Who played the Joker", passages * 50, max_tokens=40)) == 40
    assert join_answers(["Heath Ledger", " Jack Nicholson"]) == "heath ledger <SEP> jack nicholson"
    assert split_answers("heath ledger <SEP> jack nicholson <SEP> Heath Ledger") == ["heath ledger", "jack nicholson"]
    assert split_answers("paris <sep> rome") == ["paris", "rome"]  # a lower-casing tokenizer's decoding


def test_targets_are_the_found_aliases_of_each_cluster_combined():
    """One alias a cluster among those found in the input, every combination; clusters with none found are left out,
    and an annotation with none found gives no target."""
    from cqtools.train.spanseqgen import record_targets

    record = {"gold": {"annotations": [
        {"type": "multipleQAs", "qaPairs": [{"answer": ["Heath Ledger", "Ledger"]}, {"answer": ["Jared Leto"]},
                                            {"answer": ["Jack Nicholson"]}]},
        {"type": "singleAnswer", "answer": ["Cesar Romero"]}]}}
    source = "who played the joker? heath ledger ... jack nicholson"
    assert record_targets(record, source) == ["heath ledger <SEP> jack nicholson", "ledger <SEP> jack nicholson"]
    assert record_targets(record, "nothing here") == []


def test_trained_spanseqgen_is_read_by_cq_answer(runner, tmp_path, tiny_bart, with_passages):
    """Train 6 steps, save (the <SEP> token added, the layout and decoding in cq_train.json), then `cq answer`
    loads it with --reader seqgen and with --reader auto, one list of answers per record; a second run gives the
    same weights (seeded)."""
    out = str(tmp_path / "seqgen")
    done = runner.invoke(cli, [*_args(tiny_bart, with_passages), "--dev", with_passages, "--dev-limit", "3",
                               "--out", out, "-q"])
    assert done.exit_code == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["task"] == "spanseqgen" and summary["steps"] == 6 and summary["dev"]["n"] == 3
    saved = report(out)
    assert saved["config"]["input_layout"] == "ambigqa" and saved["config"]["num_beams"] == 2
    with open(os.path.join(out, "tokenizer.json")) as fh:
        assert "<SEP>" in fh.read()
    records = [orjson.loads(line) for line in open(with_passages, "rb")][:4]
    text = b"".join(orjson.dumps(r) + b"\n" for r in records).decode()
    for reader in ("seqgen", "auto"):
        result = runner.invoke(cli, ["answer", "--reader", reader, "--model", out, "--mode", "multi", "-q"], input=text)
        assert result.exit_code == 0, result.stderr
        answered = parse_jsonl(result.stdout)
        assert [r["id"] for r in answered] == [r["id"] for r in records]
        assert all(isinstance(r["answers"], list) for r in answered)
        meta = answered[0]["meta"]["answer"]
        assert meta["reader"] == "seqgen" and meta["input_layout"] == "ambigqa" and meta["num_beams"] == 2
        assert meta["max_new_tokens"] == 12
    # AmbigQA's preset on the answer stage: its beam row reaches the seqgen reader; its prompt-layout rows do not
    result = runner.invoke(cli, ["answer", "--preset", "ambigqa", "--reader", "seqgen", "--model", out, "-q"],
                           input=text)
    assert result.exit_code == 0, result.stderr
    assert parse_jsonl(result.stdout)[0]["meta"]["answer"]["num_beams"] == 4
    again = str(tmp_path / "again")
    assert runner.invoke(cli, [*_args(tiny_bart, with_passages), "--dev", with_passages, "--dev-limit", "3", "--out",
                               again, "-q"]).exit_code == 0
    assert_equal_weights(out, again)


def test_preset_ambigqa_trains_with_ambigqas_recipe(runner, tmp_path, tiny_bart, with_passages):
    """--preset ambigqa fills the recipe (batch 24, lr 5e-6, beam 4, 25 answer tokens, 1,024 input tokens) where
    no flag is given; --model given explicitly wins over its BART-large."""
    out = str(tmp_path / "recipe")
    done = runner.invoke(cli, ["train", "spanseqgen", "--preset", "ambigqa", "--model", tiny_bart, "--train",
                               with_passages, "--max-steps", "1", "--out", out, "-q"])
    assert done.exit_code == 0, done.stderr
    config = report(out)["config"]
    assert {k: config[k] for k in ("batch_size", "lr", "num_beams", "max_answer_tokens", "max_input_tokens",
                                   "input_layout", "model")} == {
        "batch_size": 24, "lr": 5e-6, "num_beams": 4, "max_answer_tokens": 24, "max_input_tokens": 1024,
        "input_layout": "ambigqa", "model": tiny_bart}


def test_records_without_answers_in_their_passages_are_a_one_line_error(runner, tmp_path, tiny_bart):
    result = runner.invoke(cli, [*_args(tiny_bart, str(FIXTURES / "questions.jsonl")), "--out", str(tmp_path / "x")])
    assert result.exit_code != 0 and "Traceback" not in result.output
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("cq train: error: ") and "no record has a gold answer" in last and "cq retrieve" in last


def test_seqgen_reader_without_a_model_or_with_another_is_a_one_line_error(runner, tiny_bart):
    result = runner.invoke(cli, ["answer", "--reader", "seqgen", "-q"], input='{"id": "a", "question": "q?"}\n')
    assert result.exit_code != 0 and "--reader seqgen needs --model DIR" in result.stderr
    result = runner.invoke(cli, ["answer", "--reader", "fid", "--model", tiny_bart, "-q"],
                           input='{"id": "a", "question": "q?", "passages": []}\n')
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert result.stderr.strip().splitlines()[-1].endswith("is not a `cq train` directory; this reader reads what "
                                                           "`cq train fid` writes (train one, or pick the reader of "
                                                           "that model: cq answer --reader auto)")


def test_a_killed_spanseqgen_run_resumed_equals_an_uninterrupted_one(runner, tmp_path, monkeypatch, tiny_bart,
                                                                     with_passages):
    """Killed before step 6 with checkpoints every 2 steps, then --resume: torch.equal weights, same losses."""
    from cqtools.train import loop

    whole, parted = str(tmp_path / "whole"), str(tmp_path / "parted")
    assert runner.invoke(cli, [*_args(tiny_bart, with_passages), "--out", whole, "-q"]).exit_code == 0
    why = loop.Budget.why

    def killed_before_the_last_step(budget, step):
        if step == 5:
            raise Killed("killed before step 6")
        return why(budget, step)

    monkeypatch.setattr(loop.Budget, "why", killed_before_the_last_step)
    first = runner.invoke(cli, [*_args(tiny_bart, with_passages), "--out", parted, "--save-every", "2", "-q"])
    assert isinstance(first.exception, Killed)
    monkeypatch.setattr(loop.Budget, "why", why)
    again = runner.invoke(cli, [*_args(tiny_bart, with_passages), "--out", parted, "--save-every", "2", "--resume",
                                "-q"])
    assert again.exit_code == 0, again.stderr
    assert_equal_weights(whole, parted)
    assert report(parted)["final_loss"] == report(whole)["final_loss"]


# --- AmbigQA's question-disambiguation model (cq train qd, cq disambiguate --method qd --model DIR) ----------------

def test_the_qd_input_is_ambigqas_layout(tiny_bart):
    """BOS BOS answer <SEP> "<s> question?" <SEP> other answer ... then the passages, lower-cased."""
    from cqtools.stages.disambiguate.qd_model import qd_input
    from cqtools.train.spanseqgen import seqgen_tokenizer

    tok = seqgen_tokenizer(tiny_bart)
    ids = qd_input(tok, "Who played the Joker", "Heath Ledger", ["Jack Nicholson", "Jared Leto"],
                   [{"title": "Joker", "text": "Ledger played him."}])
    # (this lower-casing tokenizer stores the added <SEP> as "<sep>")
    assert tok.decode(ids) == ("[CLS] [CLS] heath ledger <sep> [CLS] [CLS] who played the joker? [SEP] <sep> jack "
                               "nicholson <sep> jared leto joker [SEP] ledger played him. [SEP]")


def test_qd_examples_take_the_annotations_missing_fewest_answers(tiny_bart):
    """Each QA pair of the annotation whose answers the passages hold (its tokens a run of theirs, QGData.py:295-300)
    gives one example: its found alias as the target answer, the others' aliases as other answers, its question as
    the target."""
    from cqtools.train.qd import QDTrainConfig, record_examples
    from cqtools.train.spanseqgen import seqgen_tokenizer

    record = {"question": "Who played the Joker?", "passages": [{"title": "Joker", "text": "Ledger and Leto"}],
              "gold": {"annotations": [
                  {"type": "multipleQAs", "qaPairs": [{"question": "Q 1989?", "answer": ["Jack Nicholson"]},
                                                      {"question": "Q 2008?", "answer": ["Heath Ledger", "Ledger"]}]},
                  {"type": "multipleQAs", "qaPairs": [{"question": "Q dark knight?", "answer": ["Heath", "Ledger"]},
                                                      {"question": "Q suicide squad?", "answer": ["Leto"]}]},
                  {"type": "singleAnswer", "answer": ["Ledger"]}]}}
    cfg = QDTrainConfig(train="t", dev=None, model="m", out="o")
    tok = seqgen_tokenizer(tiny_bart)
    examples = record_examples(record, tok, cfg)
    assert [t for _, t, _ in examples] == ["Q dark knight?", "Q suicide squad?"]
    assert "<sep> leto" in tok.decode(examples[0][0]) and tok.decode(examples[0][0]).startswith("[CLS] [CLS] ledger")


def test_trained_qd_is_read_by_cq_disambiguate(runner, tmp_path, tiny_bart, with_passages):
    """Train 4 steps, save, then `cq disambiguate --method qd --model DIR` writes one DQ per predicted answer with
    the trained model (meta: its input layout and beams), the question unchanged for a one-answer record."""
    out = str(tmp_path / "qd")
    done = runner.invoke(cli, ["train", "qd", "--model", tiny_bart, "--train", with_passages, "--batch-size", "4",
                               "--max-steps", "4", "--max-input-tokens", "256", "--num-beams", "2",
                               "--max-question-tokens", "12", "--dev", with_passages, "--dev-limit", "3", "--seed",
                               "5", "--out", out, "-q"])
    assert done.exit_code == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["task"] == "qd" and report(out)["config"]["num_beams"] == 2
    assert summary["dev"]["n"] >= 2 and 0 <= summary["dev"]["edit_f1"] <= 1  # fx01, fx03: 3 pairs each
    records = [orjson.loads(line) for line in open(with_passages, "rb")][:3]
    records[0]["answers"] = [{"text": "Heath Ledger"}, {"text": "Jack Nicholson"}, {"text": "Jared Leto"}]
    records[1]["answers"] = [{"text": "Tolkien"}]
    records[2]["answers"] = [{"text": "England"}, {"text": "South Africa"}]
    text = b"".join(orjson.dumps(r) + b"\n" for r in records).decode()
    result = runner.invoke(cli, ["disambiguate", "--method", "qd", "--model", out, "--duplicates", "keep", "-q"],
                           input=text)
    assert result.exit_code == 0, result.stderr
    written = parse_jsonl(result.stdout)
    assert [[d["answer"] for d in r["dqs"]] for r in written] == [
        ["Heath Ledger", "Jack Nicholson", "Jared Leto"], ["Tolkien"], ["England", "South Africa"]]
    assert written[1]["dqs"][0]["unchanged"] and all(isinstance(d["question"], str) for d in written[0]["dqs"])
    meta = written[0]["meta"]["disambiguate"]
    assert meta["input_layout"] == "ambigqa-trained" and meta["num_beams"] == 2 and meta["model_calls"] == 3
    assert meta["max_new_tokens"] == 12


# --- REFUEL's Fusion-in-Decoder reader (cq train fid, cq answer --reader fid) ---------------------------------------

def test_fusion_in_decoder_over_one_passage_is_the_plain_model(tiny_bart):
    """The wrapper only reshapes: over one passage its loss equals the model's own; over two, the encoder sees each
    apart (the fused states are the two passages' states side by side) and the decoder reads both."""
    import torch
    from transformers import AutoModelForSeq2SeqLM

    from cqtools.stages.answer.fid import fusion_in_decoder, padded

    model = AutoModelForSeq2SeqLM.from_pretrained(tiny_bart).eval()
    fid = fusion_in_decoder(model)
    ids, mask = padded([[[101, 2040, 2001, 102, 7592, 102]]], 0)
    labels = torch.tensor([[101, 7592, 102]])
    with torch.no_grad():
        plain = model(input_ids=ids[:, 0], attention_mask=mask[:, 0], labels=labels).loss
        fused = fid(ids, mask, labels=labels).loss
        assert torch.allclose(plain, fused)
        two, two_mask = padded([[[101, 2040, 102], [101, 7592, 2001, 102]]], 0)
        states, fused_mask = fid.encode(two, two_mask)
        alone = model.get_encoder()(input_ids=two[:, 1], attention_mask=two_mask[:, 1]).last_hidden_state
        assert states.last_hidden_state.shape[1] == 2 * two.shape[2] and fused_mask.shape == (1, 8)
        assert torch.allclose(states.last_hidden_state[:, 4:], alone, atol=1e-6)
        assert fid.generate(two, two_mask, max_new_tokens=3, num_beams=2).shape[0] == 1


@pytest.mark.parametrize("base", ["tiny_bart", "tiny_seq2seq"])
def test_trained_fid_is_read_by_cq_answer(runner, tmp_path, with_passages, base, request):
    """A BART or a T5 trained 4 steps as FiD over 3 passages, then read by `cq answer --reader fid` and --reader
    auto: one answer list per record, the model's decoding in meta."""
    out = str(tmp_path / "fid")
    done = runner.invoke(cli, ["train", "fid", "--model", request.getfixturevalue(base), "--train", with_passages,
                               "--passages", "3", "--batch-size", "4", "--max-steps", "4", "--max-answer-tokens", "10",
                               "--dev", with_passages, "--dev-limit", "2", "--seed", "5", "--out", out, "-q"])
    assert done.exit_code == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["task"] == "fid" and report(out)["config"]["passages"] == 3 and summary["dev"]["n"] == 2
    assert 0 <= summary["dev"]["f1_ans"] <= 1
    records = [orjson.loads(line) for line in open(with_passages, "rb")][:3]
    text = b"".join(orjson.dumps(r) + b"\n" for r in records).decode()
    for reader in ("fid", "auto"):
        result = runner.invoke(cli, ["answer", "--reader", reader, "--model", out, "--mode", "multi", "-q"],
                               input=text)
        assert result.exit_code == 0, result.stderr
        answered = parse_jsonl(result.stdout)
        assert [r["id"] for r in answered] == [r["id"] for r in records]
        assert all(isinstance(r["answers"], list) for r in answered)
        meta = answered[0]["meta"]["answer"]
        assert meta["reader"] == "fid" and meta["passages"] == 3 and meta["max_new_tokens"] == 10
        assert meta["input_layout"] == "refuel-fid" and meta["num_beams"] == 1


def test_preset_refuel_trains_fid_with_refuels_recipe(runner, tmp_path, tiny_bart, with_passages):
    out = str(tmp_path / "recipe")
    done = runner.invoke(cli, ["train", "fid", "--preset", "refuel", "--model", tiny_bart, "--train", with_passages,
                               "--max-steps", "1", "--out", out, "-q"])
    assert done.exit_code == 0, done.stderr
    config = report(out)["config"]
    assert {k: config[k] for k in ("passages", "batch_size", "lr", "epochs", "num_beams", "max_answer_tokens")} == {
        "passages": 100, "batch_size": 64, "lr": 3e-5, "epochs": 30, "num_beams": 1, "max_answer_tokens": 63}


def test_preset_askcq_trains_detect_with_askcqs_recipe(runner, tmp_path, tiny_classifier, with_passages):
    """`cq train detect` already reads "question [SEP] passages"; --preset askcq gives AskCQ's recipe."""
    out = str(tmp_path / "recipe")
    done = runner.invoke(cli, ["train", "detect", "--preset", "askcq", "--model", tiny_classifier, "--train",
                               with_passages, "--holdout", "3", "--max-steps", "1", "--out", out, "-q"])
    assert done.exit_code == 0, done.stderr
    config = report(out)["config"]
    assert {k: config[k] for k in ("passages", "max_length", "batch_size", "lr", "epochs", "eval_every")} == {
        "passages": 100, "max_length": 512, "batch_size": 8, "lr": 1e-5, "epochs": 10, "eval_every": 500}
