"""REFUEL (Gao et al., ACL 2021): answer prediction, question disambiguation for every answer, the
round trip over every DQ until no new answer appears, and LM verification of (DQ, answer) pairs, as the
paper and the released code (amzn/refuel-open-domain-qa @159090e) run them."""
from __future__ import annotations

from .base import Preset, Setting  # noqa: F401

CODE = "amzn/refuel-open-domain-qa @159090e"
PAPER = "../shared/papers/refuel.txt (Gao, Zhang, Chang, Wang, ACL 2021)"

REFUEL = Preset(
    name='refuel',
    help='REFUEL: answers from as many passages as fit, a DQ for every answer, every DQ re-asked until no new answer appears, (DQ, answer) pairs verified with keep-best',
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

PRESETS = (REFUEL,)
