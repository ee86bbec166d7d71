"""AmbigQA's SpanSeqGen reader (``cq answer --reader seqgen --model DIR``): a seq2seq model (BART in the paper)
that reads the question and the passages and generates every answer as one sequence, the answers joined by a
separator token. ``cq train spanseqgen`` (:mod:`cqtools.train.spanseqgen`) writes such a model; the input
layout, the separator and the decoding it was trained for are read back from its ``cq_train.json``.

The ``ambigqa`` layout is the release's (shmsw25/AmbigQA @5c8cdb1): question, passages and answers lower-cased
(cli.py:69 ``--do_lowercase`` default True; QAData.py:133-135; PassageData.py:36-37); the question with "?"
appended and an extra BOS, at most 32 tokens (QAData.py:129-141: ``"<s> " + question``); then each passage as
"title SEP text" cut at 128 tokens (PassageData.py:60-63: ``title + " " + sep_token + " " + passage``) without
its BOS, appended in order while the input is under 1,024 tokens, cut there (QAData.py:592-596, 655). Answers
are joined by ``<SEP>``, a token added to the tokenizer (run.py:25 ``tokenizer.add_tokens(["<SEP>"])``;
QAData.py:492, 639) and split on it (QAData.py:670).
"""
from __future__ import annotations

from dataclasses import dataclass

from ...errors import InputError, ResourceError
from ...records import distinct_texts
from ...registry import option

SEP = "<SEP>"
TASK = "spanseqgen"  # cq_train.json's "task" for a model this reader loads
LAYOUTS = ("ambigqa", "askcq")
# The release's sizes (@5c8cdb1: question 32 tokens, QAData.py:141; passages 128, PassageData.py:63; input 1,024,
# QAData.py:592; run.py:279-283 num_beams=4, early_stopping; codes/README.md:198 --max_answer_length 25 on AmbigQA).
QUESTION_TOKENS, PASSAGE_TOKENS, INPUT_TOKENS, ANSWER_TOKENS, BEAMS = 32, 128, 1024, 25, 4


def markers(tokenizer) -> tuple[str, str]:
    """(BOS, passage separator) as text: BART's ``<s>`` and ``</s>``; a tokenizer without them (BERT's) uses
    its [CLS] and [SEP]. A tokenizer with neither is a one-line error."""
    bos = tokenizer.bos_token or tokenizer.cls_token
    sep = tokenizer.sep_token or tokenizer.eos_token
    if bos is None or sep is None:
        raise ResourceError(f"the ambigqa input layout needs a tokenizer with a BOS (or CLS) and a SEP (or EOS) token; "
                            f"{type(tokenizer).__name__} has {'no BOS' if bos is None else 'no SEP'} (use BART's)")
    return bos, sep


def ambigqa_input(tokenizer, question: str, passages: list[dict], max_tokens: int = INPUT_TOKENS) -> list[int]:
    """The token ids SpanSeqGen reads: "<s> question?" (32 tokens at most), then "title SEP text" of each passage
    (128 tokens, its BOS dropped) while the input is shorter than ``max_tokens``, cut at ``max_tokens``."""
    ids = question_ids(tokenizer, question)
    return (ids + passage_ids(tokenizer, passages, max_tokens - len(ids)))[:max_tokens]


def askcq_input(tokenizer, question: str, passages: list[dict], max_tokens: int = INPUT_TOKENS) -> list[int]:
    """The token ids AskCQ's clarification-based QA reader reads (CQDataset.py:252-277 @d8be017): the question as
    written (AskCQ's "AQ revised by CQ", not lower-cased), then each passage encoded whole ("title SEP text": cq's
    passage; the release decodes AmbigQA's tokenized passages) followed by a SEP, cut at ``max_tokens``."""
    _, sep = markers(tokenizer)
    ids = list(tokenizer(question.strip()).input_ids)
    for passage in passages:
        if len(ids) >= max_tokens:
            break
        ids += tokenizer(f"{passage.get('title') or ''} {sep} {passage.get('text') or ''}").input_ids
        ids.append(tokenizer.convert_tokens_to_ids(sep))
    return ids[:max_tokens]


def layout_input(layout: str, tokenizer, question: str, passages: list[dict], max_tokens: int) -> list[int]:
    """The input of ``layout`` (LAYOUTS): AmbigQA's SpanSeqGen's or AskCQ's clarification-based QA's."""
    return (askcq_input if layout == "askcq" else ambigqa_input)(tokenizer, question, passages, max_tokens)


def question_ids(tokenizer, question: str) -> list[int]:
    """"<s> question?" lower-cased, 32 tokens at most: BOS, BOS, the question, EOS (QAData.py:129-141)."""
    bos, _ = markers(tokenizer)
    question = question.strip()
    question = (question if question.endswith("?") else question + "?").lower()
    return tokenizer(f"{bos} {question}", max_length=QUESTION_TOKENS, truncation=True).input_ids


def passage_ids(tokenizer, passages: list[dict], room: int) -> list[int]:
    """Each passage's "title SEP text" (lower-cased, 128 tokens, its BOS dropped) in order while fewer than ``room``
    tokens are taken (the last one may run past ``room``: the caller cuts)."""
    _, sep = markers(tokenizer)
    ids: list[int] = []
    for passage in passages:
        if len(ids) >= room:
            break
        text = f"{(passage.get('title') or '').lower()} {sep} {(passage.get('text') or '').lower()}"
        ids += tokenizer(text, max_length=PASSAGE_TOKENS, truncation=True).input_ids[1:]
    return ids


def join_answers(answers: list[str]) -> str:
    """The target sequence: the answers (lower-cased, as the release's) joined by " <SEP> "."""
    return f" {SEP} ".join(a.strip().lower() for a in answers)


def split_answers(text: str) -> list[str]:
    """The distinct answers of a generated sequence (QAData.py:670 @5c8cdb1: split on <SEP>, stripped, duplicates
    dropped)."""
    import re

    # case-blind: a lower-casing tokenizer (BERT's) stores the added token as "<sep>"
    return distinct_texts(t.strip() for t in re.split(re.escape(SEP), text, flags=re.IGNORECASE))


@dataclass(frozen=True)
class SeqGenOptions:
    """a SpanSeqGen model from `cq train spanseqgen` (--model DIR): every answer generated as one sequence"""

    model: str | None = option(None, "a `cq train spanseqgen` directory")
    n_passages: int | None = option(None, "top passages read per question [default: as many as fill the input the "
                                          "model was trained on]", min=1)
    num_beams: int | None = option(None, "beams [default: the model's recipe, 4 for AmbigQA's]", min=1)
    max_new_tokens: int | None = option(None, "tokens generated per question [default: the model's recipe, 25 for "
                                              "AmbigQA's]", min=1)


class SeqGenReader:
    """Reads with a SpanSeqGen model: one generated sequence per question, split into its answers (single mode:
    the first one)."""

    name = "seqgen"

    def __init__(self, model, tokenizer, trained: dict, options: SeqGenOptions, device: str, path: str,
                 batch_size: int | None = None):
        self.model, self.tokenizer, self.device, self.path = model, tokenizer, device, path
        self.layout = trained.get("input_layout") or "ambigqa"
        if self.layout not in LAYOUTS:
            raise ResourceError(f"{path} was trained on input layout {self.layout!r}, which this cq does not know "
                                f"({', '.join(LAYOUTS)}); retrain it with `cq train spanseqgen`")
        self.max_input = int(trained.get("max_input_tokens") or INPUT_TOKENS)
        self.n_passages = options.n_passages or trained.get("passages")  # None: as many as fill the input
        self.num_beams = options.num_beams or int(trained.get("num_beams") or BEAMS)
        self.max_new_tokens = options.max_new_tokens or int(trained.get("max_answer_tokens") or ANSWER_TOKENS)
        self.batch_size = batch_size or 8

    @property
    def info(self) -> dict:
        return {"model": self.path, "kind": "seq2seq"}

    @property
    def params(self) -> dict:
        return {"input_layout": self.layout, "passages": self.n_passages, "max_input_tokens": self.max_input,
                "num_beams": self.num_beams, "max_new_tokens": self.max_new_tokens}

    def generate(self, questions: list[str], passages: list[list[dict]]) -> list[str]:
        """The generated sequence of each question (special tokens dropped, the separator kept)."""
        out = []
        for start in range(0, len(questions), self.batch_size):
            rows = [layout_input(self.layout, self.tokenizer, q, ps[:self.n_passages], self.max_input)
                    for q, ps in zip(questions[start:start + self.batch_size], passages[start:start + self.batch_size])]
            out += decode_rows(self, rows)
        return out

    def read(self, questions: list[str], passages: list[list[dict]], multi: bool = False) -> list[list[dict]]:
        """Answers ``{text, grounding: "none", generated}`` per question: every answer of the sequence in multi mode,
        its first one otherwise (an empty sequence: no answer)."""
        out = []
        for raw in self.generate(questions, passages):
            texts = split_answers(raw)
            out.append([{"text": t, "grounding": "none", "generated": raw} for t in (texts if multi else texts[:1])])
        return out


def load_seqgen(path: str, device: str, task: str = TASK):
    """(model, tokenizer, its cq_train.json config) of a `cq train <task>` directory (spanseqgen, fid, qd); another
    directory is a one-line error."""
    import os

    from ...models.roles import trained_config

    found = trained_task(path) if os.path.isdir(os.path.expanduser(path)) else None
    if found != task:
        what = f"a `cq train {found}` directory" if found else "not a `cq train` directory"
        raise InputError(f"--model {path} is {what}; this reader reads what `cq train {task}` writes (train one, or "
                         f"pick the reader of that model: cq answer --reader auto)")
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    path = os.path.expanduser(path)
    model = AutoModelForSeq2SeqLM.from_pretrained(path).to(device).eval()
    return model, AutoTokenizer.from_pretrained(path), trained_config(path)


def seqgen_reader(options: SeqGenOptions, config, batch_size: int | None = None) -> SeqGenReader:
    """The registered factory of ``cq answer --reader seqgen``."""
    if not options.model:
        raise InputError("--reader seqgen needs --model DIR (a `cq train spanseqgen` directory)")
    from ...models.load import pick_device

    model, tokenizer, trained = load_seqgen(options.model, pick_device(config.device))
    return SeqGenReader(model, tokenizer, trained, options, str(model.device), options.model, batch_size)


def trained_task(path: str) -> str | None:
    """The ``task`` of the cq_train.json in ``path`` (a `cq train` directory), else None."""
    import json
    import os

    try:
        with open(os.path.join(os.path.expanduser(path), "cq_train.json")) as fh:
            return json.load(fh).get("task")
    except (OSError, ValueError, AttributeError):
        return None


# The reader of each `cq train` task whose model `cq answer --reader auto` recognises.
READER_OF_TASK = {TASK: "seqgen", "fid": "fid"}


def decode_rows(reader, rows: list[list[int]]) -> list[str]:
    """``reader``'s model (a trained seq2seq: ``model``, ``tokenizer``, ``device``, ``num_beams``,
    ``max_new_tokens``) decoding token-id rows padded into one batch, special tokens dropped."""
    import torch

    pad, width = reader.tokenizer.pad_token_id, max(map(len, rows))
    ids = torch.tensor([r + [pad] * (width - len(r)) for r in rows], device=reader.device)
    mask = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in rows], device=reader.device)
    with torch.no_grad():
        made = reader.model.generate(input_ids=ids, attention_mask=mask, num_beams=reader.num_beams,
                                     max_new_tokens=reader.max_new_tokens, early_stopping=True)
    return reader.tokenizer.batch_decode(made, skip_special_tokens=True)
