"""``cq train fid``: REFUEL's Fusion-in-Decoder answer reader (BART-large in the paper): each of the top passages
encoded with the question on its own, one decoder over all of them generating every answer joined by ``<SEP>``
(:mod:`cqtools.stages.answer.fid`). Trained by the shared loop through :func:`.spanseqgen.fine_tune` (the loop
trains the wrapper; the seq2seq model's own weights are saved); ``cq answer --reader fid --model DIR`` loads it.

Targets as REFUEL builds them (amzn/refuel-open-domain-qa @159090e QAData.py:765-821, --discard_not_found_answers;
:func:`fid_targets`): for each annotation, each answer cluster's aliases found in the passages; for every combination
(one alias a cluster) every order of its answers, at most 500 orders a combination (QAData.py:789-805); an
annotation with more than 100 targets keeps a seeded draw of 100 (QAData.py:807-813). A record's targets are every
annotation's, duplicates kept; each step trains a question on one of them drawn afresh (DataLoader.py:51-61:
``np.random.choice`` over the question's targets; here torch's seeded RNG, which checkpoints carry), cut at 48
tokens (scripts/answer_prediction/train_aq.sh:48); a record with no alias found is left out."""
from __future__ import annotations

import itertools
import random
from dataclasses import dataclass
from typing import ClassVar

from ..records import GOLD
from ..registry import option
from ..stages.answer import fid as stage
from ..stages.answer.seqgen import join_answers
from .settings import TrainConfig, patience_option
from .spanseqgen import BASE_MODEL, dev_scores, draw_targets, fine_tune, found_aliases

TARGET_TOKENS = 48  # train_aq.sh:48 --max_cat_answer_length=48
ORDERS = 500  # QAData.py:804-805: cnt_perm == 500: break (orders of one combination)
PER_ANNOTATION = 100  # QAData.py:808-812: more than 100 targets of an annotation: random.sample 100 of them


@dataclass
class FiDTrainConfig(TrainConfig):
    """Fine-tune REFUEL's Fusion-in-Decoder reader: each passage encoded with the question, one decoder over all.

    The targets are the gold answers found in the passages, joined by <SEP> (records with
    passages, from `cq retrieve`). With --dev, keeps the weights with the best dev F1_ans (scored
    every --eval-every steps); the directory is what
    `cq answer --reader fid` loads.
    --preset refuel trains with REFUEL's recipe (BART-large, 100 passages, batch 64, lr 3e-5).

    \b
    Example:
      cq retrieve --index idx --hits 100 < train.jsonl > train.ret.jsonl
      cq train fid --train train.ret.jsonl --out models/fid --passages 10 --max-steps 2000
      cq retrieve --index idx --hits 100 < dev.jsonl \\
        | cq answer --reader fid --model models/fid --mode multi | cq score --task ambigqa
    """

    command: ClassVar[str] = "fid"
    run: ClassVar[str] = "cqtools.train.fid:train_fid"
    base_model: ClassVar[tuple] = ("train-fid", BASE_MODEL, "Seq2seq model to fine-tune (REFUEL's: BART-large; T5 "
                                                            "works too).")

    passages: int = option(stage.PASSAGES, "Top passages per question, each encoded with the question (REFUEL: "
                                           "100).", min=1)
    max_passage_input_tokens: int = option(stage.PASSAGE_INPUT_TOKENS, "Tokens of one question + passage input, "
                                                                       "saved with the model.", min=16)
    num_beams: int = option(stage.BEAMS, "Beams when cq answer decodes (saved with the model).", min=1)
    max_answer_tokens: int = option(stage.ANSWER_TOKENS, "Tokens generated per question by cq answer (saved with "
                                                         "the model).", min=1)
    patience: int | None = patience_option()


def fid_targets(record: dict, source: str, rng: random.Random) -> list[str]:
    """The targets of one record whose passages decode to ``source`` (lower-cased text), in the release's order
    (QAData.py:765-821): per annotation, the aliases of each cluster found in ``source`` (each once), every order of
    every combination (one alias a cluster; 500 orders at most a combination), a draw of 100 by ``rng`` where an
    annotation has more (``random.sample``, the release's global RNG seeded once, cli.py:434)."""
    out = []
    for annotation in (record.get(GOLD) or {}).get("annotations") or []:
        found = found_aliases(annotation, source)
        if not found:
            continue
        targets = [join_answers(list(order)) for combination in itertools.product(*found)
                   for order in itertools.islice(itertools.permutations(combination), ORDERS)]
        if len(targets) > PER_ANNOTATION:
            targets = [targets[i] for i in rng.sample(range(len(targets)), PER_ANNOTATION)]
        out += targets
    return out


def fid_examples(records: list[dict], tokenizer, cfg: FiDTrainConfig) -> list[tuple[list[list[int]], list[str], dict]]:
    """(one input row per passage, the record's targets, record) for every record with a target (one example a
    question, as the release's dataset has: :func:`fid_batch_encoder` draws its target each time)."""
    out, rng = [], random.Random(cfg.seed)
    for record in records:
        rows = stage.fid_inputs(tokenizer, record["question"], record.get("passages") or [], cfg.passages,
                                cfg.max_passage_input_tokens)
        source = " ".join(tokenizer.decode(row, skip_special_tokens=True) for row in rows).lower()
        targets = fid_targets(record, source, rng)
        if targets:
            out.append((rows, targets, record))
    return out


def fid_batch_encoder(tokenizer, target_tokens: int):
    """examples -> a (batch, passages, length) batch with its labels (-100 on padding), each example's target
    drawn afresh (:func:`draw_targets`)."""
    def encode(items):
        ids, mask = stage.padded([rows for rows, _, _ in items], tokenizer.pad_token_id)
        lab = tokenizer(text_target=draw_targets(items), truncation=True, max_length=target_tokens,
                        padding=True, return_tensors="pt")
        return {"input_ids": ids, "attention_mask": mask,
                "labels": lab.input_ids.masked_fill(lab.attention_mask == 0, -100)}

    return encode


def train_fid(cfg: FiDTrainConfig) -> dict:
    """Fine-tune the Fusion-in-Decoder reader; returns the report written to ``cfg.out``/cq_train.json. With
    ``cfg.dev`` the weights kept are the best on dev F1_ans read as `cq answer --reader fid --mode multi` reads
    (REFUEL keeps its best-model.pt on AmbigQAData's F1: run.py:669-686, QAData.py:624 and 841 @159090e)."""
    return fine_tune(cfg, stage.TASK, lambda records, tok: fid_examples(records, tok, cfg), TARGET_TOKENS,
                     "no record has a gold answer (gold.annotations) found in its passages; give records "
                     "from `cq convert ambignq` with passages (`cq retrieve`)", wrap=stage.fusion_in_decoder,
                     encoder=fid_batch_encoder,
                     dev=("f1_ans", lambda cfg, device: dev_scores(cfg, device, stage.FiDReader, stage.FiDOptions(),
                                                                   stage.TASK)))
