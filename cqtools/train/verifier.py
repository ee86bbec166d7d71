"""``cq train verifier``: REFUEL's LM verifier (§2.3, App. A "LM Verification"), a Fusion-in-Decoder seq2seq model
(BART-large in the paper) fine-tuned to generate the answer of a *disambiguated* question from its passages; `cq
answer --verify --verifier-model DIR` scores each (DQ, answer) pair with it (:mod:`cqtools.stages.answer.verifier`).
Trained by the shared loop through :func:`.spanseqgen.fine_tune`, the model read as :mod:`.fid` reads it.

Examples as the release builds them (amzn/refuel-open-domain-qa @159090e: task qa_noamb_aq,
scripts/round_trip/train_verification.sh; DisAmbigQAData, QAData.py:939-955): every gold QA pair of every
annotation, a singleAnswer annotation's being the prompt question with its answers and a multipleQAs one's each
pair's DQ with its answers; the input is that question with each of the record's passages (REFUEL's FiD input),
the target one alias of the pair found in the passages (--discard_not_found_answers=True: a pair with none found is
left out; cq takes the first found, lower-cased as the FiD targets are), cut at 20 tokens (--max_answer_length=20).
"""
from __future__ import annotations

from typing import ClassVar

from dataclasses import dataclass

from ..records import GOLD
from ..registry import option
from ..stages.answer import fid as stage
from ..stages.answer.verifier import TASK
from .fid import FiDTrainConfig, fid_batch_encoder
from .spanseqgen import BASE_MODEL, fine_tune

TARGET_TOKENS = 20  # train_verification.sh: --max_answer_length=20


@dataclass
class VerifierTrainConfig(FiDTrainConfig):
    """Fine-tune REFUEL's LM verifier: a Fusion-in-Decoder model answering gold disambiguated questions.

    Each gold QA pair (a multipleQAs pair's DQ, a singleAnswer's question) is read with each of
    the record's passages (records from `cq retrieve`); the target is its first alias found in
    them. With --dev, keeps the weights with the best dev EM on the gold QA pairs. The directory
    is what `cq answer --verify --verifier-model DIR` scores (DQ, answer) pairs with.
    --preset refuel trains with REFUEL's recipe (BART-large, 100 passages, batch 64, lr 3e-5).

    \b
    Example:
      cq train verifier --train train.ret.jsonl --out models/verifier --passages 10 --max-steps 2000
      cq answer --preset refuel --verifier-model models/verifier < dev.ret.jsonl | cq score --task ambigqa
    """

    command: ClassVar[str] = "verifier"
    run: ClassVar[str] = "cqtools.train.verifier:train_verifier"
    base_model: ClassVar[tuple] = ("train-verifier", BASE_MODEL, "Seq2seq model to fine-tune (REFUEL's: BART-large, "
                                                                 "first trained as its NQ-open reader).")

    max_answer_tokens: int = option(TARGET_TOKENS, "Tokens of a target answer, and generated per question for dev EM "
                                                   "(saved with the model).", min=1)


def gold_pairs(record: dict) -> list[tuple[str, list[str]]]:
    """(question, answer aliases) of each gold QA pair: a singleAnswer annotation's prompt question, each
    multipleQAs pair's DQ (QAData.py:943-955 @159090e)."""
    out = []
    for annotation in (record.get(GOLD) or {}).get("annotations") or []:
        if annotation.get("type") == "singleAnswer":
            out.append((str(record["question"]), list(annotation.get("answer") or [])))
        elif annotation.get("type") == "multipleQAs":
            out += [(p["question"], list(p.get("answer") or [])) for p in annotation.get("qaPairs") or []
                    if p.get("question")]
    return out


def verifier_examples(records: list[dict], tokenizer, cfg: VerifierTrainConfig) -> list[tuple[list, str, dict]]:
    """(one input row per passage, target answer, record) for every gold QA pair with an alias in the passages."""
    out = []
    for record in records:
        for question, aliases in gold_pairs(record):
            rows = stage.fid_inputs(tokenizer, question, record.get("passages") or [], cfg.passages,
                                    cfg.max_passage_input_tokens)
            source = " ".join(tokenizer.decode(row, skip_special_tokens=True) for row in rows).lower()
            found = [a.strip().lower() for a in aliases if a.strip() and a.strip().lower() in source]
            if found:
                out.append((rows, found[0], record))
    return out


def train_verifier(cfg: VerifierTrainConfig) -> dict:
    """Fine-tune the LM verifier; returns the report written to ``cfg.out``/cq_train.json. With ``cfg.dev`` the
    weights kept are the best on dev EM of the gold QA pairs (App. A: "select the best model according to the EM
    score on the dev. set of AMBIGQA")."""
    return fine_tune(cfg, TASK, lambda records, tok: verifier_examples(records, tok, cfg), cfg.max_answer_tokens,
                     "no gold QA pair (gold.annotations) has an answer found in its record's passages; give records "
                     "from `cq convert ambignq` with passages (`cq retrieve`)", wrap=stage.fusion_in_decoder,
                     encoder=fid_batch_encoder, dev=("em", dev_em))


def dev_em(cfg: VerifierTrainConfig, device: str) -> dict:
    """Exact match (SQuAD-normalised) of the answer the saved model generates for each gold QA pair's question of
    the dev records, against that pair's aliases."""
    from ..metrics.normalize import normalize_answer
    from ..stages.answer.seqgen import load_seqgen
    from .loop import load_records

    model, tokenizer, trained = load_seqgen(cfg.out, device, TASK)
    reader = stage.FiDReader(model, tokenizer, trained, stage.FiDOptions(), device, cfg.out)
    pairs = [(q, aliases, r.get("passages") or []) for r in load_records(cfg.dev, cfg.dev_limit)
             for q, aliases in gold_pairs(r) if aliases]
    if not pairs:
        return {"em": None, "n": 0}
    read = reader.read([q for q, _, _ in pairs], [ps for _, _, ps in pairs])
    hits = [bool(got) and normalize_answer(got[0]["text"]) in {normalize_answer(a) for a in aliases}
            for got, (_, aliases, _) in zip(read, pairs)]
    return {"em": sum(hits) / len(hits), "n": len(hits)}
