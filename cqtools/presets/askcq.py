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
        Setting("detect", "method", "classifier", "§6.1 Task 1 (No Answers: BERT-base-cased with a linear head over "
                "\"question [SEP] relevant_passages\"); ambiguity_detection/run_ambiguity_detection.py @d8be017",
                "cq's classifier is what `cq train detect` fine-tunes (MiniLM by default; --model bert-base-cased "
                "for the paper's); pass its directory with --model. Train it as AskCQ did with --passages 100 "
                "--max-length 512 over retrieved training records (make train-detect DETECT_PASSAGES=100 "
                "DETECT_MAX_LENGTH=512); cq detect reuses the model's max length",
                setting="ambiguity detection"),
        Setting("detect", "n_passages", 100, "run_ambiguity_detection.py:441-444 @d8be017: the question and every "
                "relevant passage joined by [SEP], cut at max_seq_length 1024 (run_ambiguity_detection.sh), which "
                "becomes BERT's 512 (line 433); README: the top-100 retrieved passages",
                "cq encodes (question, passages) as a pair (passages in the second segment, cut first) where "
                "the released code encodes one joined sequence cut at its end; each passage is cut to 256 words "
                "and written \"title: text\"", setting="passages read (cut at the model's max length)"),

        # --- answer ---

        # --- disambiguate ---

        # --- gen-cq ---

        # --- score ---

    ),
    departures=(
    ),
)

PRESETS = (ASKCQ,)
