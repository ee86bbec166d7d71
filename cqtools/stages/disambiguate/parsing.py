"""What the disambiguation methods share: parsing generations, the record keys, the option fields of
the same name (each written once here), and writing ``dqs`` with ``meta.disambiguate``."""
from __future__ import annotations

import re

from ...models.roles import role
from ...records import require, set_meta
from ...registry import option
from ..options import llm_option, prompt_option

DEFAULT_MODEL = role("disambiguator").default
DQS = "dqs"
TREE = "tree"
NEED_PASSAGES = "run `cq retrieve` (and `cq rerank`) first, or pass --passages 0"


def model_option():
    return llm_option()


def passages_option():
    return option(5, "top passages in each prompt (0: none)", min=0, flag="--passages")


def passage_words_option():
    return option(80, "each passage cut to its first this-many words", min=10)


def tokens_option(default: int):
    return option(default, "generation length", min=1)


def template_option():
    return prompt_option()


# --- parsing generations -------------------------------------------------------------------------

LIST_MARKER = re.compile(r"^\s*(?:\d+\s*[.)]|[-*•]|DQ\s*\d*\s*:|Q\s*\d*\s*:)\s*", re.I)
_PAIR = re.compile(r"^(?P<q>.+?\?)\s*(?:\(?\s*(?:answer|a)\s*[:=-]\s*)?(?P<a>.*)$", re.I)
_ANSWER_TAG = re.compile(r"\s*\b(?:answer|a)\s*:\s*", re.I)


def clean_short(text: str, max_words: int = 10) -> str:
    """A generated short answer: first clause, no quotes, no trailing punctuation; '' if too long."""
    text = text.strip().strip("\"'`*()[]").strip()
    text = re.sub(r"[.!;,:)\]]+$", "", text).strip().strip("\"'`*").strip()
    return text if 0 < len(text.split()) <= max_words else ""


def parse_pairs(raw: str) -> list[tuple[str, str]]:
    """"1. DQ? Answer: A" lines -> [(DQ, A)]; lines without a question mark and an answer are dropped."""
    pairs = []
    for line in raw.splitlines():
        line = LIST_MARKER.sub("", line.strip())
        if not line:
            continue
        match = _PAIR.match(line)
        if match:
            question, answer = match.group("q").strip(), match.group("a")
        elif _ANSWER_TAG.search(line):  # "DQ Answer: A" without a question mark
            question, answer = _ANSWER_TAG.split(line, maxsplit=1)
            question = question.strip().rstrip(".") + "?"
        else:
            continue
        answer = clean_short(_ANSWER_TAG.sub("", answer, count=1))
        question = question.strip(" \"'`*")
        if answer and len(question.split()) >= 3:
            pairs.append((question, answer))
    return pairs


def clean_question(raw: str) -> str:
    """First line of a generation, cut after its first "?" (one added if missing)."""
    lines = [x.strip() for x in raw.strip().splitlines() if x.strip()]
    if not lines:
        return ""
    line = re.sub(r"^(?:rewritten question|question)\s*:\s*", "", lines[0], flags=re.I).strip(" \"'`*")
    cut = line.find("?")
    line = line[: cut + 1] if cut >= 0 else line.rstrip(".") + "?"
    return line.strip(" \"'`*")


def write_dqs(records: list[dict], results, info: dict) -> list[dict]:
    """``dqs`` and ``meta.disambiguate`` (the run's settings, its model calls, fallbacks) of qd and
    disambig-first: ``results`` holds (dqs, model calls) per record."""
    for record, (dqs, calls) in zip(records, results):
        record[DQS] = dqs
        set_meta(record, "disambiguate", {**info, "model_calls": calls,
                                          "fallbacks": sum(bool(d.get("fallback")) for d in dqs)})
    return records


def require_questions(records: list[dict]) -> None:
    for record in records:
        require(record, "question", "every record needs a question")


def dq_writer(batch, method: str, options, run, seed: int):
    """The batch function of a method that writes DQs and no tree (qd, disambig-first): ``batch(records,
    generator, options, tpl)`` gives (dqs, model calls) per record, written with ``meta.disambiguate``."""
    import functools

    generator, tpl = loaded(options.model, run, seed, method, options.prompt)
    return functools.partial(_write, batch=batch, generator=generator, options=options,
                             info=method_info(generator, options, seed, tpl), tpl=tpl)


def _write(records: list[dict], batch, generator, options, info: dict, tpl) -> list[dict]:
    require_questions(records)
    return write_dqs(records, batch(records, generator, options, tpl), info)


def method_info(generator, options, seed: int, tpl) -> dict:
    """``meta.disambiguate``'s settings of a run: the model's, the method's options, the seed, the template."""
    from .. import templates

    return {**generator.info, **options.params(), "seed": seed, **templates.meta(tpl)}


def loaded(model: str, run, seed: int, method: str, prompt: str | None):
    """(generator, template) of a method: the seed set first, the model loaded once per process."""
    from ...models.load import load_generator
    from ...models.load import set_seed
    from .. import templates

    set_seed(seed)
    return load_generator(model, run.device, run.dtype, config=run), templates.load(method.replace("-", "_"), prompt)


FIRST_REPEATED = "first-repeated"  # the released QD input's passages (QGData.py:316-322 @5c8cdb1)


def repeated_first(passages: list[dict], order: str = "reranked") -> list[dict]:
    """The passages in ``order``: as given (``reranked``) or, ``first-repeated``, the first one over and over, as
    AmbigQA's released QD input at 5c8cdb1 is built (QGData.py:316-322: the loop that appends passages until 1,024
    tokens never advances its offset; a bug against the paper's §5, kept here only on request)."""
    return passages[:1] * max(len(passages), 1024) if order == FIRST_REPEATED else passages
