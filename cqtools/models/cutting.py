"""What the model layer cuts, local and API generators alike: an input over the model's limit (its context, or
``--max-input-tokens``) loses its middle, keeping its start (instructions, shots) and its end (the question's
cue), with one stderr line per call; a generated text ends at its first stop string. The stages that show
passages to a local model (the generative reader, qd, REFUEL's round trip) drop whole passages first
(cqtools/stages/evidence.py ``fit_prompt``, noted in ``meta.passages_cut``), so this cut is their last resort."""
from __future__ import annotations

import logging
from typing import Sequence

log = logging.getLogger("cqtools")

DEFAULT_CONTEXT = 4096  # for a model whose config and tokenizer name no context length


# ---------------------------------------------------------------------------------------------
# input limits


def context_length(config, tokenizer=None) -> int:
    """The longest input a model takes: the smallest of its position table and its tokenizer's limit."""
    sizes = [getattr(config, k, None) for k in ("max_position_embeddings", "n_positions", "max_sequence_length")]
    tok = getattr(tokenizer, "model_max_length", None)
    sizes.append(tok if isinstance(tok, int) and tok < 1_000_000 else None)
    known = [s for s in sizes if isinstance(s, int) and s > 0]
    return min(known) if known else DEFAULT_CONTEXT


def input_limit(context: int, reserve: int = 0, cap: int | None = None) -> int:
    """Tokens an input may have: the context less ``reserve`` (tokens still to generate), or ``cap``
    (``--max-input-tokens`` of the configuration the model was built under) when that is smaller."""
    limit = max(1, context - reserve)
    return limit if cap is None else max(1, min(limit, cap))


# ---------------------------------------------------------------------------------------------
# cutting inputs to the limit


def cut_middle(ids: list, budget: int) -> list:
    """``ids`` cut to ``budget`` items by dropping the middle: the start and the end are kept."""
    if len(ids) <= budget:
        return ids
    head = budget // 2
    tail = budget - head
    return ids[:head] + (ids[len(ids) - tail:] if tail else [])


def warn_cut(name: str, cuts: list[tuple[int, int]], limit: int, once: dict | None = None) -> None:
    """One stderr line per call naming how much was cut (``cuts``: tokens before and after each
    cut); with ``once`` (a backend's flag dict), only the first call warns, later ones log at info."""
    if not cuts:
        return
    level = logging.WARNING
    if once is not None:
        level = logging.INFO if once.get("warned") else logging.WARNING
        once["warned"] = True
    removed = sum(before - after for before, after in cuts)
    longest = max(before for before, _ in cuts)
    log.log(level, "%s: %d input(s) over the %d-token limit cut in the middle (longest %d tokens; %d tokens "
            "removed in all); --max-input-tokens sets the limit", name, len(cuts), limit, longest, removed)


def fit(name: str, seqs: list[list[int]], budget: int) -> list[list[int]]:
    """Sequences cut to ``budget`` tokens (middle dropped), with one warning for the call (naming model ``name``)."""
    cuts = [(len(s), budget) for s in seqs if len(s) > budget]
    warn_cut(name, cuts, budget)
    return [cut_middle(s, budget) for s in seqs] if cuts else seqs


def fit_prompts(name: str, limit: int, prefix_len: int, items: list[tuple[list[int], list[int]]]) -> list:
    """(prompt, continuation) token lists fitted to ``limit`` after a ``prefix_len``-token prefix: the prompt
    gives way (middle dropped), prefix and continuation stay whole; one warning for the call. ``items`` is
    changed in place and returned."""
    cuts = []
    for n, (p, c) in enumerate(items):
        room = max(0, limit - prefix_len - len(c))
        if len(p) > room:
            cuts.append((prefix_len + len(p) + len(c), prefix_len + room + len(c)))
            items[n] = (cut_middle(p, room), c)
    warn_cut(name, cuts, limit)
    return items


# ---------------------------------------------------------------------------------------------
# stop strings


def first_stop(text: str, stop: Sequence[str] | None) -> int | None:
    """Where the first stop string in ``text`` starts (the earliest of all), or None."""
    found = [pos for pos in (text.find(s) for s in stop or () if s) if pos >= 0]
    return min(found) if found else None


def cut_at_stop(text: str, stop: Sequence[str] | None) -> str:
    """``text`` up to its first stop string, stripped."""
    pos = first_stop(text, stop)
    return (text if pos is None else text[:pos]).strip()
