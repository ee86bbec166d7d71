"""Two BLEUs, as the papers' scorers compute them.

* :func:`corpus_bleu` is the common ``bleu`` metric (Hugging Face ``evaluate.load("bleu")``,
  i.e. the TensorFlow NMT ``compute_bleu`` over 13a tokens): corpus-level, clipped n-gram
  counts pooled over the corpus, reference length = the shortest reference, standard brevity
  penalty, no smoothing. AskCQ uses it for CQ BLEU-4 and category BLEU-1. It is kept as
  sufficient statistics (:class:`BleuStats`) so a stream of records never has to be held.
* :func:`coco_bleu` is pycocoevalcap's ``Bleu(4)`` on one hypothesis, the sentence BLEU of
  the AmbigQA scorer (F1_BLEU): tokens split on spaces, effective reference length the
  "closest" one, counts nudged by 1e-15 / 1e-9 so a zero count gives ~0, not an error.
"""
from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field

_13A_RULES = [
    (re.compile(r"([\{-\~\[-\` -\&\(-\+\:-\@\/])"), r" \1 "),  # punctuation
    (re.compile(r"([^0-9])([\.,])"), r"\1 \2 "),  # period/comma not preceded by a digit
    (re.compile(r"([\.,])([^0-9])"), r" \1 \2"),  # period/comma not followed by a digit
    (re.compile(r"([0-9])(-)"), r"\1 \2 "),  # dash preceded by a digit
]


def tokenize_13a(line: str) -> list[str]:
    """The mteval-v13a tokenizer (sacrebleu's default, cased) as ``evaluate``'s bleu uses it."""
    line = line.replace("<skipped>", "").replace("-\n", "").replace("\n", " ")
    if "&" in line:
        line = line.replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">")
    line = f" {line} "
    for pattern, repl in _13A_RULES:
        line = pattern.sub(repl, line)
    return line.split()


def ngrams(tokens: list[str], max_order: int) -> Counter:
    counts: Counter = Counter()
    for n in range(1, max_order + 1):
        for i in range(len(tokens) - n + 1):
            counts[tuple(tokens[i:i + n])] += 1
    return counts


@dataclass
class BleuStats:
    """Sufficient statistics of corpus BLEU; ``add`` one segment at a time."""

    max_order: int = 4
    matches: list[int] = field(default_factory=list)
    possible: list[int] = field(default_factory=list)
    hyp_len: int = 0
    ref_len: int = 0

    def __post_init__(self) -> None:
        self.matches = self.matches or [0] * self.max_order
        self.possible = self.possible or [0] * self.max_order

    def add(self, hypothesis: str, references: list[str]) -> None:
        hyp = tokenize_13a(hypothesis)
        refs = [tokenize_13a(r) for r in references]
        self.add_tokens(hyp, refs)

    def add_tokens(self, hyp: list[str], refs: list[list[str]]) -> None:
        self.ref_len += min((len(r) for r in refs), default=0)
        self.hyp_len += len(hyp)
        ref_max: Counter = Counter()
        for ref in refs:
            ref_max |= ngrams(ref, self.max_order)
        overlap = ngrams(hyp, self.max_order) & ref_max
        for gram, count in overlap.items():
            self.matches[len(gram) - 1] += count
        for n in range(1, self.max_order + 1):
            self.possible[n - 1] += max(len(hyp) - n + 1, 0)

    def score(self) -> float | None:
        """BLEU in [0, 1]; None when there is nothing to score (no reference tokens at all)."""
        if self.ref_len == 0:
            return None
        precisions = [m / p if p > 0 else 0.0 for m, p in zip(self.matches, self.possible)]
        if min(precisions) <= 0:
            return 0.0
        geo_mean = math.exp(sum(math.log(p) for p in precisions) / self.max_order)
        ratio = self.hyp_len / self.ref_len
        brevity = 1.0 if ratio > 1.0 else math.exp(1 - 1 / ratio)
        return geo_mean * brevity


def corpus_bleu(hypotheses: list[str], references: list[list[str]], max_order: int = 4) -> float | None:
    stats = BleuStats(max_order)
    for hyp, refs in zip(hypotheses, references):
        stats.add(hyp, refs)
    return stats.score()


_TINY, _SMALL = 1e-15, 1e-9


def coco_bleu(hypothesis: str, references: list[str], max_order: int = 4) -> list[float]:
    """pycocoevalcap ``Bleu(max_order).compute_score`` for one hypothesis: [BLEU-1 .. BLEU-n].

    Inputs are already tokenised strings (tokens separated by spaces).
    """
    hyp = hypothesis.split()
    refs = [r.split() for r in references]
    ref_max: Counter = Counter()
    for ref in refs:
        ref_max |= ngrams(ref, max_order)
    correct = [0] * max_order
    for gram, count in ngrams(hyp, max_order).items():
        correct[len(gram) - 1] += min(ref_max.get(gram, 0), count)
    guess = [max(0, len(hyp) - k + 1) for k in range(1, max_order + 1)]
    ref_len = min((abs(len(r) - len(hyp)), len(r)) for r in refs)[1] if refs else 0
    scores = []
    product = 1.0
    for k in range(max_order):
        product *= (correct[k] + _TINY) / (guess[k] + _SMALL)
        scores.append(product ** (1.0 / (k + 1)))
    ratio = (len(hyp) + _TINY) / (ref_len + _SMALL)
    if ratio < 1:
        scores = [s * math.exp(1 - 1 / ratio) for s in scores]
    return scores
