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

        # --- disambiguate ---

        # --- gen-cq ---

        # --- score ---

    ),
    departures=(
    ),
)

PRESETS = (AMBIGQA, DISAMBIG_FIRST,)
