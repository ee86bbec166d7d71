"""Simulated users of more than one kind: the persona of `cq oracle --persona` (issue 59).

An oracle method (overlap, clam, llm) decides what the user means: the option of its gold DQ, or a
written reply. A persona decides how the user says it:

  cooperative   the oracle's reply as it is (the option as written): what cq did before personas
  terse         the option's name only: its first two words that no other option has and that are no
                stop words ("Dark Knight" for "in The Dark Knight (2008)")
  vague         a paraphrase that names no option: the option's position ("the second one you said"), or,
                with an LM oracle, the model's own paraphrase told to avoid every option's words
  uncooperative no usable information: "I don't know" or "the other one" (which of the two: a hash of the
                record id, so a rerun replies the same)

Each persona is a :class:`Persona` registered in :data:`PERSONAS` through the plugin hook
``register_personas`` (cq's own in cqtools/stages/builtin_methods.py), as a plugin adds its own.
With the llm oracle, a persona with an ``instruction`` has the oracle's model write the reply (greedy, one
line); a reply that breaks the persona's rule (``keeps``: it names an option the persona must not name,
or it is empty) is replaced by the rule-based reply and ``meta.oracle.persona_rule`` says so.

A persona other than cooperative writes its reply as ``selected_option`` too: the system reads what the
user said, not the option the oracle meant (``cq score --task oracle`` reads it back: the oracle audit).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Callable

from ..metrics.normalize import normalize_answer
from ..registry import PERSONAS  # noqa: F401 (the personas' registry, filled through the plugin hook)

DEFAULT = "cooperative"
ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth")
STOP = frozenset("a an the in of on at for to by from with and or as is was were be that this which who".split())


@dataclass(frozen=True)
class Persona:
    """How a simulated user says what it means. ``rule(turn, option, reply, key)``: the reply without a
    model (``option``: the option the oracle picked, or None for a free-form CQ; ``reply``: the oracle's
    reply; ``key``: the record id, for a deterministic choice). ``instruction``: what an LM oracle is told
    to write (None: the rule's reply, whatever the oracle). ``keeps(turn, reply)``: whether a model's reply
    follows the persona."""

    name: str
    rule: Callable
    instruction: str | None = None
    keeps: Callable | None = None
    names_option: bool = False  # True: the reply is the option itself (selected_option stays the option)


def _words(text: str) -> list[str]:
    return text.split()


def distinguishing_words(option: str, others: tuple[str, ...]) -> list[str]:
    """The words of ``option`` that no other option has and that are no stop words (compared normalised)."""
    taken = {normalize_answer(w) for other in others for w in _words(other)}
    return [w for w in _words(option) if (norm := normalize_answer(w)) and norm not in taken and norm not in STOP]


def names_an_option(turn, reply: str) -> bool:
    """Whether ``reply`` holds a distinguishing word of any of the CQ's options."""
    said = {normalize_answer(w) for w in _words(reply)}
    return any(normalize_answer(w) in said for i, option in enumerate(turn.options)
               for w in distinguishing_words(option, turn.options[:i] + turn.options[i + 1:]))


def _pick(key: str, choices: tuple[str, ...], salt: str) -> str:
    digest = hashlib.sha256(f"{salt}\0{key}".encode()).digest()
    return choices[digest[0] % len(choices)]


def cooperative_rule(turn, option, reply, key):
    return reply


def terse_rule(turn, option, reply, key):
    if option is None:  # a free-form CQ: the content words of the reply, two at most
        words = [w for w in _words(reply) if normalize_answer(w) not in STOP]
        return " ".join(words[:2]) or reply
    others = tuple(o for o in turn.options if o != option)
    return " ".join(distinguishing_words(option, others)[:2]) or option


def vague_rule(turn, option, reply, key):
    if option is None or option not in turn.options:
        return "the one people usually mean"
    position = turn.options.index(option)
    which = "last" if position == len(turn.options) - 1 and position > 1 else ORDINALS[min(position, 9)]
    return f"the {which} one you said"


UNCOOPERATIVE = ("I don't know", "the other one")


def uncooperative_rule(turn, option, reply, key):
    return _pick(key, UNCOOPERATIVE, "uncooperative")


def _no_option_named(turn, reply):
    return bool(reply.strip()) and not names_an_option(turn, reply)


def _short(turn, reply):
    return 0 < len(_words(reply)) <= 3


def cooperative(config=None) -> Persona:
    return Persona("cooperative", cooperative_rule, names_option=True)


def terse(config=None) -> Persona:
    return Persona("terse", terse_rule, "Reply with the name of your choice only: one or two words.", _short)


def vague(config=None) -> Persona:
    return Persona("vague", vague_rule, "Say what you meant in other words, without using any word of the "
                                        "options.", _no_option_named)


def uncooperative(config=None) -> Persona:
    return Persona("uncooperative", uncooperative_rule, None)


BUILTIN = (("cooperative", cooperative, "the oracle's reply as it is (the option as written)"),
           ("terse", terse, "the option's name only (its first two words no other option has)"),
           ("vague", vague, "a paraphrase that names no option (its position; an LM's own words)"),
           ("uncooperative", uncooperative, "off-option: \"I don't know\" or \"the other one\""))


def lm_prompt(turn, option: str | None, reply: str, instruction: str) -> str:
    choice = option if option is not None else reply
    return (f"You asked: {turn.question}\nYou meant: {turn.dq}\nYou were asked: {turn.cq}\n"
            f"Your choice: {choice}\n{instruction}\nYour reply:")


def apply(persona: Persona, turns: list, replies: list, keys: list[str], generator=None,
          max_new_tokens: int | None = None) -> list[tuple[str | None, str, bool]]:
    """``[(selected_option, reply, rule_used)]`` of the oracle's ``replies`` said as ``persona`` would.
    ``generator``: the LM oracle's model (None: the rule-based reply), writing ``max_new_tokens`` at most;
    ``rule_used``: a model's reply was replaced by the rule's."""
    ruled = [persona.rule(t, selected, reply, key) for t, (selected, reply), key in zip(turns, replies, keys)]
    written = [None] * len(turns)
    if generator is not None and persona.instruction:
        raw = generator.generate([lm_prompt(t, s, r, persona.instruction) for t, (s, r) in zip(turns, replies)],
                                 max_new_tokens=max_new_tokens, stop=["\n"])
        written = [" ".join(text.split()).strip(" \"'") for text in raw]
    out = []
    for turn, (selected, _), rule, text in zip(turns, replies, ruled, written):
        keep = text is not None and (persona.keeps is None or persona.keeps(turn, text))
        reply = text if keep else rule
        out.append((selected if persona.names_option else reply, reply, text is not None and not keep))
    return out
