"""How a call's inputs are grouped for the model (cqtools/models/__init__.py has the why): each input alone at
its own length unless ``CQ_PADDED_BATCHES=1`` (then padded groups, longest first), the same input run once,
and for an API model the distinct requests sent ``--concurrency`` at a time."""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor


def groups(order: list[int], size: int):
    """``order`` in consecutive groups of ``size``."""
    for start in range(0, len(order), size):
        yield order[start:start + size]


def distinct_longest_first(seqs: list[list[int]], seeds: list, alone: bool) -> tuple[list[int], list[int]]:
    """(``same``: for each input, the input whose run gives its output; ``order``: the inputs that run, longest
    first). Inputs that run ``alone`` run once per distinct (ids, seed): the same input gives the same output."""
    first: dict[tuple, int] = {}
    same = [first.setdefault((tuple(s), k), i) for i, (s, k) in enumerate(zip(seqs, seeds))] if alone \
        else list(range(len(seqs)))
    order = sorted((i for i in range(len(seqs)) if same[i] == i), key=lambda i: -len(seqs[i]))
    return same, order


def shared_runs(items: list[tuple[list[int], list[int]]], padded: bool) -> dict[int, list[int]]:
    """{item that runs: the items its forward pass scores}. Items that share a prompt and continue it by one
    token read one forward pass (each input alone only, not ``padded``): the last prompt position predicts all
    their tokens, and causal attention keeps it blind to the token that follows (True/False verifications:
    half the passes)."""
    runs: dict[int, list[int]] = {}
    first_of: dict[tuple, int] = {}
    for i, (p, c) in enumerate(items):
        shared = not padded and len(c) == 1 and bool(p)
        runs.setdefault(first_of.setdefault(tuple(p), i) if shared else i, []).append(i)
    return runs


def pad(seqs: list[list[int]], left: bool, value: int):
    """(ids, attention mask) tensors of ``seqs`` padded with ``value`` on the left or right; a single
    sequence gets no padding at all."""
    import torch

    width = max(1, max(map(len, seqs)))
    ids = torch.full((len(seqs), width), value, dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.long)
    for row, seq in enumerate(seqs):
        if not seq:
            continue
        cols = slice(width - len(seq), width) if left else slice(0, len(seq))
        ids[row, cols] = torch.tensor(seq, dtype=torch.long)
        mask[row, cols] = 1
    return ids, mask


class RequestPool:
    """Calls with at most ``concurrency`` in flight (threads started on the first call that needs them),
    results in the order of the items."""

    def __init__(self, concurrency: int, prefix: str = "cq-api"):
        self.concurrency = concurrency
        self.prefix = prefix
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def map(self, func, items: list) -> list:
        """``func`` over ``items``."""
        if len(items) <= 1 or self.concurrency == 1:
            return [func(x) for x in items]
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix=self.prefix)
        return list(self._pool.map(func, items))

    def distinct_map(self, func, items: list) -> list:
        """``func`` over the distinct items only (the same request is never in flight twice)."""
        distinct = list(dict.fromkeys(items))
        results = dict(zip(distinct, self.map(func, distinct)))
        return [results[x] for x in items]
