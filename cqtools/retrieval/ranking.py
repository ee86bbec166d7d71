"""Anserini's ranking of Lucene's hits, reproduced in Python and numpy: the order (score desc, passage
id asc) and the tie-adjusted scores of its ScoreTiesAdjusterReranker, from the hits text that
:func:`cqtools.retrieval.handles.top_docs_function` returns."""
from __future__ import annotations


def anserini_ties(hits: list[dict]) -> list[dict]:
    """Anserini's ScoreTiesAdjusterReranker, so scores equal Pyserini's. ``hits`` come in Anserini's
    order (score desc, docid asc). Each score is rounded to 4 decimals (Math.round in double,
    stored as float32); a hit within 1e-4 (float32) of the previous adjusted score counts as a tie
    and is lowered by 1e-6 times its position in the run of ties. Order is kept."""
    for hit, score in zip(hits, tie_scores([h["score"] for h in hits])):
        hit["score"] = score
    return hits


def tie_scores(scores) -> list[float]:
    """:func:`anserini_ties` on the scores alone (in Anserini's order): :func:`tie_scores_rows` of one row."""
    return tie_scores_rows([scores])[0]


def tie_scores_rows(rows: list) -> list[list[float]]:
    """:func:`tie_scores` of many hit lists at once, in numpy (one pass over a whole batch).

    Anserini's rule runs hit by hit: a hit ties when the previous hit's *adjusted* score is within
    1e-4 of its rounded score, and the adjustment (1e-6 per hit into a run of ties) can itself make
    or break the next tie. Here every decision is first taken on the rounded scores, the adjustments
    follow from those decisions, and the decisions are taken again on the adjusted scores until none
    changes: each round settles at least the first wrong decision (a decision depends only on those
    before it), and the fixed point is the rule's unique outcome, with the same float32 arithmetic.
    Shorter rows are padded at their end with NaN, which ties with nothing and changes nothing before it."""
    import numpy as np

    width = max((len(row) for row in rows), default=0)
    if width == 0:
        return [[] for _ in rows]
    f32, f64 = np.float32, np.float64
    raw = np.full((len(rows), width), np.nan, dtype=f32)
    for j, row in enumerate(rows):
        raw[j, :len(row)] = row
    rounded = (np.floor(raw.astype(f64) * 10000.0 + 0.5) / 10000.0).astype(f32)
    below = rounded[:, 1:].astype(f64)
    eps = float(f32(1e-4))
    tie = np.zeros(rounded.shape, dtype=bool)
    tie[:, 1:] = (rounded[:, :-1].astype(f64) - below).astype(f32).astype(f64) <= eps
    adjusted = rounded  # no two scores within 1e-4 anywhere: nothing is lowered
    step = f32(1e-6)
    while tie.any():
        runs = np.cumsum(tie, axis=1)
        dup = runs - np.maximum.accumulate(np.where(tie, 0, runs), axis=1)  # position in its run of ties (0: none)
        adjusted = np.where(dup > 0, rounded - step * dup.astype(f32), rounded)
        again = np.zeros_like(tie)
        again[:, 1:] = (adjusted[:, :-1].astype(f64) - below).astype(f32).astype(f64) <= eps
        if (again == tie).all():
            break
        tie = again
    return [adjusted[j, :len(row)].tolist() for j, row in enumerate(rows)]


def parse_hits(text: str) -> tuple[list[int], list[float]]:
    """``"doc score doc score ..."`` back to (doc numbers, scores). Java prints a float's shortest
    decimal, so rounding it to float32 gives back the exact score Lucene computed."""
    nums, scores = parse_hits_array(text)
    return nums, scores.tolist()


def parse_hits_array(text: str):
    """:func:`parse_hits` with the scores as a float32 array."""
    import numpy as np

    values = np.array(text.split(), dtype=np.float64)  # doc numbers < 2**31 are exact in a double
    if len(values) % 2:
        raise RuntimeError(f"unexpected hits text from Lucene: {text[:200]!r}")
    return values[0::2].astype(np.int64).tolist(), values[1::2].astype(np.float32)


def ranked_passages(nums: list[int], scores, docs: dict[int, dict], k: int,
                    ties: list[float] | None = None) -> list[dict]:
    """The top ``k`` of one query's Lucene hits (doc numbers, float32 scores, Lucene's order) as
    ``{id, title, text, score, rank}`` in Anserini's order with its tie-adjusted scores (``ties``:
    ``tie_scores(scores[:k])`` when already known)."""
    import numpy as np

    equal = np.flatnonzero(scores[:-1] == scores[1:])
    if len(equal) and equal[0] < k:  # a run of equal scores inside the top k: Anserini orders it by id
        passages = [docs[nums[i]] for i in anserini_order(nums, None, docs, k, equal.tolist())]
    else:
        passages = [docs[num] for num in nums[:k]]
    # reordering stays inside runs of equal scores, so the scores in Anserini's order are Lucene's
    ties = tie_scores(scores[:k]) if ties is None else ties
    return [dict(p, score=score, rank=rank) for rank, (p, score) in enumerate(zip(passages, ties), 1)]


def anserini_order(nums: list[int], scores: list[float] | None, docs: dict[int, dict], k: int,
                   equal: list[int] | None = None) -> list[int]:
    """Positions of the top ``k`` of Lucene's hits (score desc, document number asc) in Anserini's order
    (score desc, passage id asc): the same unless two scores are equal (``equal``: the positions j
    with scores[j] == scores[j + 1], when known)."""
    order = list(range(len(nums)))
    if equal is None:
        equal = [j for j, (a, b) in enumerate(zip(scores, scores[1:])) if a == b]
    at, n_equal = 0, len(equal)
    while at < n_equal and equal[at] < k:  # each run of equal scores that starts inside the top k, by passage id
        start = end = equal[at]
        at += 1
        while at < n_equal and equal[at] == end + 1:
            end = equal[at]
            at += 1
        if end == start:  # two hits (the usual run): swap them or not
            if docs[nums[start + 1]]["id"] < docs[nums[start]]["id"]:
                order[start], order[start + 1] = start + 1, start
        else:
            order[start:end + 2] = sorted(order[start:end + 2], key=lambda n: docs[nums[n]]["id"])
    return order[:k]
