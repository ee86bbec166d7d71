"""CLAM (Kuhn, Gal, Farquhar 2022; ../shared/papers/clam.txt) as its paper runs it: Algorithm 1.

One language model plays every part, prompted with cq's template ``templates/clam.txt`` (own
wording, the paper's structure; ``--prompt FILE`` brings the paper's exact text):

  detect    ``clam``: 5 shots "Q: question / This question is ambiguous: True." (2 ambiguous, 3 not,
            in the paper's order: ambiguous, not, not, not, ambiguous), no instruction; the score is
            log p(" True") of the next token alone; ambiguous when above -0.3 (§3, §5.1).
  gen-cq    ``clam``: closed-book, zero-shot: the question with one appended sentence saying a
            clarifying question must come first (§3; no passages, not told it is ambiguous);
            ``clam-prompting``: the prompting baseline (§5.1): the model answers under a preamble
            that invites clarification; a reply ending in "?" is its clarifying question.
  oracle    ``clam``: the LM writes the user's reply given the intended (precise) question, the
            ambiguous question and the CQ (§4, Figure 3); it never picks among options.
  answer    ``--mode dialogue``: the LM answers the conversation (question, CQ, reply) under the
            conversation preamble, closed-book by default (Algorithm 1 line 7); a record that
            was not clarified gets the LM's answer to the question alone (line 1).

Decoding is greedy throughout (the paper does not state it; text-davinci-002 at temperature 0 is
the usual reading); replies and answers stop at the end of their line.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

from ..errors import InputError
from ..models.roles import role
from ..records import ANSWERS, PASSAGES, set_meta
from ..registry import option
from . import templates
from .answer.text import passage_block
from .detect import ScoredDetector, threshold_option
from .options import llm_option, prompt_option, tokens_option

NAME = "clam"
THRESHOLD = -0.3  # §5.1: tuned on a held-out set for QA accuracy (text-davinci-002)
ANSWER_TOKENS = 32  # the assistant's turns: answers, and the prompting baseline's reply (the same prompt)
ANSWER_STOP = ["\n", "User:"]


def template(prompt: str | None) -> templates.Template:
    return templates.load(NAME, prompt)


def _info(generator, tpl: templates.Template, **extra) -> dict:
    return {"model": generator.name, **dict(generator.info), "template": tpl.source, "template_digest": tpl.digest,
            **extra}


def _generator(model: str, config):
    from ..models.load import load_generator

    return load_generator(model, config.device, config.dtype, config=config)


# --- detection (§3) ---------------------------------------------------------------------------------

def detect_examples(tpl: templates.Template) -> list[tuple[str, bool]]:
    """The template's shots: ``True | question`` / ``False | question`` lines, in order."""
    return templates.labelled(tpl, "detect_examples")


def detect_prefix(tpl: templates.Template) -> str:
    """The shots, each followed by a blank line (the part every question shares: its KV cache is reused)."""
    labels = {True: tpl.text("label_true"), False: tpl.text("label_false")}
    return "".join(tpl("detect_shot", question=q, label=labels[amb]) + "\n\n" for q, amb in detect_examples(tpl))


@dataclass(frozen=True)
class DetectOptions:
    """CLAM as in its paper: 5 shots without instruction, score log p(True) alone"""

    model: str = llm_option(env=role("detector").env)
    threshold: float = threshold_option(THRESHOLD)
    prompt: str | None = prompt_option()


def clam_detector(options: DetectOptions, config) -> ScoredDetector:
    return detector_from(_generator(options.model, config), options.threshold, template(options.prompt))


def detector_from(generator, threshold: float, tpl: templates.Template) -> ScoredDetector:
    prefix = detect_prefix(tpl)
    token = tpl.text("score_token")

    def score(records):
        texts = [tpl("detect_query", question=r["question"].strip()) for r in records]
        return generator.score(texts, [token] * len(texts), prefix=prefix)

    info = _info(generator, tpl, method=NAME, shots=len(detect_examples(tpl)), score="log p(True)",
                 threshold=threshold)
    return ScoredDetector(NAME, score, threshold, info)


# --- clarifying question (§3) and the prompting baseline (§5.1) ---------------------------------------

@dataclass(frozen=True)
class CQOptions:
    """CLAM as in its paper: closed-book, zero-shot, the question and one sentence asking for a clarifying question (free-form CQ kept as written)"""

    model: str = llm_option()
    max_new_tokens: int = tokens_option()
    prompt: str | None = prompt_option()


def clam_cq_method(options: CQOptions, config):
    return cq_writer(_generator(options.model, config), options.max_new_tokens, template(options.prompt))


def cq_writer(generator, max_new_tokens: int, tpl: templates.Template):
    from .gen_cq import CQWriter, free_form

    def run(records):
        texts = [tpl("cq", question=r["question"].strip()) for r in records]
        raw = generator.generate(texts, max_new_tokens=max_new_tokens, chat=False, stop=["\n"])
        return [free_form(g, NAME) for g in raw]

    return CQWriter(NAME, run, _info(generator, tpl, method=NAME, passages=0, max_new_tokens=max_new_tokens))


@dataclass(frozen=True)
class PromptingOptions:
    """CLAM's prompting baseline: the model answers under a preamble inviting clarification; a reply ending in '?' is its CQ, otherwise nothing is asked (use with --all)"""

    model: str = llm_option()
    max_new_tokens: int = tokens_option(ANSWER_TOKENS)
    prompt: str | None = prompt_option()


def prompting_method(options: PromptingOptions, config):
    return prompting_writer(_generator(options.model, config), options.max_new_tokens, template(options.prompt))


def asks(reply: str) -> bool:
    """Whether the assistant's reply asks the user something (the prompting baseline's decision)."""
    return reply.strip().endswith("?")


def prompting_writer(generator, max_new_tokens: int, tpl: templates.Template):
    """One generation under the clarification-inviting preamble; the reply is the CQ when it is a
    question, else nothing is asked (its answer comes from ``cq answer --mode dialogue --preamble
    prompting``: the same greedy prompt)."""
    from .gen_cq import CQWriter, free_form

    method = "clam-prompting"

    def run(records):
        texts = [answer_prompt(tpl, r["question"], "prompting") for r in records]
        raw = generator.generate(texts, max_new_tokens=max_new_tokens, chat=False, stop=ANSWER_STOP)
        return [free_form(g, method) if asks(g) else None for g in raw]

    return CQWriter(method, run, _info(generator, tpl, method=method, max_new_tokens=max_new_tokens))


# --- the oracle user (§4) ---------------------------------------------------------------------------

@dataclass(frozen=True)
class OracleOptions:
    """CLAM's oracle: the model writes the user's reply from the intended question, the question and the CQ's text (never picks an option)"""

    model: str = llm_option()
    max_new_tokens: int = option(32, "tokens of the reply", min=1)
    prompt: str | None = prompt_option()


def clam_oracle(options: OracleOptions, config):
    from .oracle import SimulatedUser

    generator, tpl = _generator(options.model, config), template(options.prompt)
    tokens = options.max_new_tokens
    return SimulatedUser(NAME, functools.partial(written_replies, generator=generator, tpl=tpl, max_new_tokens=tokens),
                         _info(generator, tpl, method=NAME, max_new_tokens=tokens), generator)


def written_replies(turns, generator, tpl: templates.Template, max_new_tokens: int):
    """``[(None, reply)]``: a free reply per turn, written from the intended question, the ambiguous
    question and the CQ's text (options, if any were parsed, are not offered)."""
    texts = [tpl("oracle", intended=t.dq.strip(), question=t.question.strip(), cq=t.cq.strip()) for t in turns]
    raw = generator.generate(texts, max_new_tokens=max_new_tokens, chat=False, stop=["\n"]) if texts else []
    return [(None, " ".join(r.split()).strip(" \"'")) for r in raw]


# --- the final answer (Algorithm 1, lines 1 and 7) ------------------------------------------------------

def answer_prompt(tpl: templates.Template, question: str, preamble: str, cq: str | None = None,
                  reply: str | None = None, passages: str = "") -> str:
    context = tpl("passages", passages=passages) if passages else ""
    head = tpl.text("preamble_prompting" if preamble == "prompting" else "preamble")
    if cq is None:
        return tpl("answer", context=context, preamble=head, question=question.strip())
    return tpl("answer_dialogue", context=context, preamble=head, question=question.strip(), cq=cq.strip(),
               reply=(reply or "").strip())


@dataclass(frozen=True)
class DialogueOptions:
    """CLAM's final answer: an LM answers the conversation (question, the record's cq text, its clarification_answer), or the question alone when none was asked"""

    n_passages: int = option(0, "top passages shown before the conversation (0: closed-book, as in CLAM)", min=0,
                             flag="--passages")
    max_new_tokens: int = option(ANSWER_TOKENS, "tokens of the answer", min=1)
    preamble: str = option("default", "the conversation preamble: default, or prompting (the prompting baseline's, "
                                      "which invites clarification)", choices=("default", "prompting"))
    prompt: str | None = prompt_option()


def dialogue_mode(options: DialogueOptions, config, *, model: str | None, seed, **context):
    from ..models.roles import role

    generator = _generator(model or role("detector").default, config)
    tpl = template(options.prompt)
    n_passages, tokens, preamble = options.n_passages, options.max_new_tokens, options.preamble
    info = _info(generator, tpl, mode="dialogue", passages=n_passages, max_new_tokens=tokens, preamble=preamble,
                 seed=seed)
    return functools.partial(dialogue_batch, generator=generator, tpl=tpl, n_passages=n_passages,
                             max_new_tokens=tokens, preamble=preamble, info=info)


def dialogue_turns(record: dict) -> tuple[str | None, str | None]:
    """(CQ text, user's reply) of a clarified record; (None, None) when nothing was asked."""
    cq = record.get("cq")
    if cq is None:
        return None, None
    text = cq.get("text") if isinstance(cq, dict) else cq
    reply = record.get("clarification_answer")
    if reply is None:
        raise InputError(f"record {record.get('id')} has a 'cq' but no 'clarification_answer'; run `cq oracle` "
                         "(or set the user's reply) first", record_id=record.get("id"))
    return str(text or ""), str(reply)


def dialogue_batch(records: list[dict], generator, tpl, n_passages: int, max_new_tokens: int, preamble: str,
                   info: dict) -> list[dict]:
    texts = []
    for record in records:
        cq, reply = dialogue_turns(record)
        shown = passage_block(record.get(PASSAGES) or [], n_passages, 600) if n_passages else ""
        if n_passages and not record.get(PASSAGES):
            raise InputError(f"record {record.get('id')} has no passages; run cq retrieve first, or --passages 0 "
                             "(closed-book, as in CLAM)", record_id=record.get("id"))
        texts.append(answer_prompt(tpl, record["question"], preamble, cq, reply, shown))
    raw = generator.generate(texts, max_new_tokens=max_new_tokens, chat=False, stop=ANSWER_STOP)
    for record, text in zip(records, raw):
        record[ANSWERS] = [{"text": text.strip(), "dialogue": record.get("cq") is not None}]
        set_meta(record, "answer", info)
    return records
