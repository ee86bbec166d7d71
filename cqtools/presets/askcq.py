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

        # --- disambiguate ---

        # --- gen-cq ---

        # --- score ---

    ),
    departures=(
    ),
)

PRESETS = (ASKCQ,)
