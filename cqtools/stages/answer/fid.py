"""REFUEL's Fusion-in-Decoder reader (``cq answer --reader fid --model DIR``): each passage is encoded with the
question on its own, the encoder outputs are concatenated, and one decoder reads them all and generates every
answer as one sequence joined by ``<SEP>`` (REFUEL §3.1, Izacard and Grave 2020). A thin wrapper over a
transformers encoder-decoder model (:func:`fusion_in_decoder`): the (batch x passages, length) inputs go through
its encoder, the hidden states are reshaped to (batch, passages x length) and handed to the model as
``encoder_outputs``. ``cq train fid`` (:mod:`cqtools.train.fid`) writes such a model.

The input of one passage is REFUEL's (amzn/refuel-open-domain-qa @159090e QAData.py:704-717): the question as
SpanSeqGen reads it ("<s> question?", 32 tokens) then the passage's "title SEP text" without its BOS (128
tokens), 160 tokens at most; the top ``passages`` of the record (REFUEL: 100, QAData.py:725).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

from ...registry import option
from . import seqgen

TASK = "fid"
PASSAGE_INPUT_TOKENS = 160  # QAData.py:715 @159090e: 32 + 128
PASSAGES, BEAMS, ANSWER_TOKENS = 10, 1, 64  # cq's passages; REFUEL's greedy decoding of 64 tokens (run.py:1015-1018)


def fid_inputs(tokenizer, question: str, passages: list[dict], n_passages: int | None,
               max_tokens: int = PASSAGE_INPUT_TOKENS) -> list[list[int]]:
    """One token-id row per passage (the question alone when there is none): question, then the passage."""
    question_ids = seqgen.question_ids(tokenizer, question)
    shown = list(passages[:n_passages]) if n_passages else list(passages)
    if not shown:
        return [question_ids[:max_tokens]]
    return [(question_ids + seqgen.passage_ids(tokenizer, [p], 1))[:max_tokens] for p in shown]


def padded(rows_per_item: list[list[list[int]]], pad: int):
    """(input_ids, attention_mask) of shape (items, passages, length): rows padded with ``pad``, items with fewer
    passages padded with empty (fully masked) passages."""
    import torch

    n = max(len(rows) for rows in rows_per_item)
    width = max(len(r) for rows in rows_per_item for r in rows)
    ids = torch.full((len(rows_per_item), n, width), pad, dtype=torch.long)
    mask = torch.zeros((len(rows_per_item), n, width), dtype=torch.long)
    for i, rows in enumerate(rows_per_item):
        for j, row in enumerate(rows):
            ids[i, j, :len(row)] = torch.tensor(row)
            mask[i, j, :len(row)] = 1
    return ids, mask


@functools.lru_cache(maxsize=None)
def _wrapper_class():
    import torch
    from transformers.modeling_outputs import BaseModelOutput

    class FusionInDecoder(torch.nn.Module):
        """A seq2seq model read Fusion-in-Decoder style; its weights are the wrapped model's (``.model``)."""

        def __init__(self, model):
            super().__init__()
            self.model = model

        def encode(self, input_ids, attention_mask):
            batch, passages, length = input_ids.shape
            hidden = self.model.get_encoder()(input_ids=input_ids.reshape(batch * passages, length),
                                              attention_mask=attention_mask.reshape(batch * passages, length))
            fused = hidden.last_hidden_state.reshape(batch, passages * length, -1)
            return BaseModelOutput(last_hidden_state=fused), attention_mask.reshape(batch, passages * length)

        def forward(self, input_ids, attention_mask, labels=None):
            encoded, mask = self.encode(input_ids, attention_mask)
            return self.model(encoder_outputs=encoded, attention_mask=mask, labels=labels)

        def generate(self, input_ids, attention_mask, **settings):
            encoded, mask = self.encode(input_ids, attention_mask)
            return self.model.generate(encoder_outputs=encoded, attention_mask=mask, **settings)

    return FusionInDecoder


def fusion_in_decoder(model):
    """``model`` (a transformers encoder-decoder) wrapped to read each passage apart and decode over all."""
    return _wrapper_class()(model)


@dataclass(frozen=True)
class FiDOptions(seqgen.SeqGenOptions):
    """a Fusion-in-Decoder model from `cq train fid` (--model DIR): each passage encoded with the question, every answer generated as one sequence"""

    model: str | None = option(None, "a `cq train fid` directory")
    n_passages: int | None = option(None, "top passages read per question, each encoded apart [default: the "
                                                 "model's, 100 in REFUEL's recipe]", min=1)
    num_beams: int | None = option(None, "beams [default: the model's; REFUEL's is greedy]", min=1)
    max_new_tokens: int | None = option(None, "tokens generated per question [default: the model's, 64 in "
                                                     "REFUEL's recipe]", min=1)


class FiDReader(seqgen.SeqGenReader):
    """Reads with a `cq train fid` model: the passages encoded apart, one answer sequence per question."""

    name = "fid"

    def __init__(self, model, tokenizer, trained: dict, options: FiDOptions, device: str, path: str,
                 batch_size: int | None = None):
        super().__init__(model, tokenizer, {**trained, "input_layout": "ambigqa"}, options, device, path, batch_size)
        self.fid = fusion_in_decoder(model)
        self.layout = "refuel-fid"
        self.n_passages = options.n_passages or trained.get("passages") or PASSAGES
        self.max_input = int(trained.get("max_passage_input_tokens") or PASSAGE_INPUT_TOKENS)
        self.num_beams = options.num_beams or int(trained.get("num_beams") or BEAMS)
        self.max_new_tokens = options.max_new_tokens or int(trained.get("max_answer_tokens") or ANSWER_TOKENS)

    def generate(self, questions: list[str], passages: list[list[dict]]) -> list[str]:
        import torch

        out = []
        for start in range(0, len(questions), self.batch_size):
            rows = [fid_inputs(self.tokenizer, q, ps, self.n_passages, self.max_input)
                    for q, ps in zip(questions[start:start + self.batch_size], passages[start:start + self.batch_size])]
            ids, mask = padded(rows, self.tokenizer.pad_token_id)
            with torch.no_grad():
                made = self.fid.generate(ids.to(self.device), mask.to(self.device), num_beams=self.num_beams,
                                         max_new_tokens=self.max_new_tokens, early_stopping=True)
            out += self.tokenizer.batch_decode(made, skip_special_tokens=True)
        return out


def fid_reader(options: FiDOptions, config, batch_size: int | None = None) -> FiDReader:
    """The registered factory of ``cq answer --reader fid``."""
    from ...errors import InputError
    from ...models.load import pick_device

    if not options.model:
        raise InputError("--reader fid needs --model DIR (a `cq train fid` directory)")
    model, tokenizer, trained = seqgen.load_seqgen(options.model, pick_device(config.device), TASK)
    return FiDReader(model, tokenizer, trained, options, str(model.device), options.model, batch_size)
