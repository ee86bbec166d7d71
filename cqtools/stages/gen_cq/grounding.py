"""A CQ's options grounded in what the model read: each option's words found in the question, the
answers and the passages shown (``cq gen-cq --options grounded`` drops the others)."""
from __future__ import annotations

import re
import string

from ...errors import InputError
from ...metrics.normalize import normalize_answer
from .form import INVALID, drop_options

OPTIONS = ("all", "grounded")  # which options of a model's CQ are kept (--options)


_PUNCT_RUN = re.compile("[" + re.escape(string.punctuation) + "]+")


def shown_words(texts: list[str]) -> set[str]:
    """The words of the texts a model read, normalised as the scorer normalises answers
    (:func:`cqtools.metrics.normalize.normalize_answer`), each also split at punctuation inside it
    ("Tolkien's" gives "tolkiens" and "tolkien", "Batman/Superman" gives "batman" and "superman")."""
    words: set[str] = set()
    for text in texts:
        for token in text.split():
            for piece in (token, *_PUNCT_RUN.split(token)):
                words.update(normalize_answer(piece).split())
    return words


def grounded(option: str, words: set[str]) -> bool:
    """An option is grounded when it has a word and every word of it, normalised as the scorer
    normalises answers (case, punctuation and articles dropped), is one of ``words``
    (:func:`shown_words` of the question and the passages the model read). The "invalid form"
    placeholder never is."""
    option_words = normalize_answer(option).split()
    return option != INVALID and bool(option_words) and all(w in words for w in option_words)


def ground(cq: dict, shown: list[str], options: str) -> dict:
    """``cq`` with ``grounded`` (one flag per option) against the texts the model read; with
    ``options="grounded"`` the ungrounded options are dropped first (:func:`form.drop_options`;
    an "invalid form" CQ has none to drop)."""
    words = shown_words(shown)
    flags = [grounded(o, words) for o in cq["options"]]
    if options == "grounded" and cq["category"] != INVALID:
        cq = drop_options(cq, [not f for f in flags], "ungrounded")
        flags = [grounded(o, words) for o in cq["options"]]
    cq["grounded"] = flags
    return cq


def check_options(options: str) -> str:
    if options not in OPTIONS:
        raise InputError(f"options={options!r}: use one of {', '.join(OPTIONS)} (--options)")
    return options


