"""``--method llm``: few-shot prompting (CAmbigNQ style) or CLAM's zero-shot prompt of a language model, and the
reading of what it writes (:func:`primed`, :func:`free_form`)."""
from __future__ import annotations

from dataclasses import dataclass

from ...errors import InputError
from ...metrics.cq import parse_cq
from ...models.roles import role
from ...registry import non_default, option
from .. import evidence, prompts, templates
from ..options import (beam_args, beams_option, cq_options_option, cq_passage_budget_option, llm_option,
                       passage_cut_option, passages_option, prompt_option, tokens_option, two_options_option,
                       with_answers_option)
from .form import (INVALID, CQWriter, canonical_cq, canonical_head, distinct, extract_options, first_question,
                   in_form, make_cq, repair, which)
from .grounding import check_options, ground
from .inputs import answer_texts, read_passages

DEFAULT_LLM = role("generator").default


@dataclass(frozen=True)
class LlmOptions:
    """few-shot prompt (CAmbigNQ style), or CLAM's zero-shot one"""

    model: str = llm_option()
    n_passages: int = passages_option()
    zero_shot: bool = option(False, "CLAM's zero-shot prompt; the free-form CQ is kept as written")
    max_new_tokens: int = tokens_option()
    options: str = cq_options_option()
    prompt: str | None = prompt_option()
    with_answers: str | None = with_answers_option()
    max_passage_tokens: int | None = cq_passage_budget_option()
    passage_cut: str = passage_cut_option()
    num_beams: int = beams_option()
    primer: bool = option(True, "end the few-shot prompt with the CQ's first word (\"Which\"); off: the model writes "
                                "the whole CQ, other heads (\"In which ...\") included", flag="--primer/--no-primer")
    two_options: str = two_options_option()


def load_llm_method(options: LlmOptions, config) -> CQWriter:
    from ...models.load import load_generator

    return llm_method(load_generator(options.model, config.device, config.dtype, config=config), options,
                      prompts.gencq_template(options.prompt))


def llm_method(generator, options: LlmOptions = LlmOptions(), tpl: templates.Template | None = None) -> CQWriter:
    """Few-shot (CAmbigNQ style) or zero-shot (CLAM) prompting of a :class:`Generator`; options
    grounded in the question, the answers and the passages shown (:func:`ground`). ``with_answers``
    shows the record's predicted (``pred``) or gold answers after the question (AskCQ's inputs; the
    few-shot examples then show theirs); ``primer`` False ends the few-shot prompt at "Clarifying
    question:" so the model may write any head ("In which ...")."""
    o = options
    zero_shot, with_answers, n_passages, budget = o.zero_shot, o.with_answers, o.n_passages, o.max_passage_tokens
    name = "llm-zero-shot" if zero_shot else "llm"
    check_options(o.options)
    tpl = tpl or prompts.gencq_template()
    if with_answers is not None and "answers" not in templates.slots(tpl.text("zero_shot" if zero_shot else "query")):
        raise InputError(f"--with-answers {with_answers}: the prompt template's "
                         f"[[{'zero_shot' if zero_shot else 'query'}]] part has no {{answers}} slot; add one")
    prefix = "" if zero_shot else prompts.gencq_prefix(tpl, answers=with_answers is not None)
    word = prompts.gencq_primer(tpl) if o.primer else ""
    count = evidence.token_counter(generator) if budget is not None else None
    beams = beam_args(generator, o.num_beams)

    def run(records):
        answers = [answer_texts(r, with_answers) for r in records]
        snippets = [read_passages(r, n_passages, budget, count, [r["question"], *(a or [])],
                                  o.passage_cut == "last")
                    for r, a in zip(records, answers)]
        if zero_shot:
            texts = [prompts.zero_shot_prompt(r["question"], s, tpl, a)
                     for r, s, a in zip(records, snippets, answers)]
        else:
            texts = [prefix + prompts.gencq_prompt(r["question"], s, tpl, a, o.primer)
                     for r, s, a in zip(records, snippets, answers)]
        raw = generator.generate(texts, max_new_tokens=o.max_new_tokens, chat=False, stop=["\n"], **beams)
        if zero_shot:
            cqs = [free_form(g, name) for g in raw]
        else:
            cqs = [repair(primed(g, word), name) for g in raw]
        return [in_form(ground(cq, [r["question"], *s, *(a or [])], o.options), o.two_options)
                for cq, r, s, a in zip(cqs, records, snippets, answers)]

    return CQWriter(name, run, {"method": name, "model": generator.name, **dict(generator.info),
                                "passages": n_passages, "max_new_tokens": o.max_new_tokens, "options": o.options,
                                **non_default(o, "with_answers", "max_passage_tokens", "passage_cut", "num_beams",
                                              "primer", "two_options"),
                                **templates.meta(tpl)})


def primed(generated: str, primer: str = prompts.GENCQ_PRIME) -> str:
    """The CQ the few-shot prompt's primer ("Which") begins, continued by ``generated``; a model that
    writes the primer again (chat models do) does not get it twice ("Which Which one: ...")."""
    word = primer.strip()
    if not word:
        return generated.strip()
    text = generated.lstrip()
    if text[:len(word)].lower() == word.lower() and text[len(word):len(word) + 1] in (" ", ""):
        text = text[len(word):].lstrip()
    return f"{word} {text}"


def free_form(raw: str, method: str) -> dict:
    """Zero-shot CQs stay as written; category/options filled where they can be read. One with a
    repeated option is re-written in the canonical form without it (:func:`form.canonical_cq`)."""
    text = first_question(raw)
    category, options = parse_cq(text) if text else (INVALID, [INVALID])
    head = canonical_head(category)
    if head and options and all(options):
        if distinct(options)[1]:
            return canonical_cq(head, options, method, raw=raw)
        return make_cq(text, category, options, method, len(options) >= 2, raw=raw)
    options = extract_options(text)
    if options:
        if distinct(options)[1]:
            cq = canonical_cq(which("one"), options, method, raw=raw)
            cq.update(valid=False, repaired=True)
            return cq
        return make_cq(text, "one", options, method, False, raw=raw, repaired=True)
    return make_cq(text, INVALID, [INVALID], method, False, raw=raw)
