"""Issue 48: DISAMBIG-FIRST's step 3 with a per-passage reader. AmbigQA feeds each DQ to DPR (Karpukhin et al.
2020), whose reader reads each retrieved passage in an input of its own and answers from the passage it scores
highest itself. The preset's extractive reader summed one input's budget (512 tokens) over the passages it reads
one at a time, so it read 5-11 of a DQ's 100. It answers from the passage the cross-encoder ranked first: cq's span
reader has no selection head, and the best span over all passages (span_order score) was measured worse
(docs/benchmarks/disambig-first.md)."""
import pytest

from cqtools.stages.answer.extractive import ExtractiveReader, context_of, extractive_reader

from .conftest import _save_tiny_model

QUESTION = "Who played the Joker in 2008?"
# a DQ's 100 passages in the cross-encoder's order, about 65 tokens each; the reader scores passage 60's span highest
PASSAGES = [{"id": f"p{n}", "title": f"Actor {n}", "text": " ".join(["played a part on the stage"] * 10)}
            for n in range(100)]
BEST = "p60"


@pytest.fixture(scope="module")
def tiny_qa(tmp_path_factory) -> str:
    """A random, tiny 2-layer BERT with a span head (as tests/test_reader_extractive.py's; never downloaded)."""
    from transformers import BertConfig, BertForQuestionAnswering

    return _save_tiny_model(str(tmp_path_factory.mktemp("tinyqa")), lambda tok: BertForQuestionAnswering(
        BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                   intermediate_size=64, max_position_embeddings=512)))


@pytest.mark.parametrize("order, answered", [(None, "p0"), ("score", BEST)])
def test_the_presets_reader_reads_every_passage_and_answers_from_the_cross_encoders_first(tiny_qa, order, answered):
    """cq answer --preset disambig-first --reader extractive, its reader as the stage builds it from the preset's
    rows: all 100 passages read (each alone), and the answer is the best span of the passage the cross-encoder
    ranked first (p0), though the reader scores passage 60's span highest; --span-order score takes that one."""
    import dataclasses

    import torch

    from cqtools import presets
    from cqtools.config import RunConfig
    from cqtools.stages.answer.options import ExtractiveReaderOptions

    rows = presets.values("disambig-first", "answer")
    fields = {f.name for f in dataclasses.fields(ExtractiveReaderOptions)}
    rows = {**rows, **({"span_order": order} if order else {})}
    options = ExtractiveReaderOptions(model=tiny_qa, **{k: v for k, v in rows.items() if k in fields})
    built = extractive_reader(options, RunConfig(device="cpu"))
    logits = {}
    for passage in PASSAGES:
        enc = built.tokenizer(QUESTION, context_of(passage), return_offsets_mapping=True)
        in_context = [i for i, s in enumerate(enc.sequence_ids()) if s == 1]
        start, end = torch.full((len(enc["input_ids"]),), -10.0), torch.full((len(enc["input_ids"]),), -10.0)
        start[0] = end[0] = 0.0
        start[in_context[0]] = end[in_context[0]] = 6.0 if passage["id"] == BEST else 2.0
        logits[context_of(passage)] = (start, end, enc["offset_mapping"], in_context)

    class Scored(ExtractiveReader):
        def _logits(self, question, contexts):
            return [logits[c] for c in contexts]

    reader = Scored(built.tokenizer, built.model, {}, built.options)
    read = reader.evidence(QUESTION, PASSAGES)
    assert [p["id"] for p in read] == [p["id"] for p in PASSAGES]  # every one of the 100, not as many as fit 512
    (answers,) = reader.read([QUESTION], [read])
    assert answers[0]["passage_id"] == answered
