"""``cq detect --method combined``: a calibrated logistic model over several ambiguity signals.

AskCQ's classifier reads the question (and passages); ambiguity also shows in what retrieval
returns (top passages from several pages that share a name: "X (film)", "X (song)", "X") and in
what a reader finds (several distinct answers). ``cq train combiner`` fits one weight per signal
on records with gold labels (split by question id; the threshold is chosen on the training part
by cross-validation) and writes ``combiner.json``; this module computes the signals and applies it.

Signals (``--features``, a comma list; each names what a record must carry):

  classifier   logit of P(ambiguous) from a ``cq train detect`` model (``--classifier DIR``)
  titles       share of distinct page titles among the top-k passages
  namesakes    most distinct titles sharing one base name ("Joker (film)", "Joker (song)" -> 2), / k
  parens       share of top-k titles with a parenthesised qualifier ("(film)", "(2019 film)")
  scores       retriever score shape: (s1 - s2) / |s1| and mean(top-k) / |s1|
  answers      distinct normalised answers from ``cq answer --mode multi``

The retrieval signals depend on the retriever (its score scale) and on the corpus: the combiner
records the retrieval method it was trained with and refuses records retrieved otherwise.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import re
from dataclasses import dataclass

import numpy as np

from ...errors import InputError, ResourceError
from ...records import META, PASSAGES
from ...registry import option
from . import ClassifierOptions, ScoredDetector, classifier_detector, distinct_answers, threshold_option

COMBINER_FILE = "combiner.json"
FEATURES = ("classifier", "titles", "namesakes", "parens", "scores", "answers")
RETRIEVAL_FEATURES = ("titles", "namesakes", "parens", "scores")
TOP_K = 10
L2 = 1.0  # the logistic fit's L2 penalty on the weights (cq train combiner --l2)
_QUALIFIER = re.compile(r"\s*\(([^()]*)\)\s*$")


# --- signals ---------------------------------------------------------------------------------------

def base_name(title: str) -> str:
    """A page title without its trailing qualifier: "Joker (2019 film)" -> "joker"."""
    return _QUALIFIER.sub("", title).strip().casefold()


def title_signals(record: dict, k: int) -> dict[str, float]:
    passages = _passages(record)[:k]
    titles = [str(p.get("title") or "") for p in passages]
    if not titles:
        return {"titles": 0.0, "namesakes": 0.0, "parens": 0.0}
    by_base: dict[str, set[str]] = {}
    for title in titles:
        by_base.setdefault(base_name(title), set()).add(title)
    return {"titles": len(set(titles)) / len(titles),
            "namesakes": max(len(group) for group in by_base.values()) / len(titles),
            "parens": sum(1 for t in titles if _QUALIFIER.search(t)) / len(titles)}


def score_signals(record: dict, k: int) -> list[float]:
    scores = [float(p.get("score") or 0.0) for p in _passages(record)[:k]]
    if not scores or scores[0] == 0:
        return [0.0, 0.0]
    top = abs(scores[0])
    gap = (scores[0] - scores[1]) / top if len(scores) > 1 else 0.0
    return [gap, sum(scores) / len(scores) / top]


def _passages(record: dict) -> list[dict]:
    passages = record.get(PASSAGES)
    if not isinstance(passages, list):
        raise InputError(f"record {record.get('id')} has no passages; the combined detector's retrieval "
                         "signals need `cq retrieve` first", record_id=record.get("id"))
    return passages


def retrieval_method(record: dict) -> str | None:
    info = (record.get(META) or {}).get("retrieve") or {}
    return info.get("method") if isinstance(info, dict) else None


def feature_names(features: tuple[str, ...]) -> list[str]:
    """Columns of the feature matrix: ``scores`` gives two."""
    return [col for f in features for col in (("score_gap", "score_mean") if f == "scores" else (f,))]


def feature_matrix(records: list[dict], features: tuple[str, ...], k: int,
                   classifier_scores: list[float] | None) -> np.ndarray:
    rows = []
    for i, record in enumerate(records):
        row: list[float] = []
        titles = title_signals(record, k) if set(features) & {"titles", "namesakes", "parens"} else {}
        for feature in features:
            if feature == "classifier":
                p = min(max(classifier_scores[i], 1e-6), 1 - 1e-6)
                row.append(math.log(p / (1 - p)))
            elif feature == "scores":
                row.extend(score_signals(record, k))
            elif feature == "answers":
                row.append(float(distinct_answers(record)))
            else:
                row.append(titles[feature])
        rows.append(row)
    return np.asarray(rows, dtype=np.float64).reshape(len(records), len(feature_names(features)))


def parse_features(text: str) -> tuple[str, ...]:
    names = tuple(dict.fromkeys(f.strip() for f in text.split(",") if f.strip()))
    unknown = [f for f in names if f not in FEATURES]
    if unknown or not names:
        raise InputError(f"--features: unknown {', '.join(unknown) or '(none given)'}; "
                         f"choose from {', '.join(FEATURES)}")
    return names


# --- the model -------------------------------------------------------------------------------------

@dataclass
class Combiner:
    features: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray
    bias: float
    threshold: float
    k: int = TOP_K
    classifier: str | None = None
    classifier_passages: int = 0
    retrieval: str | None = None

    def probability(self, x: np.ndarray) -> np.ndarray:
        z = ((x - self.mean) / self.scale) @ self.weights + self.bias
        return 1.0 / (1.0 + np.exp(-z))

    def to_json(self) -> dict:
        return {"features": list(self.features), "columns": feature_names(self.features), "k": self.k,
                "mean": self.mean.tolist(), "scale": self.scale.tolist(), "weights": self.weights.tolist(),
                "bias": self.bias, "threshold": self.threshold, "classifier": self.classifier,
                "classifier_passages": self.classifier_passages, "retrieval": self.retrieval}

    @classmethod
    def from_json(cls, d: dict) -> "Combiner":
        return cls(tuple(d["features"]), np.asarray(d["mean"]), np.asarray(d["scale"]), np.asarray(d["weights"]),
                   float(d["bias"]), float(d["threshold"]), int(d.get("k", TOP_K)), d.get("classifier"),
                   int(d.get("classifier_passages", 0)), d.get("retrieval"))


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = L2) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """(mean, scale, weights, bias): L2-regularised logistic regression on standardised features
    (L-BFGS, deterministic)."""
    from scipy.optimize import minimize
    from scipy.special import expit

    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale == 0] = 1.0
    z = (x - mean) / scale
    sign = np.where(y, 1.0, -1.0)

    def loss(theta):
        w, b = theta[:-1], theta[-1]
        margin = sign * (z @ w + b)
        value = np.sum(np.logaddexp(0.0, -margin)) + 0.5 * l2 * w @ w
        g = -sign * expit(-margin)
        return value, np.append(z.T @ g + l2 * w, g.sum())

    res = minimize(loss, np.zeros(z.shape[1] + 1), jac=True, method="L-BFGS-B")
    return mean, scale, res.x[:-1], float(res.x[-1])


def id_hash(record_id, seed: int, salt: str = "") -> int:
    """sha256(salt, seed, id) as an integer: splits that depend on neither file order nor other records."""
    return int.from_bytes(hashlib.sha256(f"{salt}{seed}:{record_id}".encode()).digest(), "big")


def held_out(record_id, fraction: float, seed: int) -> bool:
    """True for the ids of the validation part (the hash's top 64 bits as a fraction)."""
    return (id_hash(record_id, seed) >> 192) / 2 ** 64 < fraction


def load(path: str) -> Combiner:
    file = os.path.join(path, COMBINER_FILE)
    try:
        with open(file) as fh:
            return Combiner.from_json(json.load(fh))
    except FileNotFoundError:
        raise ResourceError(f"{file} not found: --method combined needs --model DIR written by "
                            "`cq train combiner --out DIR`") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise ResourceError(f"{file} is not a combiner written by `cq train combiner`: {exc}") from None


def check_retrieval(records: list[dict], expected: str | None) -> None:
    if expected is None:
        return
    for record in records:
        got = retrieval_method(record)
        if got != expected:
            raise InputError(f"record {record.get('id')}: retrieved with {got or 'an unknown method'}, but the "
                             f"combiner's retrieval signals were trained on `cq retrieve --method {expected}`; "
                             "retrieve the same way or train a combiner on these records",
                             record_id=record.get("id"))


def signal_scorer(combiner: Combiner, config):
    """records -> feature matrix (runs the classifier, loaded under the run configuration ``config``, when the
    combiner uses it)."""
    clf = None
    if "classifier" in combiner.features:
        if not combiner.classifier or not os.path.isdir(combiner.classifier):
            raise ResourceError(f"the combiner uses the classifier at {combiner.classifier}, which is not there; "
                                "retrain with `cq train combiner --classifier DIR`")
        clf = classifier_detector(ClassifierOptions(combiner.classifier, combiner.classifier_passages), config)
    uses_retrieval = bool(set(combiner.features) & set(RETRIEVAL_FEATURES))

    def matrix(records):
        if uses_retrieval:
            check_retrieval(records, combiner.retrieval)
        return feature_matrix(records, combiner.features, combiner.k, clf.score(records) if clf else None)

    return matrix, (clf.info if clf else None)


@dataclass(frozen=True)
class CombinedOptions:
    """calibrated P(ambiguous) over classifier, retrieval and reader signals (a `cq train combiner` model)"""

    model: str | None = option(None, "a `cq train combiner` directory (required)")
    threshold: float | None = threshold_option(None)  # None: the combiner's own


def combined_detector(options: CombinedOptions, config) -> ScoredDetector:
    model, threshold = options.model, options.threshold
    if not model:
        raise ResourceError("--method combined needs --model DIR, written by `cq train combiner --out DIR`")
    from ...models.resolve import resolve

    model = resolve(model, config=config).path  # resolved models are fingerprinted in --resume's run record
    combiner = load(model)
    matrix, clf_info = signal_scorer(combiner, config)
    cut = combiner.threshold if threshold is None else threshold

    def score(records):
        return [float(p) for p in combiner.probability(matrix(records))] if records else []

    info = {"method": "combined", "model": os.path.abspath(model), "features": list(combiner.features),
            "threshold": cut, "classifier": clf_info}
    return ScoredDetector("combined", score, cut, info)
