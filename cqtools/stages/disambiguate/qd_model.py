"""AmbigQA's fine-tuned question-disambiguation model (QD) in ``cq disambiguate --method qd --model DIR``, where DIR
is a ``cq train qd`` directory (its cq_train.json's task "qd"): a seq2seq model reading the release's input, no
instruction and no shots, and writing one DQ per predicted answer.

The input (shmsw25/AmbigQA @5c8cdb1 QGData.py:358-366): BOS BOS, the target answer, ``<SEP>``, the question as
SpanSeqGen reads it ("<s> question?", QAData.py:129-141), ``<SEP>`` and each other answer, then the passages
("title SEP text", 128 tokens each, PassageData.py:60-63) in order, all lower-cased but the DQ, cut at 1,024
tokens (QGData.py:237). The DQ is decoded with beam 4 and at most 32 tokens (run.py:271-283, cli.py:73
max_question_length). cq reads the passages in order where the release's loop repeats the first one
(docs/methods.md)."""
from __future__ import annotations

import json
import os

from ...metrics.normalize import normalize_answer
from ...registry import non_default
from ..answer import seqgen
from ..options import CommandSettings
from .parsing import FIRST_REPEATED, clean_question, repeated_first  # noqa: F401  (train/qd.py reads them here)

TASK = "qd"
QUESTION_TOKENS, BEAMS = 32, 4


def is_trained_qd(model: str | None) -> bool:
    """Whether ``model`` is a directory `cq train qd` wrote."""
    try:
        with open(os.path.join(os.path.expanduser(model or ""), "cq_train.json")) as fh:
            return json.load(fh).get("task") == TASK
    except (OSError, ValueError, AttributeError):
        return False


def answer_ids(tokenizer, answer: str) -> list[int]:
    """An answer's own tokens, as "<s> answer" lower-cased gives them less its BOS BOS and EOS (QGData.py:289-294)."""
    bos, _ = seqgen.markers(tokenizer)
    return tokenizer(f"{bos} {answer.strip().lower()}").input_ids[2:-1]


def qd_input(tokenizer, question: str, answer: str, others: list[str], passages: list[dict],
             max_tokens: int = seqgen.INPUT_TOKENS) -> list[int]:
    """The token ids the QD model reads for ``answer`` (QGData.py:358-366)."""
    bos_id = tokenizer.convert_tokens_to_ids(seqgen.markers(tokenizer)[0])
    sep_id = tokenizer.convert_tokens_to_ids(seqgen.SEP)
    ids = [bos_id, bos_id] + answer_ids(tokenizer, answer) + [sep_id] + seqgen.question_ids(tokenizer, question)
    for other in others:
        ids += [sep_id] + answer_ids(tokenizer, other)
    return (ids + seqgen.passage_ids(tokenizer, passages, max_tokens - len(ids)))[:max_tokens]


class TrainedQD:
    """A `cq train qd` model as ``--method qd``'s writer: ``write(jobs)`` gives one DQ per (question, answer,
    other answers, passages)."""

    def __init__(self, path: str, device: str, options):
        self.model, self.tokenizer, trained = seqgen.load_seqgen(path, device, TASK)
        self.path, self.device = path, device
        self.max_input = int(trained.get("max_input_tokens") or seqgen.INPUT_TOKENS)
        # the model's decoding unless the command gave its own (a flag at cq's default reads the model's)
        given = non_default(options, "num_beams", "max_new_tokens")
        self.num_beams = given.get("num_beams") or int(trained.get("num_beams") or BEAMS)
        self.max_new_tokens = given.get("max_new_tokens") or int(trained.get("max_question_tokens") or QUESTION_TOKENS)
        self.passage_order = trained.get("passage_order") or "reranked"  # the passages as it was trained on them

    @property
    def info(self) -> dict:
        return {"model": self.path, "kind": "seq2seq", "input_layout": "ambigqa-trained",
                "max_input_tokens": self.max_input, "num_beams": self.num_beams, "max_new_tokens": self.max_new_tokens,
                **({"passage_order": self.passage_order} if self.passage_order != "reranked" else {})}

    def write(self, jobs: list[tuple[str, str, list[str], list[dict]]], batch_size: int = 8) -> list[str]:
        out = []
        for start in range(0, len(jobs), batch_size):
            out += seqgen.decode_rows(self, [qd_input(self.tokenizer, q, a, others,
                                                      repeated_first(ps, self.passage_order), self.max_input)
                                             for q, a, others, ps in jobs[start:start + batch_size]])
        return out


def trained_qd_batch(records: list[dict], writer: TrainedQD, options, tpl=None) -> list[tuple[list[dict], int]]:
    """(dqs, model calls) per record, as :func:`.qd.qd_batch` gives them (one answer: the question unchanged; an
    echoed or repeated DQ handled by ``options.duplicates``), the DQs written by the trained model."""
    from ...records import PASSAGES, require
    from .parsing import NEED_PASSAGES
    from .qd import distinct_answers, dq_entry

    per_record: list[list[dict]] = [[] for _ in records]
    jobs, owners = [], []
    for n, record in enumerate(records):
        answers = distinct_answers(record)
        if len(answers) == 1 and options.one_answer == "keep":
            per_record[n] = [{"question": record["question"], "answer": answers[0], "unchanged": True}]
            continue
        passages = list(require(record, PASSAGES, NEED_PASSAGES))
        for answer in answers:
            jobs.append((record["question"], answer, [a for a in answers if a != answer], passages))
            owners.append(n)
    calls = [0] * len(records)
    seen: dict[int, set] = {}
    for n, (question, answer, _, passages), generated in zip(owners, jobs, writer.write(jobs) if jobs else []):
        calls[n] += 1
        used = seen.setdefault(n, {normalize_answer(question)})
        per_record[n].append(dq_entry(question, answer, generated, passages, used, options.duplicates))
    return list(zip(per_record, calls))


def trained_qd_writer(options, run, seed: int):
    """``--method qd``'s batch function over a `cq train qd` model (written with ``meta.disambiguate``)."""
    import functools

    from ...models.load import pick_device, set_seed

    set_seed(seed)
    writer = TrainedQD(options.model, pick_device(run.device), options)
    info = {**writer.info, "method": "qd", **non_default(options, "duplicates"), "seed": seed}
    return functools.partial(write_trained, writer=writer, options=options, info=info)


def write_trained(records: list[dict], writer: TrainedQD, options, info: dict) -> list[dict]:
    """``dqs`` and ``meta.disambiguate`` of a batch, written by the trained model."""
    from .parsing import require_questions, write_dqs

    require_questions(records)
    return write_dqs(records, trained_qd_batch(records, writer, options), info)


def qd_disambiguator(options, run, *, seed: int = CommandSettings.seed, **context):
    """The batch function of ``--method qd`` (the registry's factory): a `cq train qd` directory writes the DQs
    itself, from AmbigQA's input; any other model is prompted (:func:`.qd.qd_batch`), an API model given beams
    refused before any record is read. It lives here, beside the trained writer, so qd.py need not import it."""
    from ..options import beam_args
    from .parsing import dq_writer
    from .qd import qd_batch

    if is_trained_qd(options.model):
        return trained_qd_writer(options, run, seed)
    fn = dq_writer(qd_batch, "qd", options, run, seed)
    beam_args(fn.keywords["generator"], options.num_beams)
    return fn
