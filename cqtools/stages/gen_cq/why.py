"""Why a record `cq detect` called ambiguous got no CQ: the ``no_cq`` key `cq show` and `cq chat` print."""
from __future__ import annotations


NO_CQ = "no_cq"  # why a record to be clarified got no CQ (cq show and cq chat say it)


def no_cq_reason(record: dict, writer: str) -> str:
    """One line for a question to be clarified that got no CQ: what the writer had to offer options from."""
    from ...records import distinct_texts

    answers = record.get("answers")
    if isinstance(answers, list):
        texts = [a.get("text") if isinstance(a, dict) else a for a in answers]
        n = len(distinct_texts([t for t in texts if isinstance(t, str)]))
        found = f"the reader found {n} distinct answer{'s' if n != 1 else ''} in the passages"
    else:
        found = "no answers were read before it (cq answer --mode multi)"
    return (f"called ambiguous, but {writer} had fewer than two readings to offer ({found}, and no two passages "
            "stand for different readings): answered directly")
