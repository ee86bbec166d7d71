"""CLAM (Kuhn, Gal, Farquhar 2022) as its paper describes it (no code was released)."""
from __future__ import annotations

from . import Preset, Setting

PRESET = Preset(
    name="clam",
    help="CLAM: few-shot log p(True) detection at -0.3, closed-book zero-shot CQ, an LM user's reply, "
         "the answer to the dialogue",
    paper="../shared/papers/clam.txt (Kuhn, Gal, Farquhar, arXiv 2212.07769)",
    code="none released",
    settings=(
        Setting("detect", "method", "llm", "§3", setting="detection method"),
    ),
)
