"""``--task clam --curves``: the cost of clarifying, computed from the clam task's own per-question rows.

* ``lambda``: the adjusted accuracy (all questions) at each lambda of :data:`LAMBDAS`: a correct answer
  counts lambda when an unambiguous question was clarified, as ``--lambda`` does for one value.
* ``threshold`` (a risk-coverage curve): the run's questions re-decided at every threshold T of the
  detector's ``ambiguity.score`` (cq detect's rule: clarify when score > T). A clarified question is
  scored on the clarifying path's answer (the record's own answer when it has a ``cq``), an unclarified
  one on the direct answer (its own answer when it has none, else the answer of the same id in
  ``--direct FILE``, a run that never asked). Each point gives the share clarified, accuracy and
  adjusted accuracy, and ``unknown``: questions whose answer on the path the point needs is in no
  record (they score 0, as a missing prediction does). A question without a score keeps the path
  its run took at every point.
"""
from __future__ import annotations

import math

from ..errors import InputError
from ..jsonl import open_input, read_records
from ..records import answer_texts

LAMBDAS = tuple(round(i / 10, 1) for i in range(11))


def read_direct(path: str) -> dict:
    """``--direct FILE``: {record id: its first answer's text, or None without one}. A record that asked a
    clarifying question is not a direct answer: an error naming its line."""
    out: dict = {}
    with open_input(path) as stream:
        try:
            for line, record in read_records(stream, ("question",), "fail"):
                if record.get("cq"):
                    raise InputError(f"record {record['id']} asked a clarifying question; --direct takes a run "
                                     "that never asked (the question answered alone)", where=f"line {line}")
                texts = answer_texts(record)
                out[record["id"]] = texts[0] if texts else None
        except InputError as err:
            err.where = f"--direct {path}" + (f" {err.where}" if err.where else "")
            raise
    return out


def lambda_curve(rows) -> list[dict] | None:
    """[{lambda, adjusted_accuracy}] over :data:`LAMBDAS` (percentages); None without rows."""
    if not rows.n:
        return None
    correct, needless = rows.sum("correct"), rows.sum("needless_correct")
    return [{"lambda": lam, "adjusted_accuracy": 100.0 * (correct - (1.0 - lam) * needless) / rows.n}
            for lam in LAMBDAS]


def threshold_curve(rows, lam: float) -> list[dict] | None:
    """The risk-coverage points, fewest clarified first: each distinct score T (clarify score > T), then
    ``threshold`` null (every scored question clarified). None when no row has a score."""
    import numpy as np

    score = rows.column("score")
    scored = ~np.isnan(score)
    if not scored.any():
        return None
    amb, asked = rows.column("amb"), rows.column("asked")
    cq, direct = rows.column("cq_correct"), rows.column("direct_correct")
    # Unscored questions: the path their run took, at every point.
    own = rows.column("correct")[~scored]
    base = np.array([own.sum(), (own * np.where(asked[~scored] * (1 - amb[~scored]) > 0, lam, 1.0)).sum(),
                     asked[~scored].sum()])
    order = np.argsort(-score[scored], kind="stable")
    s, a = score[scored][order], amb[scored][order]
    c, d = cq[scored][order], direct[scored][order]
    weight = np.where(a > 0, 1.0, lam)
    # Prefix sums over the first k clarified (k = 0..m) and suffix sums over the rest.
    c_acc, c_adj, c_unk = (np.concatenate([[0.0], np.cumsum(x)]) for x in
                           (np.nan_to_num(c), np.nan_to_num(c) * weight, np.isnan(c)))
    d_acc, d_unk = (np.concatenate([np.cumsum(x[::-1])[::-1], [0.0]]) for x in (np.nan_to_num(d), np.isnan(d)))
    cuts = [(float(v), int(np.sum(s > v))) for v in np.unique(s)[::-1]] + [(None, len(s))]
    n = rows.n
    return [{"threshold": t, "clarified": float(100.0 * (base[2] + k) / n),
             "accuracy": float(100.0 * (base[0] + c_acc[k] + d_acc[k]) / n),
             "adjusted_accuracy": float(100.0 * (base[1] + c_adj[k] + d_acc[k]) / n),
             "unknown": int(c_unk[k] + d_unk[k])} for t, k in cuts]


def curve_notes(rows, curves: dict | None) -> list[str]:
    """What a reader of the curves must know: questions without a score, points resting on unknown answers."""
    if not curves:
        return []
    notes = []
    unscored = int(sum(math.isnan(s) for s in rows.column("score").tolist())) if rows.n else 0
    if unscored:
        notes.append(f"--curves: {unscored} record(s) have no ambiguity.score and keep their run's path at every "
                     "threshold")
    points = curves.get("threshold") or []
    unknown = [p for p in points if p["unknown"]]
    if unknown:
        notes.append(f"--curves: {len(unknown)} of {len(points)} threshold points rest on answers no record holds "
                     "(\"unknown\", scored 0): score a run that clarified every question with --direct NEVER.jsonl "
                     "for the whole curve")
    return notes


USAGE = ("calls", "prompt_tokens", "generated_tokens", "seconds")
USAGE_COLUMNS = (*(f"lm_{key}" for key in USAGE), "with_usage", "answered")


def usage_values(record: dict, answered: bool) -> dict:
    """The cost columns of a record: its ``meta.usage`` shares summed over stages (cqtools/stream/usage.py), whether
    it has any, and whether it was answered and has them (what the cost is divided by). A stage's entry that is not an object of numbers is an error."""
    meta = record.get("meta") if isinstance(record.get("meta"), dict) else {}
    stages = meta.get("usage")
    out = dict.fromkeys(USAGE_COLUMNS, 0.0)
    noted = isinstance(stages, dict) and bool(stages)
    out.update(answered=float(answered and noted), with_usage=float(noted))
    for stage, share in (stages.items() if isinstance(stages, dict) else ()):
        for key in USAGE:
            value = share.get(key, 0) if isinstance(share, dict) else None
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                raise InputError(f"record {record['id']}: meta.usage.{stage}.{key} must be a number; was it "
                                 "written by cq with CQ_USAGE=1?", record_id=record["id"])
            out[f"lm_{key}"] += value
    return out


def cost(rows) -> dict | None:
    """LM calls, prompt and generated tokens and seconds per answered question: the ``meta.usage`` of every record
    that has it (answered or not: an unanswered question cost its calls too) over the answered records among them;
    None when no record carries ``meta.usage``."""
    if not rows.n or not rows.sum("with_usage"):
        return None
    answered = rows.sum("answered")
    per = {key: (rows.sum(f"lm_{key}") / answered if answered else None) for key in USAGE}
    return {"answered": int(answered), "with_usage": int(rows.sum("with_usage")), "per_answered_question": per}


def cost_notes(rows, value: dict | None) -> list[str]:
    """Records without ``meta.usage`` beside some with it (none with it: ``cost`` is null, docs/metrics.md)."""
    if not rows.n or value is None:
        return []
    missing = rows.n - value["with_usage"]
    return [f"cost: {missing} record(s) carry no meta.usage; the cost per answered question leaves them out"] \
        if missing else []
