"""A simulated user for CLAM's evaluation protocol (Kuhn et al. 2022), generalised.

The user asked the ambiguous question (AQ) but meant one disambiguated question (DQ): the gold
DQ ``gold.dqs[gold.intended]`` (``intended`` defaults to 0; a record without gold DQs is an
unambiguous question, and the user means the AQ as asked). Given the system's clarifying
question (``cq``) the user replies:

  overlap  a CQ with options: the option that best matches what the DQ adds to the AQ (its edit,
           a token diff), by token F1 with the edit, then with the whole DQ, then by longest
           common substring; ties go to the earlier option. A free-form CQ: the edit itself.
  llm      a CQ with options: the option the model finds most likely as the user's reply given
           the DQ (summed log-probability per word); a free-form CQ: a short reply it writes.

:func:`overlap_reply` and :func:`llm_replies` see nothing but the AQ, the DQ and the CQ; :func:`oracle_batch` extracts exactly
those from a record, so no other gold field, passage or prediction can reach the user.

:func:`expand_record` builds the evaluation records: one per gold DQ of an ambiguous question
(id ``<id>#<i>``, ``gold.intended = i``), unambiguous questions as they are.
"""
from __future__ import annotations

import copy
import functools
from dataclasses import dataclass, field
from typing import Callable

from ..errors import InputError
from ..metrics.cq import INVALID
from ..models.roles import role
from ..metrics.normalize import longest_common_substring, normalize_answer, token_f1
from ..records import GOLD, read_cq, set_meta
from ..registry import ORACLES, option
from .options import prompt_option
from . import personas, prompts_disamb as P, templates
from .personas import DEFAULT as DEFAULT_PERSONA, PERSONAS
from .templates import Template

DEFAULT_MODEL = role("oracle").default
NEED_GOLD = ("cq oracle plays a user who knows the intended question: pass records from `cq convert` "
             "(and `cq oracle --expand` for one record per interpretation)")


# --- building the evaluation records ------------------------------------------------------------

def expand_record(record: dict) -> list[dict]:
    """One record per gold DQ of an ambiguous question, the record itself otherwise."""
    gold = record.get(GOLD)
    if not isinstance(gold, dict):
        raise InputError(f"record {record.get('id')} has no 'gold'; {NEED_GOLD}", record_id=record.get("id"))
    dqs = gold.get("dqs") or []
    if not (gold.get("ambiguous") and dqs):
        return [record]
    answers = gold.get("answers") or []
    if len(answers) != len(dqs):
        raise InputError(f"record {record.get('id')}: gold.dqs and gold.answers differ in length "
                         f"({len(dqs)} vs {len(answers)}); gold.intended must index both", record_id=record.get("id"))
    out = []
    for i in range(len(dqs)):
        new = copy.deepcopy(record)
        new["id"] = f"{record['id']}#{i}"
        new[GOLD]["intended"] = i
        out.append(new)
    return out


# --- what the user sees --------------------------------------------------------------------------

@dataclass(frozen=True)
class Turn:
    question: str          # the AQ as asked
    dq: str                # what the user meant
    cq: str                # the system's clarifying question
    options: tuple[str, ...]


def intended_dq(record: dict) -> str:
    gold = record.get(GOLD)
    if not isinstance(gold, dict):
        raise InputError(f"record {record.get('id')} has no 'gold'; {NEED_GOLD}", record_id=record.get("id"))
    dqs = gold.get("dqs") or []
    if not dqs:
        return str(record["question"])
    i = gold.get("intended", 0)
    if not isinstance(i, int) or not 0 <= i < len(dqs):
        raise InputError(f"record {record.get('id')}: gold.intended must index gold.dqs (0..{len(dqs) - 1})",
                         record_id=record.get("id"))
    dq = dqs[i]
    return str(dq.get("question") if isinstance(dq, dict) else dq)


def cq_turn(record: dict) -> Turn | None:
    """The turn the user answers, or None when no CQ was asked."""
    cq = record.get("cq")
    if cq is None:
        return None
    text, _, options = read_cq(cq, record.get("id"))
    options = tuple(str(o) for o in options if o and o != INVALID)
    return Turn(str(record["question"]), intended_dq(record), text, options)


def dq_edit(question: str, dq: str) -> str:
    """What the DQ adds to or changes in the AQ (the same token diff that builds silver CQs)."""
    from .gen_cq.silver import dq_option

    return dq_option(question, dq)


# --- replies ---------------------------------------------------------------------------------------

def overlap_reply(turn: Turn) -> tuple[str | None, str]:
    """(selected option or None, reply) by string overlap with the DQ's edit."""
    edit = dq_edit(turn.question, turn.dq)
    if not turn.options:
        return None, edit
    norm_edit = normalize_answer(edit)

    def key(item):
        position, option = item
        norm = normalize_answer(option)
        lcs = longest_common_substring(norm_edit, norm) / max(len(norm), 1)
        return (-token_f1(edit, option), -token_f1(turn.dq, option), -lcs, position)

    best = min(enumerate(turn.options), key=key)[1]
    return best, best


def llm_replies(turns: list[Turn], generator, max_new_tokens: int, tpl: Template | None = None) -> list[tuple[str | None, str]]:
    out: list[tuple[str | None, str] | None] = [None] * len(turns)
    scored = [(n, t) for n, t in enumerate(turns) if t.options]
    prompts, conts, owners = [], [], []
    for n, t in scored:
        prompt = P.oracle_options_prompt(t.dq, t.cq, list(t.options), tpl)
        for option in t.options:
            prompts.append(prompt)
            conts.append(" " + option)
            owners.append(n)
    scores = generator.score(prompts, conts) if prompts else []
    best: dict[int, tuple[float, str]] = {}
    for n, cont, score in zip(owners, conts, scores):
        per_word = score / max(len(cont.split()), 1)
        if n not in best or per_word > best[n][0]:  # strict: ties keep the earlier option
            best[n] = (per_word, cont[1:])
    for n, _ in scored:
        out[n] = (best[n][1], best[n][1])
    free = [(n, t) for n, t in enumerate(turns) if not t.options]
    if free:
        raw = generator.generate([P.oracle_free_prompt(t.question, t.dq, t.cq, tpl) for _, t in free],
                                 max_new_tokens=max_new_tokens, stop=["\n"])
        for (n, _), text in zip(free, raw):
            reply = " ".join(text.split()).strip(" \"'")
            out[n] = (None, reply)
    return out  # type: ignore[return-value]


# --- the stage ------------------------------------------------------------------------------------

@dataclass
class SimulatedUser:
    """A simulated user: ``reply(turns) -> [(selected option or None, reply text)]``, plus its meta."""

    name: str
    reply: Callable[[list[Turn]], list[tuple[str | None, str]]]
    info: dict = field(default_factory=dict)
    generator: object = None  # an LM oracle's model: a persona with an instruction has it write the reply


@dataclass(frozen=True)
class OverlapOptions:
    """the option that best overlaps what the DQ adds to the question"""


@dataclass(frozen=True)
class LlmOracleOptions:
    """the model, with the DQ in its prompt, picks the option (or writes a short reply to a free-form CQ)"""

    model: str = option(DEFAULT_MODEL, "a causal LM")
    max_new_tokens: int = option(16, "tokens of a free-form reply", min=1)
    prompt: str | None = prompt_option()


def overlap_oracle(options: OverlapOptions = OverlapOptions(), config=None) -> SimulatedUser:
    return SimulatedUser("overlap", lambda turns: [overlap_reply(t) for t in turns], {"method": "overlap"})


def llm_oracle(options: LlmOracleOptions, config) -> SimulatedUser:
    from ..models.load import load_generator

    generator = load_generator(options.model, config.device, config.dtype, config=config)
    tpl = templates.load("oracle_llm", options.prompt)
    max_new_tokens = options.max_new_tokens
    return SimulatedUser("llm", functools.partial(llm_replies, generator=generator, max_new_tokens=max_new_tokens,
                                                  tpl=tpl),
                         {"method": "llm", **generator.info, "max_new_tokens": max_new_tokens,
                          **templates.meta(tpl)}, generator)


def build(method: str = "overlap", config=None, persona: str = DEFAULT_PERSONA,
          **options) -> Callable[[list[dict]], list[dict]]:
    """The oracle stage as a batch function (records -> records); ``options``: the method's schema;
    ``persona``: how the user says what it means (:mod:`.personas`; checked before any model loads)."""
    from .common import stage_fn

    PERSONAS.get(persona)
    extra = {"persona": persona} if persona != DEFAULT_PERSONA else {}  # the default's run record as before
    return stage_fn(oracle_batch, "oracle", method, ORACLES, config, options, "oracle", **extra)


def expand_batch(records: list[dict]) -> list[list[dict]]:
    """``--expand``: the evaluation records of each input record (one per gold DQ)."""
    return [expand_record(r) for r in records]


def oracle_batch(records: list[dict], oracle: SimulatedUser, persona: str = DEFAULT_PERSONA) -> list[dict]:
    """Add ``selected_option`` and ``clarification_answer`` to records with a CQ; others pass
    through unchanged. A written reply (to a free-form CQ, or from an oracle that never picks, such
    as CLAM's) also stands in as ``selected_option`` (so that
    ``cq answer --mode cq --selected`` can use it) and ``meta.oracle.free_form`` says so. A persona
    other than cooperative says the reply its own way (:mod:`.personas`), noted as ``meta.oracle.persona``."""
    turns = [cq_turn(r) for r in records]
    asked = [(r, t) for r, t in zip(records, turns) if t is not None]
    replies = oracle.reply([t for _, t in asked])
    said = personas.apply(PERSONAS.build(persona), [t for _, t in asked], replies, [str(r["id"]) for r, _ in asked],
                          oracle.generator, oracle.info.get("max_new_tokens") or LlmOracleOptions.max_new_tokens)
    own = {} if persona == DEFAULT_PERSONA else {"persona": persona}
    for (record, turn), (selected, reply, rule_used) in zip(asked, said):
        free_form = not turn.options
        record["selected_option"] = selected if selected is not None else reply  # a written reply stands in
        record["clarification_answer"] = reply
        set_meta(record, "oracle", {**oracle.info, **own, "free_form": free_form,
                                    **({"persona_rule": True} if rule_used else {})})
    return records
