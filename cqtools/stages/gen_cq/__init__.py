"""Clarifying-question generation: ``cq: {text, category, options, method, valid}`` per record.

Every method ends in the CAmbigNQ form "Which [category]: [opt1], [opt2], or [optN]?" (two
options: "A or B"), parsed with the scorer's own parser (:func:`cqtools.metrics.cq.parse_cq`),
except ``llm --zero-shot`` whose free-form text is kept as the model wrote it (unless an option is
dropped: then it is re-written in the canonical form from the options kept).

Options are distinct (:mod:`cqtools.stages.gen_cq.form`: a repeat is dropped, listed under
``cq.dropped.repeated``). The model methods (llm, seq2seq) also mark each option ``grounded`` in
what the model read: :func:`grounded`. ``options="grounded"`` (``cq gen-cq --options grounded``)
drops the others (listed under ``cq.dropped.ungrounded``); the default ``all`` keeps them.

Methods (the CQ_METHODS registry, cqtools/registry.py; plugins add more; :func:`build` assembles
the stage from Python):
  llm        few-shot prompt over the question and its top passages (CAmbigNQ style);
             with zero_shot: CLAM's "... I have to ask the following clarifying question:"
  seq2seq    a fine-tuned generator (``cq train gen-cq``) over "AQ [SEP] (answers [SEP]) passages"
  from-dqs   a silver CQ built from gold disambiguated questions: reads ``gold`` by design
             (an upper bound, and the training-data builder of ``cq train gen-cq``)

AskCQ's inputs (``with_answers`` pred/gold, passages up to ``max_passage_tokens``, ``num_beams``) are
options of llm and seq2seq; clam and clam-prompting take no answers (CLAM's prompts are closed-book and
show the question alone), and from-dqs reads gold DQs, not answers.
"""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from typing import Callable

from ...errors import InputError
from ...models.roles import role
from ...metrics.cq import parse_cq
from ...records import GOLD, answer_texts as predicted_answer_texts, set_meta
from ...records import passage_snippets as record_snippets
from ...registry import CQ_METHODS, non_default, option
from .. import evidence, prompts, templates
from ..common import stage_fn
from .grounding import OPTIONS, check_options, ground, grounded, shown_words  # noqa: F401
from ..options import (beam_args, beams_option, cq_options_option, cq_passage_budget_option, llm_option,
                       passages_option, prompt_option, tokens_option, two_options_option, with_answers_option)
from .form import (INVALID, canonical_cq, canonical_head, distinct, extract_options, first_question,
                      in_form, make_cq, repair, which)
from .form import format_cq  # noqa: F401  (re-exported, as before the split)
from .silver import cq_from_dqs, gold_dq_questions
from .why import NO_CQ, no_cq_reason  # noqa: F401  (NO_CQ: the key, re-exported for callers)

SEP = " [SEP] "
DEFAULT_LLM = role("generator").default
CAUSAL_SUFFIX = "\nClarifying question:"  # what a fine-tuned causal LM continues with its CQ
PASSAGE_WORDS = 60  # each passage's text is cut to this many words in prompts and seq2seq inputs (no option)
LAYOUTS = ("cq", "askcq")  # seq2seq input: "AQ [SEP] answers [SEP] passages", or AskCQ's (CQDataset.py)


# --- passages and answers as model input -------------------------------------------------------

def passage_snippets(record: dict, n: int, words: int = PASSAGE_WORDS) -> list[str]:
    """Top ``n`` passages as "title: text" cut to ``words`` words (:func:`cqtools.records.passage_snippets`)."""
    return record_snippets(record, n, words)


def answer_texts(record: dict, source: str | None) -> list[str] | None:
    """Answers for the input: ``pred`` = the record's ``answers`` (cq answer), ``gold`` = gold.answers
    (the paper's ground-truth-answers upper bound; read only when asked for explicitly)."""
    if source is None:
        return None
    if source == "gold":
        clusters = (record.get(GOLD) or {}).get("answers")
        if clusters is None:
            raise InputError(f"record {record.get('id')} has no gold.answers; --with-answers gold needs gold "
                             "from cq convert")
        return [c[0] if isinstance(c, list) else str(c) for c in clusters if c]
    return predicted_answer_texts(record, "run cq answer --mode multi first, or drop --with-answers", raw=True)


def seq2seq_input(question: str, snippets: list[str], answers: list[str] | None = None) -> str:
    """"AQ [SEP] passages" or "AQ [SEP] answers [SEP] passages" (cq's layout of the AskCQ inputs)."""
    parts = [question.strip()]
    if answers is not None:
        parts.append(" | ".join(answers))
    parts.append(" ".join(snippets))
    return SEP.join(parts)


def special_tokens(generator) -> tuple[str, str, str]:
    """(sep, bos, eos) of the generator's tokenizer, as AskCQ's input layout writes them (BART: "</s>",
    "<s>", "</s>"); a tokenizer without them cannot take that layout."""
    tok = getattr(generator, "tokenizer", None)
    found = tuple(getattr(tok, name, None) for name in ("sep_token", "bos_token", "eos_token"))
    if not all(found):
        raise InputError(f"input layout askcq needs a tokenizer with sep, bos and eos tokens (BART's); "
                         f"{getattr(generator, 'name', 'the model')} has {found}: use --input-layout cq")
    return found


def askcq_input(question: str, snippets: list[str], answers: list[str] | None, tokens: tuple[str, str, str]) -> str:
    """AskCQ's CQ-generation input (CQDataset.py ``CQGDataset.process_data``) as text: the question and
    each answer followed by the separator, then each passage encoded on its own ("<s>passage</s>"); the
    tokenizer adds the first "<s>" and the last "</s>" itself (BART: "<s>AQ</s>A1</s>A2</s></s><s>P1</s><s>P2</s>")."""
    sep, bos, eos = tokens
    head = question + sep + "".join(a.strip() + sep for a in answers or [])
    return head + "".join(eos + bos + s for s in snippets)


def model_input(record: dict, build_input, n_passages: int, max_tokens: int | None, count,
                with_answers: str | None) -> tuple[str, list[str], list[str] | None]:
    """(input, passages read, answers) of ``record`` for a fine-tuned generator: what ``cq gen-cq --method seq2seq``
    generates from and ``cq train gen-cq`` trains on, one function for both (the passages as :func:`read_passages`
    chooses them, the text as ``build_input`` (:func:`input_builder`) lays it out)."""
    answers = answer_texts(record, with_answers)
    snippets = read_passages(record, n_passages, max_tokens, count, [record["question"], *(answers or [])])
    return build_input(record["question"], snippets, answers), snippets, answers


def record_passages(record: dict) -> list[dict]:
    passages = record.get("passages") or []
    if not isinstance(passages, list) or not all(isinstance(p, dict) for p in passages):
        raise InputError(f"record {record.get('id')}: 'passages' must be a list of {{title, text}} objects "
                         "(from cq retrieve)")
    return passages


def read_passages(record: dict, n_passages: int, max_tokens: int | None, count, taken: list[str]) -> list[str]:
    """What the model reads of the record's passages: the top ``n_passages`` cut to :data:`PASSAGE_WORDS`
    words each (``max_tokens`` None, as always), or whole passages in order while the question and the
    answers (``taken``) and they fit ``max_tokens`` tokens (at most ``n_passages``; :func:`evidence.fit`),
    their number noted in ``meta.passages_read.gen-cq``."""
    if max_tokens is None:
        return passage_snippets(record, n_passages)
    # the input's special tokens count too: a separator after the question and each answer, <s> and </s>
    # around the whole input and around each passage (AskCQ's layout; cq's uses no more)
    used = sum(count(t) for t in taken) + len(taken) + 2
    chosen = evidence.fit(record_passages(record), max_tokens, lambda text: count(text) + 2, used=used,
                          limit=n_passages) \
        if n_passages else []
    evidence.note_read(record, "gen-cq", len(chosen))
    return [evidence.passage_text(p) for p in chosen]


# --- generators ---------------------------------------------------------------------------------

@dataclass
class CQWriter:
    """One way of writing CQs: ``run(records) -> list of cq dicts``, plus what goes into meta."""

    name: str
    run: Callable[[list[dict]], list[dict]]
    info: dict = field(default_factory=dict)


@dataclass(frozen=True)
class FromDqsOptions:
    """silver CQ built from gold.dqs (reads gold: an upper bound / training data)"""

    two_options: str = two_options_option()


def from_dqs_method(options: FromDqsOptions = FromDqsOptions(), config=None) -> CQWriter:
    two_options = options.two_options

    def run(records):
        out = []
        for record in records:
            category, options = cq_from_dqs(record["question"], gold_dq_questions(record))
            if not options:  # unambiguous in the gold: there is nothing to ask
                out.append(None)
                continue
            out.append(in_form(canonical_cq(which(category), options, "from-dqs"), two_options))
        return out

    return CQWriter("from-dqs", run, {"method": "from-dqs", "reads": "gold.dqs", **non_default(options, "two_options")})


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
    num_beams: int = beams_option()
    primer: bool = option(True, "end the few-shot prompt with the CQ's first word (\"Which\"); off: the model writes "
                                "the whole CQ, other heads (\"In which ...\") included", flag="--primer/--no-primer")
    two_options: str = two_options_option()


@dataclass(frozen=True)
class Seq2SeqOptions:
    """a generator from `cq train gen-cq` (AskCQ)"""

    model: str | None = option(None, "a `cq train gen-cq` directory (required)")
    n_passages: int = passages_option()
    with_answers: str | None = with_answers_option()
    max_new_tokens: int = tokens_option()
    options: str = cq_options_option()
    max_passage_tokens: int | None = cq_passage_budget_option()
    num_beams: int = beams_option()
    input_layout: str | None = option(None, "cq: \"AQ [SEP] A1 | A2 [SEP] passages\"; askcq: AskCQ's CQDataset.py "
                                            "layout (question, each answer, each passage closed by the tokenizer's "
                                            "separators; BART's) [default: the layout the model was trained on, its "
                                            "cq_train.json]", choices=("cq", "askcq"))
    two_options: str = two_options_option()


def load_llm_method(options: LlmOptions, config) -> CQWriter:
    from ...models.load import load_generator

    return llm_method(load_generator(options.model, config.device, config.dtype, config=config), options,
                      prompts.gencq_template(options.prompt))


def load_seq2seq_method(options: Seq2SeqOptions, config) -> CQWriter:
    """``input_layout`` None: the layout the model was trained on (its cq_train.json), else cq's."""
    if not options.model:
        raise InputError("--method seq2seq needs --model DIR from `cq train gen-cq`")
    from ...models.load import load_generator

    generator = load_generator(options.model, config.device, config.dtype, config=config)
    if options.input_layout is None:
        from ...models.roles import trained_config

        layout = trained_config(os.path.expanduser(options.model)).get("input_layout") or "cq"
        options = dataclasses.replace(options, input_layout=layout)
    return seq2seq_method(generator, options)


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
        snippets = [read_passages(r, n_passages, budget, count, [r["question"], *(a or [])])
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
                                **non_default(o, "with_answers", "max_passage_tokens", "num_beams", "primer",
                                              "two_options"),
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


def seq2seq_method(generator, options: Seq2SeqOptions = Seq2SeqOptions()) -> CQWriter:
    """A fine-tuned generator (see :mod:`cqtools.train`): a seq2seq model reads the input
    itself, a causal LM reads it followed by :data:`CAUSAL_SUFFIX`; output repaired like ``llm``'s,
    options grounded in its input (question, passages and, with ``with_answers``, the answers).
    ``input_layout`` "askcq" writes the input as AskCQ's CQDataset.py does (:func:`askcq_input`; None: cq's)."""
    o = options
    suffix = CAUSAL_SUFFIX if generator.kind == "causal" else ""
    check_options(o.options)
    build_input = input_builder(generator, o.input_layout or "cq")
    count = evidence.token_counter(generator) if o.max_passage_tokens is not None else None
    beams = beam_args(generator, o.num_beams)

    def run(records):
        built = [model_input(r, build_input, o.n_passages, o.max_passage_tokens, count, o.with_answers) for r in records]
        inputs = [text + suffix for text, _, _ in built]
        snippets, answers = [s for _, s, _ in built], [a for _, _, a in built]
        raw = generator.generate(inputs, max_new_tokens=o.max_new_tokens, chat=False, stop=["\n"], **beams)
        return [in_form(ground(repair(g, "seq2seq"), [r["question"], *s, *(a or [])], o.options), o.two_options)
                for g, r, s, a in zip(raw, records, snippets, answers)]

    meta_layout = {"input_layout": o.input_layout} if (o.input_layout or "cq") != "cq" else {}
    return CQWriter("seq2seq", run, {"method": "seq2seq", **dict(generator.info), "passages": o.n_passages,
                                     "with_answers": o.with_answers, "max_new_tokens": o.max_new_tokens,
                                     "options": o.options,
                                     **non_default(o, "max_passage_tokens", "num_beams"), **meta_layout,
                                     **non_default(o, "two_options")})


def input_builder(generator, layout: str):
    """``(question, passages, answers) -> input text`` for the input layout (:data:`LAYOUTS`)."""
    if layout not in LAYOUTS:
        raise InputError(f"input_layout={layout!r}: use one of {', '.join(LAYOUTS)} (--input-layout)")
    if layout == "cq":
        return seq2seq_input
    tokens = special_tokens(generator)
    return lambda question, snippets, answers: askcq_input(question, snippets, answers, tokens)


# --- the stage ------------------------------------------------------------------------------

def needs_cq(record: dict) -> bool:
    """True unless ``cq detect`` judged the record unambiguous (no ``ambiguity`` = ambiguous)."""
    ambiguity = record.get("ambiguity")
    if ambiguity is None:
        return True
    if not isinstance(ambiguity, dict) or "label" not in ambiguity:
        raise InputError(f"record {record.get('id')}: 'ambiguity' must be {{label, score, method}} from cq detect")
    return bool(ambiguity["label"])


def takes_options(method: str) -> bool:
    """Whether CQ method ``method`` takes ``options`` (llm, seq2seq; a plugin's if it declares it):
    from-dqs reads gold DQs, and a method that would ignore ``options="grounded"`` must refuse it."""
    return CQ_METHODS.get(method).option("options") is not None


def default_method(model: str | None) -> str:
    """The CQ writer of `cq gen-cq` and `cq chat` when none is named: an LM writes the CQ when one is named
    (llm), else the grounded template over the reader's answers (pred-answers: no free text from a small LM)."""
    return "llm" if model else "pred-answers"


def build(method: str | None = None, all_records: bool = False, config=None,
          **settings) -> Callable[[list[dict]], list[dict]]:
    """The gen-cq stage as a batch function (records -> records), e.g. ``build("from-dqs", all_records=True)``
    or ``build("llm", model=..., options="grounded")``; ``settings`` are the method's options (its
    schema; a misspelled one is an error). No ``method``: `cq gen-cq`'s rule (:func:`default_method`: llm when
    ``model`` names one, else pred-answers)."""
    method = method or default_method(settings.get("model"))
    return stage_fn(gen_cq_batch, "gen-cq", method, CQ_METHODS, config, settings, "method", all_records=all_records)


def gen_cq_batch(records: list[dict], method: CQWriter, all_records: bool) -> list[dict]:
    todo = [r for r in records if all_records or needs_cq(r)]
    cqs = method.run(todo) if todo else []
    made = {id(r): cq for r, cq in zip(todo, cqs)}
    for record in records:
        record["cq"] = made.get(id(record))
        if id(record) in made and record["cq"] is None and needs_cq(record):
            record[NO_CQ] = no_cq_reason(record, method.info.get("method") or "the CQ writer")
        set_meta(record, "gen_cq", method.info)
    return records

