"""Tree of Clarifications (Kim et al., EMNLP 2023) as its released code runs it."""
from __future__ import annotations

from .base import Preset, Setting

CODE = "gankim/tree-of-clarifications @75a3ddd"

PRESET = Preset(
    name="toc",
    help="Tree of Clarifications: verify-during-growth tree of DQ/answer pairs, then a few-shot long answer",
    paper="../shared/papers/tree-of-clarifications.txt (Kim et al., EMNLP 2023)",
    code=CODE,
    settings=(
        Setting("disambiguate", "method", "rac", "§3.2", setting="disambiguation method"),
    ),
)
