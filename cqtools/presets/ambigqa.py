"""AmbigQA (Min et al., EMNLP 2020): SpanSeqGen multiple answers, then question disambiguation,
and the DISAMBIG-FIRST baseline, as the paper and the released code (shmsw25/AmbigQA @5c8cdb1) run them."""
from __future__ import annotations

from .base import Preset, Setting  # noqa: F401

CODE = "shmsw25/AmbigQA @5c8cdb1"
PAPER = "../shared/papers/ambigqa.txt (Min, Michael, Hajishirzi, Zettlemoyer, EMNLP 2020)"

AMBIGQA = Preset(
    name='ambigqa',
    help='AmbigQA: answers read from reranked passages up to 1,024 tokens, one DQ per answer conditioned on the question, that answer, the other answers and the passages in reranked order',
    paper=PAPER,
    code=CODE,
    settings=(
        # --- retrieve / rerank ---

        # --- detect ---

        # --- answer ---
        Setting("answer", "mode", "multi", "§5 (SpanSeqGen): the distinct answers, separated by [SEP]",
                "an LM prompted for a list instead of BART fine-tuned on NQ-open, then AmbigNQ",
                setting="answer mode"),
        Setting("answer", "max_passage_tokens", 1024, "§5: the question and the top passages in order up to 1,024 "
                "tokens; codes/QAData.py:212-227 @5c8cdb1",
                "counted with the reader's tokenizer, not BART's; the release cuts the last passage at token 1,024, cq "
                "stops before the first passage that does not fit (cqtools/stages/evidence.py)",
                setting="evidence budget (tokens)"),
        Setting("answer", "passage_chars", 0, "codes/QAData.py:218-224 @5c8cdb1: passages are concatenated whole",
                setting="passage text shown"),

        # --- disambiguate ---

        # --- gen-cq ---

        # --- score ---

    ),
    departures=(
    ),
)

DISAMBIG_FIRST = Preset(
    name='disambig-first',
    help="AmbigQA's DISAMBIG-FIRST baseline: the ambiguity classifier decides, DQs are written without passages, each DQ is answered by retrieval QA",
    paper=PAPER,
    code=CODE,
    settings=(
        # --- retrieve / rerank ---

        # --- detect ---

        # --- answer ---
        Setting("answer", "mode", "dqs", "§6.1 DISAMBIG-FIRST, step (3): each DQ is answered by a state-of-the-art "
                "NQ-open model (Karpukhin et al. 2020): retrieval, then a reader",
                "cq's reader (the installed extractive one, or --reader/--model) reads the DQ's passages reranked "
                "by the cross-encoder; DPR's reader selects among them itself", setting="answer mode"),
        Setting("answer", "retriever", "dense", "§5, §6.1: DPR's dense retriever",
                "cq's dense searcher over the user's index (cq index --dense; its encoder, not DPR's NQ model)",
                setting="retrieval per DQ"),
        Setting("answer", "hits", 100, "§5: 100 passages retrieved per question", setting="passages retrieved per DQ"),

        # --- disambiguate ---

        # --- gen-cq ---

        # --- score ---

    ),
    departures=(
    ),
)

PRESETS = (AMBIGQA, DISAMBIG_FIRST,)
