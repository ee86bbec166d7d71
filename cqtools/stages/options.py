"""Option fields several methods share (same flag, same meaning): each written once, here, and used as
a field default in the methods' options dataclasses (cqtools/registry.py ``option``)."""
from __future__ import annotations

from dataclasses import dataclass

from ..models.roles import LLM
from ..registry import option


@dataclass(frozen=True)
class CommandSettings:
    """Settings several commands share that are not a method's option: ``--seed`` is generated from here
    (cli/options.py) and the stages' ``build`` functions default to the same value."""

    seed: int = option(0, "Random seed.")
    reader: str = option("auto", "Reader (cq answer --reader): auto picks the extractive reader for a span "
                                 "(question-answering) model, else the generative one.")


# The ambiguity detector a newcomer meets: `cq chat` without --detect (ChatOptions, from the CLI and from Python),
# `make demo`, `cq detect` without --method and detect.build() (tests/test_first_contact.py checks they agree).
# Chosen by a measured comparison on held-out AmbigNQ dev questions (docs/benchmarks/first-contact.md): the
# shipped question-only classifier ranks them better (AUROC) than the diverse detector and the answer count.
DEFAULT_DETECTOR = "classifier"


def _template_file(path, where):
    """A --prompt file: bounded, UTF-8, ``{name}`` slots only, checked before any model loads."""
    from . import templates

    return templates.check_file(path)


def prompt_option():
    return option(None, "a prompt template file replacing cq's wording (its [[parts]]; see docs/methods.md)",
                  flag="--prompt", check=_template_file, metavar="FILE")


def llm_option(help: str = "a causal LM", env: str | None = None):
    return option(LLM, help, env=env)


def passages_option(default: int | None = 3, help: str = "top passages shown to the model (0: none)", min: int = 0):
    return option(default, help, min=min, flag="--passages")


def tokens_option(default: int | None = 40, help: str = "tokens generated"):
    return option(default, help, min=1)


def with_answers_option():
    return option(None, "add answers to the input after the question: pred = the record's `answers` (cq answer "
                        "--mode multi), gold = gold.answers (upper bound)", choices=("pred", "gold"))


def cq_passage_budget_option():
    return option(None, "read whole passages in order while the question, the answers and they fit this many "
                        "tokens, at most --passages of them (count noted in meta.passages_read.gen-cq) [default: "
                        "unset, each passage cut to 60 words]", min=1)


def passage_cut_option():
    return option("whole", "with a token budget: whole (passages that fit, whole) or last (the first passage that "
                           "does not fit is read too, cut where the budget is full, as AmbigQA's and AskCQ's "
                           "releases cut their input)", choices=("whole", "last"))


def beams_option():
    return option(1, "beam search width (1: greedy; a local model only)", min=1)


def beam_args(generator, num_beams: int) -> dict:
    """``generate``'s beam argument, for every stage that takes :func:`beams_option`: none for 1 (greedy, as
    always); a generator whose ``generate`` takes no ``num_beams`` (an OpenAI-compatible server) cannot search
    beams: a one-line error."""
    import inspect

    from ..errors import InputError

    if num_beams <= 1:
        return {}
    if "num_beams" not in inspect.signature(generator.generate).parameters:
        raise InputError(f"{getattr(generator, 'name', 'this model')} cannot search beams (num_beams={num_beams}): "
                         "an API model decodes greedily; use a local model or --num-beams 1")
    return {"num_beams": num_beams}


def two_options_option():
    return option("or", "how a CQ with two options is written: or (\"A or B\") or comma (\"A, or B\", AskCQ's; its "
                        "parser reads \"A or B\" as one option)", choices=("or", "comma"))


def cq_options_option():
    return option("all", "which options to keep: all, or grounded (every word found in the question or the "
                         "passages read; others listed in cq.dropped.ungrounded)", choices=("all", "grounded"))


def reranker_option(default: str | None, help: str):
    return option(default, help, env="CQ_MODEL_RERANKER")


def encoder_option(help: str):
    return option(None, help, env="CQ_MODEL_ENCODER")
