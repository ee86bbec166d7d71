"""``meta.usage.<stage>``: the LM calls, prompt tokens, generated tokens and seconds of a stage, noted on its
records when the run configuration's ``usage`` is on (``CQ_USAGE=1``; cqtools/models/usage.py counts them).

A batch's counts are shared equally by its records (and a record's share by the records it fans out to), so
the shares of a run add up to what it cost; each record's share is its own at ``--batch-size 1``. ``batch``
says how many records shared it. ``calls`` and the token counts do not depend on the machine (they are
counted per input asked, under the default per-item generation); ``seconds`` is this run's wall time in the
model calls. Off by default, so records, replays and resumes are as before; on, a record differs from one
written without it by ``meta.usage`` alone (tests/test_usage.py)."""
from __future__ import annotations

from ..models import usage


def noting_usage(process, stage: str, fanout: bool):
    """``process`` that notes each record's share of its batch's LM usage in ``meta.usage.<stage>``."""

    def note(record, share: dict) -> None:
        if isinstance(record, dict):
            record.setdefault("meta", {}).setdefault("usage", {})[stage] = share

    def run(records):
        with usage.counting() as ledger:
            out = process(records)
        total = ledger.as_dict()
        for group in out:
            group = group if fanout else [group]
            k = len(out) * max(len(group), 1)
            share = {key: round(value / k, 6) if k > 1 or key == "seconds" else value
                     for key, value in total.items()}
            for record in group:
                note(record, {**share, "batch": k})
        return out

    for attr in ("cq_command", "cq_params", "prefetch"):
        if hasattr(process, attr):
            setattr(run, attr, getattr(process, attr))
    return run
