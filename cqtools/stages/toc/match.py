"""The two answer comparisons of the released ToC loop (dsp's): whether a passage holds an answer
(DPR's token match, ``dsp/primitives/demonstrate.py:129-134``) and the token F1 that removes demos
(``dsp/utils/metrics.py`` F1, ``run_toc.py:103``)."""
from __future__ import annotations

import re
from typing import Sequence

from ...metrics.normalize import normalize_answer, token_f1

_TOKEN = re.compile(r"[^\W_]+|[^\w\s]|_", re.UNICODE)


def tokens(text: str) -> list[str]:
    """DPR's simple tokenizer on dsp's normalised text: runs of letters and digits, and any other
    non-space character alone."""
    return _TOKEN.findall(normalize_answer(text))


def holds(passage: str, answers: Sequence[str]) -> bool:
    """True when the token sequence of some answer occurs in the passage's tokens. An answer with no
    token left after normalising ("", "a", "the", " ") is in every passage, as in dsp."""
    text = tokens(passage)
    for answer in answers:
        want = tokens(answer)
        if not want:
            return True
        n = len(want)
        if any(text[i:i + n] == want for i in range(len(text) - n + 1)):
            return True
    return False


def answer_f1(gold: str, answers: Sequence[str]) -> float:
    """The best SQuAD token F1 of ``gold`` against ``answers`` (0 when either side has no token)."""
    if not normalize_answer(gold).split():
        return 0.0
    return max((token_f1(gold, a) for a in answers if normalize_answer(a).split()), default=0.0)
