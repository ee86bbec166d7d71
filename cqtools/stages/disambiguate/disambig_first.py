"""AmbigQA's DISAMBIG-FIRST baseline, steps 1-2 (``--method disambig-first``): a question ``cq detect`` labelled
ambiguous is rewritten into its readings closed-book (no passages, no answers); any other keeps its question as its
one DQ. DQs carry no answer (step 3: ``cq answer --mode dqs``)."""
from __future__ import annotations

from dataclasses import dataclass

from ...errors import InputError
from ...metrics.normalize import normalize_answer
from ...registry import option
from .. import prompts_disamb as P, templates
from ..options import CommandSettings
from ..templates import Template
from .parsing import LIST_MARKER, clean_question, dq_writer, model_option, template_option, tokens_option

@dataclass(frozen=True)
class DisambigFirstOptions:
    """AmbigQA's DISAMBIG-FIRST: closed-book DQs (no answers) for the questions cq detect labelled ambiguous; the others keep their question (then cq answer --mode dqs)"""

    model: str = model_option()
    max_new_tokens: int = tokens_option(128)
    prompt: str | None = template_option()

    @property
    def new_tokens(self) -> int:
        return self.max_new_tokens

    def params(self) -> dict:
        return {"method": "disambig-first", "max_new_tokens": self.new_tokens}


NEED_AMBIGUITY = ("run `cq detect` first (AmbigQA's DISAMBIG-FIRST: `cq detect --method classifier --passages 0`): "
                  "--method disambig-first rewrites only the questions it labels ambiguous")


def parse_readings(raw: str, question: str) -> list[str]:
    """Numbered (or bulleted) lines of a generation -> distinct questions, each cut after its "?";
    an echo of ``question``, a repeat, or a line of fewer than 3 words is dropped."""
    seen = {normalize_answer(question)}
    out = []
    for line in raw.splitlines():
        text = clean_question(LIST_MARKER.sub("", line.strip())) if line.strip() else ""
        key = normalize_answer(text)
        if len(text.split()) >= 3 and key and key not in seen:
            seen.add(key)
            out.append(text)
    return out


def ambiguity_label(record: dict) -> bool:
    amb = record.get("ambiguity")
    if not isinstance(amb, dict) or not isinstance(amb.get("label"), bool):
        raise InputError(f"record {record.get('id')} has no ambiguity label; {NEED_AMBIGUITY}",
                         record_id=record.get("id"))
    return amb["label"]


def disambig_first_batch(records: list[dict], generator, config: DisambigFirstOptions,
                         tpl: Template | None = None) -> list[tuple[list[dict], int]]:
    """(dqs, model calls) per record: a question the detector labelled ambiguous is rewritten into
    its readings closed-book (the question alone: no passages, no answers), one prompt; any other
    keeps its question as its single DQ (``"unchanged": true``). DQs carry no answer: ``cq answer
    --mode dqs`` retrieves and reads for each. A generation with no usable reading keeps the question
    (``"fallback": true``)."""
    todo = [n for n, r in enumerate(records) if ambiguity_label(r)]
    primer = _tpl_text(tpl, "primer")
    prompts = [P.disambig_first_prompt(records[n]["question"], tpl) for n in todo]
    raw = generator.generate(prompts, max_new_tokens=config.new_tokens, chat=False,
                             stop=["\n\n", "Question:"]) if prompts else []
    out: list[tuple[list[dict], int]] = [([{"question": r["question"], "unchanged": True}], 0) for r in records]
    for n, generation in zip(todo, raw):
        question = records[n]["question"]
        readings = parse_readings(primer + generation, question)
        dqs = [{"question": q} for q in readings] or [{"question": question, "fallback": True,
                                                       "generated": generation.strip()}]
        out[n] = (dqs, 1)
    return out


def _tpl_text(tpl: Template | None, part: str) -> str:
    return (tpl or templates.builtin("disambig_first")).text(part)


def disambig_first_disambiguator(options: DisambigFirstOptions, run, *, seed: int = CommandSettings.seed, **context):
    """The batch function of ``--method disambig-first`` (the registry's factory)."""
    return dq_writer(disambig_first_batch, "disambig-first", options, run, seed)
