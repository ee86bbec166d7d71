"""The answer modes' and readers' options, each field written once here (its default, help and limits) and
used by the declarations the registry reads (``SingleOptions`` ... ``GenerativeOptions``) and by the
stage's runtime settings (:class:`cqtools.stages.answer.AnswerConfig`), which hold the same fields."""
from __future__ import annotations

from dataclasses import dataclass

from ...models.roles import role
from ...registry import option
from ..options import beams_option, passage_cut_option, prompt_option, reranker_option
from ..rerank import DEFAULT_RERANKER

DEFAULT_READER = role("reader").default
READER_PASSAGES = 3  # top passages a reader reads when neither --passages nor a budget is given


def round_trip():
    return option(False, "REFUEL round trip: re-ask until no answer is new (see --round-trip-method)")


def round_trip_method():
    return option("title", "with --round-trip: title (cq's: re-ask each new answer's question as \"Q [title]\") or "
                           "refuel (REFUEL's: write a DQ for every answer, re-ask every DQ over the same passages; the "
                           "record gets the (DQ, answer) pairs as dqs)", choices=("title", "refuel"))


def max_rounds():
    return option(2, "cap on --round-trip rounds (refuel: passes after the first)", min=1)


def round_trip_match():
    return option("normalised", "--round-trip-method refuel: what makes an answer (and a (DQ, answer) pair) new: "
                                "normalised (its SQuAD-normalised text; cq's) or raw (its stripped string, as the "
                                "released code compares them)", choices=("normalised", "raw"))


def qd_model():
    return option(None, "--round-trip-method refuel: the LM that writes the DQs [default: the generative reader's "
                        "LM, else cq disambiguate's]")


def qd_layout():
    return option("ambigqa", "--round-trip-method refuel: the DQ writer's input, ambigqa (answer, question, every "
                             "other answer, passages; cq's) or refuel (answer, question, passages: REFUEL's "
                             "QGInferenceData.py:199)", choices=("ambigqa", "refuel"))


def qd_num_beams():
    return option(1, "--round-trip-method refuel: the DQ writer's beam search width (1: greedy; a local model only)",
                  min=1)


def qd_one_answer():
    return option("keep", "--round-trip-method refuel: a pass that found one answer keeps the prompt question as its "
                          "DQ (keep; cq disambiguate's rule) or has a DQ written for it (write, as the released code "
                          "writes one for every (question, answer) pair)", choices=("keep", "write"))


def verify():
    return option(False, "REFUEL LM verification: add verify_score = log p(answer | passages, question)")


def verify_rule():
    return option("threshold", "with --verify: threshold (cq's: drop answers scoring under --verify-threshold given "
                               "the question they answered, possibly all) or refuel (REFUEL's: score each (DQ, answer) "
                               "pair with the answer's end, keep each answer's best DQ, drop pairs at or under the "
                               "threshold, keep the best pair when none is left)", choices=("threshold", "refuel"))


def verifier_model():
    return option(None, "with --verify: a `cq train verifier` directory (REFUEL's LM verifier, a Fusion-in-Decoder "
                        "model trained on gold (DQ, answer) pairs) that scores the answers [default: the reader "
                        "scores its own answers]")


def verify_threshold():
    return option(-8.0, "with --verify, answers scoring below this are dropped")


def selected():
    return option(False, "answer only the record's \"selected_option\" (a user's or an oracle's)")


def revised():
    return option("cq", "how an option revises the question: cq (\"AQ, Which film: option\") or askcq (the release's "
                        "\"AQ Which film option?\", CQDataset.py:251)", choices=("cq", "askcq"))


def reranker():
    return reranker_option(DEFAULT_RERANKER, "cross-encoder that reranks the passages for each revised question (cq) "
                                             "or DQ (dqs)")


def rerank_depth():
    return option(20, "passages reranked per revised question (cq) or DQ (dqs)", min=1)


def index():
    return option(None, "the index to retrieve from for each DQ (as cq retrieve --index)", env="CQ_INDEX")


def retriever():
    return option("bm25", "the searcher (cq retrieve --method): bm25, dense or hybrid")


def hits():
    from ..retrieve import RetrieveSettings

    return option(RetrieveSettings.hits, "passages retrieved per DQ", min=1)


def passage_budget():
    return option(None, "evidence budget: read passages in order while the question and the passages fit this many "
                        "tokens of the reader's tokenizer (0: the reader model's whole input length; the "
                        "extractive reader reads each passage in an input of its own, so 0 reads every one); "
                        "replaces --passages, which then only caps the count [default: --passages]", min=0)


def min_rerank():
    from .support import min_rerank_option

    return min_rerank_option()


def reader_passages(help: str):
    return option(None, f"{help} [default: {READER_PASSAGES}]", min=1, flag="--passages")


def passage_cut():
    return passage_cut_option()


def passage_chars():
    return option(600, "each passage cut before this many characters (0: whole)", min=0)


def answer_tokens():
    return option(16, "tokens per answer (multi: three times as many)", min=1)


def grounding():
    return option("span", "snap answers to passage spans, or none", choices=("span", "none"))


def max_candidates():
    return option(30, "span grounding: spans scored when the generation is unusable", min=1)


@dataclass(frozen=True)
class SingleOptions:
    """one answer"""

    round_trip: bool = round_trip()
    round_trip_method: str = round_trip_method()
    max_rounds: int = max_rounds()
    round_trip_match: str = round_trip_match()
    qd_model: str | None = qd_model()
    qd_layout: str = qd_layout()
    qd_num_beams: int = qd_num_beams()
    qd_one_answer: str = qd_one_answer()
    verify: bool = verify()
    verify_rule: str = verify_rule()
    verify_threshold: float = verify_threshold()
    verifier_model: str | None = verifier_model()
    min_rerank_score: float | None = min_rerank()


@dataclass(frozen=True)
class MultiOptions(SingleOptions):
    """every distinct answer (AmbigQA)"""


@dataclass(frozen=True)
class CQModeOptions:
    """one answer per option of the record's "cq\""""

    selected: bool = selected()
    reranker: str = reranker()
    rerank_depth: int = rerank_depth()
    revised_question: str = revised()
    verify: bool = verify()
    verify_rule: str = verify_rule()
    verify_threshold: float = verify_threshold()
    min_rerank_score: float | None = min_rerank()


@dataclass(frozen=True)
class DqsOptions:
    """one answer per entry of the record's "dqs" (cq disambiguate), read from passages retrieved for that DQ (AmbigQA's DISAMBIG-FIRST)"""

    index: str | None = index()
    retriever: str = retriever()
    hits: int = hits()
    reranker: str = reranker()
    rerank_depth: int = rerank_depth()


@dataclass(frozen=True)
class LongOptions:
    """a long answer from the record's "dqs" (cq disambiguate; ToC)"""

    n_passages: int = option(5, "top passages in the prompt", min=1, flag="--passages")
    max_new_tokens: int = option(160, "tokens of the long answer", min=1)
    prompt: str | None = prompt_option()


@dataclass(frozen=True)
class ExtractiveReaderOptions:
    """a span model from `cq train reader` (--model DIR): the best-scoring passage spans, several distinct ones in multi mode"""

    model: str | None = option(None, "a span (question-answering) model")
    n_passages: int | None = reader_passages("top passages read per question")
    max_passage_tokens: int | None = passage_budget()
    span_order: str = option("rank", "which spans answer first: rank (each passage's best span, passages in the "
                                     "order given, i.e. reranked; then the rest by score), select (the same, passages "
                                     "in the order of the reader's selection head: cq train reader "
                                     "--selection-head) or score (by span score alone)",
                         choices=("rank", "select", "score"))
    question_spans: str = option("skip", "spans made only of the question's own words: skip or keep",
                                 choices=("skip", "keep"))
    type_prior: float = option(0.0, "answer-type prior: score taken off spans not of the kind the question asks for "
                               "(who: a name, when: a date, how many: a number); 0: off", min=0.0)


@dataclass(frozen=True)
class GenerativeOptions:
    """a prompted LM (causal or seq2seq), answers grounded in passage spans"""

    model: str = option(DEFAULT_READER, "a causal or seq2seq LM")
    kind: str = option("auto", "architecture (auto: from the model config)", choices=("auto", "causal", "seq2seq"))
    n_passages: int | None = reader_passages("top passages shown")
    passage_chars: int = passage_chars()
    max_new_tokens: int = answer_tokens()
    grounding: str = grounding()
    max_candidates: int = max_candidates()
    prompt: str | None = prompt_option()
    max_passage_tokens: int | None = passage_budget()
    passage_cut: str = passage_cut()
    num_beams: int = beams_option()
