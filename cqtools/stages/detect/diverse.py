"""``cq detect --method diverse``: the classifier, and answer diversity beside it.

AskCQ compares two detectors: a classifier over the question and its passages (No Answers) and
"ambiguous iff the QA model predicts more than one answer" (Predicted Answers). ``diverse`` asks both:
the score is the classifier's P(ambiguous) when the reader's answers give at least two supported
interpretations, and 0 otherwise. Supported answers are those ``cq gen-cq --method pred-answers``
would offer as options (:func:`cqtools.stages.gen_cq.answers.supported_answers`: one per passage, from
passages the reranker scored at least ``min_rerank_score``), so a question is called ambiguous only
when there is something to ask. Records without ``answers`` get them read by the installed
extractive reader (multi mode), as in pred-answers; the records keep no ``answers`` key.

Where cq differs from AskCQ: AskCQ uses either signal alone; this conjunction is cq's.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...registry import option
from . import ClassifierOptions, ScoredDetector, classifier_detector, threshold_option
from ..gen_cq.answers import ReadAnswers, supported_answers


@dataclass(frozen=True)
class DiverseOptions:
    """the classifier's P(ambiguous) when the reader's answers give two supported options or more, else 0 (AskCQ's two detectors together)"""

    model: str | None = option(None, "a `cq train detect` directory [default: as classifier]")
    n_passages: int | None = option(None, "top passages shown to the classifier [default: as classifier]", min=0,
                                    flag="--passages")
    threshold: float | None = threshold_option(None, "the classifier's")
    min_rerank_score: float | None = option(0.0, "answers read from a passage the reranker scored under this do not "
                                                 "count")


def diverse_detector(options: DiverseOptions, config=None) -> ScoredDetector:
    threshold, min_rerank_score = options.threshold, options.min_rerank_score
    classifier = classifier_detector(ClassifierOptions(options.model, options.n_passages, threshold), config)
    reader = ReadAnswers(config)

    def score(records):
        probs = classifier.score(records)
        counts = [len(supported_answers(r, None, min_rerank_score)) for r in reader.with_answers(records)]
        return [p if n >= 2 else 0.0 for p, n in zip(probs, counts)]

    info = {**classifier.info, "method": "diverse", "min_rerank_score": min_rerank_score,
            "answers": "the record's, else read by the installed extractive reader (multi mode)"}
    return ScoredDetector("diverse", score, classifier.threshold, info)
