"""AskCQ / CAmbigNQ (Lee et al., EMNLP 2023): ambiguity detection with passages, CQ generation from the
question, the answers (Pred-Answers / Gold-Answers) and the passages, and clarification-based QA, as the
paper and the released code (DongryeolLee96/AskCQ @d8be017) run them."""
from __future__ import annotations

from .base import Preset, Setting  # noqa: F401

CODE = "DongryeolLee96/AskCQ @d8be017"
PAPER = "../shared/papers/askcq-cambignq.txt (Lee, Kim, Kwiatkowski, Hwang, EMNLP 2023)"

ASKCQ = Preset(
    name='askcq',
    help="AskCQ: a classifier reading the question with its passages, CQs from the question, answers and passages (beam 4, 32 tokens) in the 'A, or B' form, each option answered over every retrieved passage",
    paper=PAPER,
    code=CODE,
    settings=(
        # --- retrieve / rerank ---

        # --- detect ---

        # --- answer ---
        Setting("answer", "mode", "cq", "§5.3 (CBQA): one answer per option of the CQ, for the AQ revised by the CQ",
                "cq revises as \"AQ, Which category: option\"; the release writes \"AQ category option?\" "
                "(CQDataset.py:249 @d8be017)", setting="answer mode"),
        Setting("answer", "rerank_depth", 100, "CQDataset.py:250-264 @d8be017: each revised question reranks all "
                "100 retrieved passages with cross-encoder/ms-marco-MiniLM-L-12-v2 (CQDataset.py:9)",
                "keep 100 passages on the record (cq retrieve --hits 100, no cq rerank --top)",
                setting="passages reranked per option"),
        Setting("answer", "max_passage_tokens", 1024, "CQDataset.py:265-272 and run_cambigqa_inference.sh "
                "(max_token_nums=1024) @d8be017: the revised question, then passages in reranked order, cut at "
                "1,024 BART tokens",
                "counted with the reader's tokenizer; cq stops before the first passage that does not fit (the release "
                "cuts it); the reader is cq's, not BART fine-tuned on CAmbigNQ", setting="evidence budget (tokens)"),
        Setting("answer", "passage_chars", 0, "CQDataset.py:266-268 @d8be017: passages are concatenated whole",
                setting="passage text shown"),

        # --- disambiguate ---

        # --- gen-cq ---

        # --- score ---

    ),
    departures=(
    ),
)

PRESETS = (ASKCQ,)
