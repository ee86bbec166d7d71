"""Evidence budgets: passages read in reranked order, as many as fit a token budget.

The papers' readers and writers do not read a fixed number of passages: AmbigQA's SpanSeqGen and
AskCQ's models read the question and then passages in reranked order until the encoder's 1,024
tokens are full (about 8-10 passages); REFUEL fuses 100. cq cannot fuse, but a stage given
``max_passage_tokens`` reads every passage that fits, in order, and records how many it read
(``meta.passages_read.<stage>`` on each record: a number, or one per question the stage asked). A prompt
still over a local model's input loses whole passages from its end (:func:`fit_prompt`), not its middle, and
the record says how many (``meta.passages_cut.<stage>``).

Tokens are counted with the model's own tokenizer when it has one (a local model); an API model's
are estimated as one token per 4 characters (the usual rule of thumb for English BPE vocabularies), or fewer where
its server, refusing a prompt as over the model's context, said how many tokens that prompt was.
"""
from __future__ import annotations

from typing import Callable, Sequence

from ..models.served_context import DEFAULT_CHARS_PER_TOKEN as CHARS_PER_TOKEN  # noqa: F401 (re-exported)
from ..records import META


def token_counter(model=None) -> Callable[[str], int]:
    """``count(text) -> tokens`` with ``model``'s tokenizer (a :class:`Generator` or anything with a
    Hugging Face ``tokenizer`` attribute), else the 4-characters-a-token estimate (a served model's server may have
    shown, refusing a prompt, that it counts more: cqtools/models/served_context.py ``chars_per_token``)."""
    import math

    from ..models.served_context import chars_per_token

    tokenizer = getattr(model, "tokenizer", None)
    if tokenizer is not None and callable(tokenizer):
        return lambda text: len(tokenizer(text, add_special_tokens=False, verbose=False).input_ids) if text else 0
    ratio = chars_per_token(model)  # fewer than CHARS_PER_TOKEN where a served model's server refused a prompt
    return lambda text: math.ceil(len(text) / ratio)


def passage_text(passage: dict) -> str:
    """A passage as budgets count it: "title: text" (the title only when there is one)."""
    title = passage.get("title") or ""
    return f"{title}: {passage.get('text', '')}" if title else str(passage.get("text", ""))


def fit(passages: Sequence[dict], max_tokens: int, count: Callable[[str], int], used: int = 0,
        render: Callable[[dict], str] = passage_text, limit: int | None = None, cut: bool = False) -> list[dict]:
    """The longest prefix of ``passages`` (in their order: reranked order when reranked) whose
    rendered texts, with ``used`` tokens already taken (the question, the answers), fit ``max_tokens``.
    The first passage is always read (cut later by the model's own input limit) so that a long
    passage never leaves a reader with nothing; ``limit`` caps the count as well. ``cut``: the first passage
    that does not fit is read too, its text cut where the budget is full (:func:`cut_to`), as
    AmbigQA's and AskCQ's releases cut their input at its last token."""
    chosen: list[dict] = []
    total = used
    for passage in passages[:limit] if limit is not None else passages:
        cost = count(render(passage))
        if chosen and total + cost > max_tokens:
            if cut and (part := cut_to(passage, max_tokens - total, count, render)) is not None:
                chosen.append(part)
            break
        chosen.append(passage)
        total += cost
    return chosen


def cut_to(passage: dict, room: int, count: Callable[[str], int], render: Callable[[dict], str]) -> dict | None:
    """A copy of ``passage`` with its text cut to its longest leading part whose rendering fits ``room`` tokens
    (the cut may fall inside a word, as a cut at a token does), or None when nothing of its text fits. A binary
    search over the text's length: the rendering's count grows with it."""
    text = str(passage.get("text") or "")

    def short(n: int) -> dict:
        return {**passage, "text": text[:n].rstrip()}

    low, high = 0, len(text)  # the longest part that fits lies in [low, high]
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if count(render(short(middle))) <= room else (low, middle - 1)
    return short(low) if short(low)["text"] else None


def note_read(record: dict, stage: str, n: int | list[int]) -> None:
    """Record on ``record`` how many passages ``stage`` read (``meta.passages_read.<stage>``)."""
    record.setdefault(META, {}).setdefault("passages_read", {})[stage] = n


# --- a prompt over the model's input: whole passages dropped, not its middle --------------------------

SPECIAL_TOKENS = 2  # room left for the tokens a tokenizer adds around an input (<s>, </s>)


def prompt_room(model, new_tokens: int) -> int | None:
    """Tokens a prompt to a local ``model`` may have before the model layer cuts its middle
    (cqtools/models/cutting.py): its context less the tokens a causal LM generates, or its --max-input-tokens when
    smaller, less :data:`SPECIAL_TOKENS`; for a served model, the context its server advertised or said when it
    refused a prompt as too long (cqtools/models/served_context.py ``known``: nothing is asked here); None for a
    model that names no context and a served one nothing was heard of."""
    from ..models.served_context import known

    context = getattr(model, "context", None)
    if not isinstance(context, int):
        context = known(model)
    if not isinstance(context, int):
        return None
    room = context - (new_tokens if getattr(model, "kind", "causal") == "causal" else 0)
    cap = getattr(model, "input_cap", None)
    return (min(room, cap) if isinstance(cap, int) else room) - SPECIAL_TOKENS


def fit_prompt(build: Callable[[Sequence[dict]], str], passages: Sequence[dict], room: int | None,
               count: Callable[[str], int]) -> tuple[str, int]:
    """(prompt, passages dropped): ``build(passages)`` with its last passages dropped, one at a time, until the
    whole prompt fits ``room`` tokens, so that a prompt over the model's input loses whole passages from its end
    instead of its middle (the first passage stays; the model layer cuts what is still over). ``room`` None:
    the prompt as built."""
    prompt = build(passages)
    if room is None:
        return prompt, 0
    n = len(passages)
    while n > 1 and count(prompt) > room:
        n -= 1
        prompt = build(passages[:n])
    return prompt, len(passages) - n


def note_cut(record: dict, stage: str, n: int | list[int]) -> None:
    """Record on ``record`` how many passages ``stage`` dropped to fit the model's input
    (``meta.passages_cut.<stage>``: a number, or one per prompt), only where some were."""
    if any(n) if isinstance(n, list) else n:
        record.setdefault(META, {}).setdefault("passages_cut", {})[stage] = n
