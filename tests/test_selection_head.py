"""Issue 55 item 5: DPR's passage-selection head. `cq train reader --selection-head` learns a score per passage
(from [CLS], trained so the passage holding the answer outscores the question's others), saved beside the span
model; `cq answer --span-order select` answers from the passage it selects, as DISAMBIG-FIRST's preset reads.
Also: held-out records' answers in their own passages are never a training span (--unseen and --dev)."""
import json
import os

import orjson
import pytest
import torch

from cqtools.cli import cli
from cqtools.config import RunConfig
from cqtools.errors import ResourceError
from cqtools.stages.answer.extractive import (HEAD_FILE, ExtractiveOptions, ExtractiveReader, load_extractive,
                                              selected_order)
from cqtools.train.span_reader import ReaderTrainConfig, examples_of, gold_aliases
from cqtools.train.span_selection import held_answers, selection_loss

from .conftest import jsonl
from .test_reader_extractive import RECORDS, tiny_qa  # noqa: F401  (fixture)


@pytest.fixture(scope="module")
def with_head(tiny_qa, tmp_path_factory):  # noqa: F811
    """`cq train reader --selection-head` end to end on the tiny model: 30 steps, a few seconds."""
    from click.testing import CliRunner

    work = tmp_path_factory.mktemp("head")
    (work / "train.jsonl").write_text(jsonl(RECORDS))
    out = str(work / "model")
    steps = {"--epochs": "30", "--max-steps": "30", "--batch-size": "2", "--lr": "1e-3", "--max-length": "64"}
    flags = [x for pair in steps.items() for x in pair]
    result = CliRunner().invoke(cli, ["train", "reader", "--train", str(work / "train.jsonl"), "--holdout", "2",
                                      "--model", tiny_qa, "--out", out, *flags, "--seed", "3", "--selection-head"])
    assert result.exit_code == 0, result.output
    return out, orjson.loads(result.stdout)


def test_the_selection_loss_is_low_when_the_answer_passage_wins():
    scores = torch.tensor([3.0, -1.0, 0.0, 2.0, 2.0])
    loss = selection_loss(scores, [[True, False, False], [True, True]])  # the 2nd question has no negative
    assert abs(float(loss) - float(torch.logsumexp(scores[:3], 0) - 3.0)) < 1e-6
    assert float(selection_loss(torch.tensor([-3.0, 1.0]), [[True, False]])) > 4.0


def test_the_head_trains_and_cq_answer_selects_the_passage_by_it(with_head):
    out, report = with_head
    assert report["steps"] == 30 and report["last_loss"] < report["first_loss"]
    saved = json.load(open(os.path.join(out, HEAD_FILE)))
    assert len(saved["weight"]) == 32  # the tiny model's hidden size
    assert json.load(open(os.path.join(out, "cq_train.json")))["config"]["selection_head"] is True
    reader = load_extractive(out, RunConfig(device="cpu"), order="select")
    record = RECORDS[0]
    (answer,) = reader.read([record["question"]], [record["passages"]])[0]
    scores = {s["passage_rank"]: s["selection_score"] for s in reader.spans(record["question"], record["passages"])}
    assert answer["selected"] and answer["passage_rank"] == max(scores, key=lambda r: (scores[r], -r))
    from safetensors.torch import load_file  # the weights file is the plain span model every loader reads

    assert not [k for k in load_file(os.path.join(out, "model.safetensors")) if "cq_selection" in k]


def test_compact_keeps_the_head(with_head, tmp_path):
    from click.testing import CliRunner

    small = str(tmp_path / "small")
    assert CliRunner().invoke(cli, ["train", "compact", with_head[0], "--out", small]).exit_code == 0
    assert json.load(open(os.path.join(small, HEAD_FILE))) == json.load(open(os.path.join(with_head[0], HEAD_FILE)))


def test_disambig_first_reads_with_the_selection_head(with_head):
    """The preset's rows, as the answer stage builds its reader, with --span-order select (the preset's own row
    stays rank while the shipped reader has no head): the head's passage answers first, every passage read."""
    import dataclasses

    from cqtools import presets
    from cqtools.stages.answer.extractive import extractive_reader
    from cqtools.stages.answer.options import ExtractiveReaderOptions

    rows = {**presets.values("disambig-first", "answer"), "span_order": "select"}
    fields = {f.name for f in dataclasses.fields(ExtractiveReaderOptions)}
    options = ExtractiveReaderOptions(model=with_head[0], **{k: v for k, v in rows.items() if k in fields})
    reader = extractive_reader(options, RunConfig(device="cpu"))
    assert reader.head is not None and reader.options.order == "select"
    passages = [p for r in RECORDS[:4] for p in r["passages"]]
    answer = reader.read([RECORDS[2]["question"]], [passages])[0][0]
    spans = reader.spans(RECORDS[2]["question"], passages)
    best = max(spans, key=lambda s: (s["selection_score"], -s["passage_rank"]))
    assert answer["passage_rank"] == best["passage_rank"] and answer["selected"]


def test_select_without_a_head_is_a_one_line_error(tiny_qa):  # noqa: F811
    with pytest.raises(ResourceError, match="--selection-head"):
        load_extractive(tiny_qa, RunConfig(device="cpu"), order="select")


def test_selected_order_puts_the_selected_passage_first():
    spans = [{"text": "a", "score": 5.0, "passage_rank": 0, "selection_score": -1.0},
             {"text": "b", "score": 1.0, "passage_rank": 1, "selection_score": 2.0},
             {"text": "c", "score": 0.5, "passage_rank": 1, "selection_score": 2.0}]
    ordered = selected_order(spans)
    assert [s["text"] for s in ordered] == ["b", "a", "c"]
    assert [s.get("selected", False) for s in ordered] == [True, False, True]


def test_a_held_out_answer_in_its_own_passage_is_never_a_training_span(tiny_qa):  # noqa: F811
    """A training question that retrieves a held-out question's passage and whose answer there is the held-out
    question's answer is not trained on that span; its other passages still teach."""
    from transformers import AutoTokenizer

    held = {**RECORDS[0], "id": "held", "question": "Which playwright wrote Hamlet?"}
    twin = {**RECORDS[0], "passages": RECORDS[0]["passages"] + [{"id": "p9", "title": "Globe", "text": "William "
                                                                 "Shakespeare acted at the Globe."}]}
    tok = AutoTokenizer.from_pretrained(tiny_qa)
    cfg = ReaderTrainConfig(train="x", model="x", out="y", positives=2, negatives=1)
    groups, counts = examples_of([twin], tok, cfg, held_answers([held], 10, gold_aliases))
    assert counts["held_out_answers_skipped"] == 1 and counts["positive"] == 1 and len(groups[0]) == 2
    assert examples_of([twin], tok, cfg)[1]["positive"] == 2


def test_answers_without_a_head_carry_no_selection(tiny_qa):  # noqa: F811
    reader = load_extractive(tiny_qa, RunConfig(device="cpu"))
    assert isinstance(reader, ExtractiveReader) and reader.head is None
    assert ExtractiveOptions().order == "rank"
    found = reader.read([RECORDS[1]["question"]], [RECORDS[1]["passages"]])[0]
    assert found and "selection_score" not in found[0] and "selected" not in found[0]


def test_unseen_records_are_never_trained_on(tmp_path):
    """--unseen FILE (docs/benchmarks/first-contact.md's held-out questions): dropped from --train and
    --more-train by id or question, as --dev's are, and returned with them as the records no span may teach."""
    from cqtools.train.span_reader import _split

    train, dev, unseen = tmp_path / "t.jsonl", tmp_path / "d.jsonl", tmp_path / "u.jsonl"
    train.write_text(jsonl(RECORDS))
    dev.write_text(jsonl(RECORDS[:1]))
    unseen.write_text(jsonl([RECORDS[1], {**RECORDS[2], "id": "new-id"}]))
    kept, held, hidden = _split(ReaderTrainConfig(train=str(train), model="x", out="y", dev=str(dev),
                                                  unseen=str(unseen)))
    assert [r["id"] for r in kept] == [r["id"] for r in RECORDS[3:]]
    assert [r["id"] for r in held] == ["r0"] and [r["id"] for r in hidden] == ["r0", "r1", "new-id"]
    dev.write_text(jsonl(RECORDS[:2]))  # --dev-limit shortens validation, never what is kept out of training
    kept, held, _ = _split(ReaderTrainConfig(train=str(train), model="x", out="y", dev=str(dev), dev_limit=1))
    assert [r["id"] for r in held] == ["r0"] and [r["id"] for r in kept] == [r["id"] for r in RECORDS[2:]]
