"""AskCQ's recipes train what `--preset askcq` later reads (issue 55 item 4): the clarification-based QA reader
trains on each revised question's passages reranked as `cq answer --mode cq` reranks them (DongryeolLee96/AskCQ
@d8be017 CQDataset.py:201-213), README's generator recipe trains with gold answers in the input (the model the
release's predicted-answers runs read, run_cambigqa_inference.sh:36-48), and docs/methods.md's answer-mode row
describes the revision the preset writes. CPU, tiny random models."""
import json
import os
import re
import shlex

import pytest

from cqtools.cli import cli

from .conftest import FIXTURES, ROOT, jsonl
from .conftest_models import tiny_cross_encoder  # noqa: F401
from .fakes import FakeCrossEncoder
from .test_train_paper_models import tiny_bart  # noqa: F401

pytestmark = pytest.mark.heavy(reason="trains tiny BARTs")

PASSAGES = [{"id": f"p{n}", "title": title, "text": text} for n, (title, text) in enumerate([
    ("Batman", "A film about a bat."), ("Joker (2019 film)", "Joaquin Phoenix is the Joker in Joker."),
    ("The Dark Knight", "Heath Ledger is the Joker in The Dark Knight.")])]
GOLD = {"cq": "Which film: The Dark Knight, or Joker?",
        "dqs": [{"question": "q1", "answers": ["Heath Ledger"]}, {"question": "q2", "answers": ["Joaquin Phoenix"]}]}
RECORD = {"id": "r", "question": "Who played the Joker?", "passages": PASSAGES, "gold": GOLD}


def test_the_reader_trains_on_the_passages_cq_answer_reranks_for_each_revised_question(tiny_bart):
    """askcq_examples with a cross-encoder reads, for each option, the passages in the order cq answer --mode cq
    --revised-question askcq reranks them to (one reranker, one query), not the record's order."""
    from cqtools.stages.answer.questions import questions_of, rerank_questions
    from cqtools.stages.answer.seqgen import askcq_input
    from cqtools.train.spanseqgen import SpanSeqGenTrainConfig, askcq_examples, seqgen_tokenizer

    tokenizer = seqgen_tokenizer(tiny_bart)
    cfg = SpanSeqGenTrainConfig(train="-", dev=None, model=tiny_bart, out="-", input_layout="askcq",
                                max_input_tokens=200)
    fake = FakeCrossEncoder()
    examples = askcq_examples([RECORD], tokenizer, cfg, fake)
    asked = questions_of([{**RECORD, "cq": GOLD["cq"]}], "cq", revision="askcq")
    rerank_questions(asked, fake, cfg.rerank_depth, 100, 8)
    assert [q.passages[0]["id"] for q in asked] == ["p2", "p1"]  # each option's own passage first
    assert [ids for ids, _, _ in examples] == [askcq_input(tokenizer, q.text, q.passages, 200) for q in asked]
    assert examples[0][0] != askcq_input(tokenizer, asked[0].text, PASSAGES, 200)  # not the record's order


def test_cq_train_spanseqgen_askcq_reranks_with_the_reranker_it_is_given(runner, tmp_path, tiny_bart,
                                                                         tiny_cross_encoder):
    from cqtools.train import spanseqgen

    train = tmp_path / "train.jsonl"
    train.write_text(jsonl([RECORD, {**RECORD, "id": "s"}]))
    seen = []
    real = spanseqgen.askcq_questions

    def spy(records, cross_encoder=None, depth=100):
        seen.append((None if cross_encoder is None else cross_encoder.info["model"], depth))
        return real(records, cross_encoder, depth)

    for reranker, want in ((tiny_cross_encoder, tiny_cross_encoder), ("none", None)):
        seen.clear()
        out = str(tmp_path / f"m-{want is None}")
        spanseqgen.askcq_questions = spy
        try:
            done = runner.invoke(cli, ["train", "spanseqgen", "--input-layout", "askcq", "--model", tiny_bart,
                                       "--train", str(train), "--dev", str(train), "--out", out, "--reranker",
                                       reranker, "--rerank-depth", "2", "--max-steps", "1", "--batch-size", "2",
                                       "--max-input-tokens", "128", "-q"])
        finally:
            spanseqgen.askcq_questions = real
        assert done.exit_code == 0, done.output
        assert seen == [(want, 2), (want, 2)]  # dev (once, not per evaluation) and train
        with open(os.path.join(out, "cq_train.json")) as fh:
            config = json.load(fh)["config"]
        assert config["reranker"] == reranker and config["rerank_depth"] == 2


def _readme_generator_recipe() -> str:
    text = (ROOT / "README.md").read_text()
    found = re.search(r"GENERATOR_DIR: `(cq train gen-cq [^`]+)`", text)
    assert found, "README's --preset askcq block names no GENERATOR_DIR recipe"
    return found.group(1)


def test_readmes_askcq_generator_recipe_trains_with_gold_answers_in_the_input(runner, tmp_path, tiny_bart):
    """The recipe README gives for the generator `gen-cq --preset askcq --model GENERATOR_DIR` reads: run as written
    (plus a model, data and a one-step budget), it trains on inputs holding the gold answers."""
    from cqtools.presets import get

    recipe = _readme_generator_recipe()
    rows = " ".join(s.differs for s in get("askcq").settings if s.command == "gen-cq")
    assert recipe in rows and recipe in (ROOT / "docs" / "methods.md").read_text()  # methods.md gives the same one
    out = str(tmp_path / "gencq")
    args = shlex.split(recipe)[1:] + ["--model", tiny_bart, "--train", str(FIXTURES / "questions.jsonl"), "--out", out,
                                      "--dev", str(FIXTURES / "questions.jsonl"), "--dev-limit", "2", "--max-steps", "1",
                                      "--batch-size", "2", "--limit", "4", "-q"]
    done = runner.invoke(cli, args)
    assert done.exit_code == 0, done.output
    with open(os.path.join(out, "cq_train.json")) as fh:
        config = json.load(fh)["config"]
    assert config["with_answers"] == "gold" and config["input_layout"] == "askcq"


def test_methods_answer_mode_row_describes_the_revision_the_preset_writes():
    """docs/methods.md's askcq rows (the preset's text): the preset revises as the release does
    (revised_question askcq), so the answer-mode row must not say cq writes its own form under it."""
    from cqtools.presets import get

    rows = {(s.command, s.option): s for s in get("askcq").settings}
    assert rows[("answer", "revised_question")].value == "askcq"
    mode = rows[("answer", "mode")]
    assert not mode.differs, "the preset writes the release's revision: the row no longer differs"
    assert "release's form" in mode.source and "revised_question" in mode.source
    table = (ROOT / "docs" / "methods.md").read_text()
    assert "(in the release's form: the revised_question row)" in table
