"""``cq train qd``: AmbigQA's question-disambiguation model, a seq2seq model (BART-large in the paper) fine-tuned to
write the DQ of one answer from "answer <SEP> question <SEP> other answers, passages"
(:func:`cqtools.stages.disambiguate.qd_model.qd_input`). Trained by the shared loop (:mod:`.loop`) through
:func:`.spanseqgen.fine_tune`; the directory is what ``cq disambiguate --method qd --model DIR`` loads.

Examples as the release builds them (shmsw25/AmbigQA @5c8cdb1 QGData.py:305-379: fewest missing 334-341, chosen alias 353, pairs 354-371): for each record with a
multipleQAs annotation, the annotations missing the fewest answers in the passages (an answer is missing when no
alias of its QA pair is found); for each of their QA pairs, the first alias found (else the first alias) is the
target answer, the other pairs' chosen aliases the other answers, the pair's question the target (32 tokens).
"""
from __future__ import annotations

from typing import ClassVar

from dataclasses import dataclass

from ..records import GOLD
from ..registry import option
from ..stages.answer import seqgen
from ..stages.disambiguate import qd_model
from .loop import load_records
from .settings import TrainConfig, patience_option
from .spanseqgen import BASE_MODEL, fine_tune


@dataclass
class QDTrainConfig(TrainConfig):
    """Fine-tune AmbigQA's question-disambiguation model: one DQ per answer of an ambiguous question.

    The input is the answer, the question, the other answers and the passages in AmbigQA's
    layout (records with passages, from `cq retrieve`); the target is the gold DQ of that answer
    (multipleQAs annotations). With --dev, keeps the weights with the best dev EDIT-F1 given the
    gold answers (scored every --eval-every steps). The directory
    is what `cq disambiguate --method qd --model DIR` loads. --preset ambigqa trains with AmbigQA's recipe (BART-large, beam 4).

    \b
    Example:
      cq retrieve --index idx --hits 100 < train.jsonl > train.ret.jsonl
      cq train qd --train train.ret.jsonl --out models/qd --max-steps 2000
      cq answer --reader seqgen --model models/seqgen --mode multi < dev.ret.jsonl \\
        | cq disambiguate --method qd --model models/qd | cq score --task ambigqa
    """

    command: ClassVar[str] = "qd"
    run: ClassVar[str] = "cqtools.train.qd:train_qd"
    base_model: ClassVar[tuple] = ("train-qd", BASE_MODEL, "Seq2seq model to fine-tune (AmbigQA's: BART-large).")
    dev_help: ClassVar[str] = "Dev records: the weights are scored (EDIT-F1) on them and the best kept."

    passages: int | None = option(None, "Top passages in the input [default: as many as fill --max-input-tokens].",
                                  min=1)
    max_input_tokens: int = option(seqgen.INPUT_TOKENS, "Input tokens (answers, question, passages), saved with the "
                                                        "model.", min=16)
    num_beams: int = option(qd_model.BEAMS, "Beams when cq disambiguate decodes (saved with the model).", min=1)
    max_question_tokens: int = option(qd_model.QUESTION_TOKENS, "Tokens of a target DQ, and generated per DQ by cq "
                                                                "disambiguate (saved with the model).", min=4)
    passage_order: str = option("reranked", "Passages in the input: reranked (the records' order, as the paper's "
                                            "§5) or first-repeated (the first one over and over, as AmbigQA's released "
                                            "QD input, QGData.py:316-322); saved with the model.",
                                choices=("reranked", qd_model.FIRST_REPEATED))
    dev_tokenizer: str = option("simple", "How dev EDIT-F1 splits words: simple (a regex, no Java) or ptb (the "
                                          "official scorer's PTB tokenizer, Java in a subprocess at each evaluation, "
                                          "as AmbigQA's QGData.py:444 and `cq score --task ambigqa`).",
                                choices=("simple", "ptb"))
    patience: int | None = patience_option()


def _found(aliases: list[str], tokenizer, source: list[int]) -> list[str]:
    """The aliases whose tokens (:func:`qd_model.answer_ids`) are a run of ``source``'s, as QGData.py:295-300."""
    def held(tokens: list[int]) -> bool:
        return any(source[i:i + len(tokens)] == tokens for i in range(len(source) - len(tokens) + 1))

    return [a for a in aliases if a.strip() and held(qd_model.answer_ids(tokenizer, a))]


def chosen_annotations(record: dict, tokenizer, cfg: QDTrainConfig) -> tuple[list[dict], list[tuple[list, list]]]:
    """(the passages the input holds, [(QA pairs, the alias chosen for each: its first found in the passages, else
    its first)] of the record's multipleQAs annotations missing the fewest answers), as QGData.py:324-372 @5c8cdb1
    chooses them."""
    passages = qd_model.repeated_first((record.get("passages") or [])[:cfg.passages], cfg.passage_order)
    source = seqgen.passage_ids(tokenizer, passages, cfg.max_input_tokens)
    annotations = [a for a in (record.get(GOLD) or {}).get("annotations") or [] if a.get("type") == "multipleQAs"]
    scored = []
    for annotation in annotations:
        pairs = [p for p in annotation.get("qaPairs") or [] if p.get("answer") and p.get("question")]
        if len(pairs) < 2:
            continue
        found = [_found(p["answer"], tokenizer, source) for p in pairs]
        chosen = [(held or p["answer"])[0] for held, p in zip(found, pairs)]
        scored.append((sum(not held for held in found), pairs, chosen))
    fewest = min((missing for missing, _, _ in scored), default=None)
    return passages, [(pairs, chosen) for missing, pairs, chosen in scored if missing == fewest]


def record_examples(record: dict, tokenizer, cfg: QDTrainConfig) -> list[tuple[list[int], str, dict]]:
    """(input ids, target DQ, record) for each QA pair of the record's annotations missing the fewest answers."""
    passages, annotations = chosen_annotations(record, tokenizer, cfg)
    out = []
    for pairs, chosen in annotations:
        for i, pair in enumerate(pairs):
            ids = qd_model.qd_input(tokenizer, record["question"], chosen[i], chosen[:i] + chosen[i + 1:], passages,
                                    cfg.max_input_tokens)
            out.append((ids, pair["question"].strip(), record))
    return out


def train_qd(cfg: QDTrainConfig) -> dict:
    """Fine-tune the QD model; returns the report written to ``cfg.out``/cq_train.json. With ``cfg.dev`` the
    weights kept are the best on dev EDIT-F1, AmbigQA's QD metric (QGData.py:211 @5c8cdb1, chosen at
    run.py:166-174)."""
    return fine_tune(cfg, qd_model.TASK, lambda records, tok: [e for r in records for e in record_examples(r, tok, cfg)],
                     cfg.max_question_tokens,
                     "no record has a multipleQAs annotation with 2 or more QA pairs (gold.annotations); "
                     "give records from `cq convert ambignq` with passages (`cq retrieve`)", dev=("edit_f1", dev_edit_f1))


def _words(text: str) -> str:
    import re

    return " ".join(re.findall(r"\w+|[^\w\s]", text.lower()))


def dev_edit_f1(cfg: QDTrainConfig, device: str) -> dict:
    """EDIT-F1 (AmbigQA §3) of the DQs the saved model writes for the gold answers of each dev record's annotation
    chosen as at training (:func:`chosen_annotations`: the first of those missing the fewest answers, its chosen
    aliases, as QGData.py:379-383 @5c8cdb1 evaluates), against each pair's DQ (each of its "|" variants, as
    QGData.py:199 reads them); words split as ``cfg.dev_tokenizer`` says (ptb: the official scorer's, then
    normalised, as QGData.py:444-460 and `cq score --task ambigqa`)."""
    from ..metrics.ambigqa import edit_f1
    from ..stages.disambiguate.qd import QdOptions

    writer = qd_model.TrainedQD(cfg.out, device, QdOptions())
    jobs, golds = [], []
    for record in load_records(cfg.dev, cfg.dev_limit):
        passages, annotations = chosen_annotations(record, writer.tokenizer, cfg)
        if not annotations:
            continue
        pairs, answers = annotations[0]
        for i, pair in enumerate(pairs):
            jobs.append((record["question"], answers[i], answers[:i] + answers[i + 1:], passages))
            golds.append([q.strip() for q in pair["question"].split("|") if q.strip()] or [pair["question"]])
    if not jobs:
        return {"edit_f1": None, "n": 0}
    if cfg.dev_tokenizer == "ptb":
        from ..score.tokenizers import make_tokenizer

        tokenize = make_tokenizer("ptb")  # one Java run for every text of this evaluation
    else:
        def tokenize(texts: list[str]) -> list[str]:
            return [_words(text) for text in texts]
    n, refs = len(jobs), [ref for gold in golds for ref in gold]
    words = iter(tokenize([*writer.write(jobs), *(question for question, _, _, _ in jobs), *refs]))
    dqs, questions = [next(words) for _ in range(n)], [next(words) for _ in range(n)]
    scores = [edit_f1(dq, [next(words) for _ in gold], question) for dq, question, gold in zip(dqs, questions, golds)]
    return {"edit_f1": sum(scores) / len(scores), "n": len(scores)}
