"""Ambiguity detection: ``ambiguity: {label, score, method, threshold}`` per record.

Each method is a :class:`ScoredDetector` whose ``score(records)`` returns one number per record;
the label is always ``score > threshold``. Methods live in the DETECTORS registry
(cqtools/registry.py; plugins add more); :func:`build` assembles the stage from Python:

  classifier  P(ambiguous) from a sequence classifier over "question [SEP] passages" (AskCQ task 1); the
              default (DEFAULT_DETECTOR, cq chat's and make demo's too): the classifier trained here ($CQ_MODELS/detect), else the compact one cq ships
  llm         log p(" True") - log p(" False") after a few-shot CLAM-style prompt
  answers     number of distinct normalised answers from ``cq answer --mode multi`` (AskCQ)
  tree        number of surviving disambiguations from ``cq disambiguate --tree``
  always      1.0 (CLAM's "always clarify")       never  0.0 (answer directly)
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ...errors import InputError, ResourceError
from ...models.roles import role, trained_config
from ...records import ANSWERS, answer_texts, distinct_texts, passage_snippets, set_meta
from ...registry import option
from .. import prompts, templates
from ..common import stage_fn
from ..options import DEFAULT_DETECTOR, llm_option, prompt_option

DEFAULT_LLM = role("detector").default
MAX_INPUT_TOKENS = 256  # the classifier's input length in tokens (question + passages), unless trained longer
# Each passage's text is cut to this many words before tokenizing: no more can fit in MAX_INPUT_TOKENS
# tokens (a word is at least one token); the tokenizer then truncates the pair to the token limit.
CLASSIFIER_PASSAGE_WORDS = MAX_INPUT_TOKENS


@dataclass
class ScoredDetector:
    name: str
    score: Callable[[list[dict]], list[float]]
    threshold: float
    info: dict = field(default_factory=dict)


def build(method: str = DEFAULT_DETECTOR, config=None, **options) -> Callable[[list[dict]], list[dict]]:
    """The detect stage as a batch function (records -> records), e.g. in a notebook::

        detect = build("classifier")  # the shipped classifier; build("llm", model=...) asks an LM instead
        records = detect(records)

    ``options`` are the method's (its schema: ``DETECTORS.get(method).options``; a misspelled one is
    an error); ``config`` the run configuration (cqtools/config.py; default: one from the environment)."""
    from ...registry import DETECTORS

    return stage_fn(detect_batch, "detect", method, DETECTORS, config, options, "detector")


def detect_batch(records: list[dict], detector: ScoredDetector) -> list[dict]:
    scores = detector.score(records)
    for record, score in zip(records, scores):
        record["ambiguity"] = {"label": bool(score > detector.threshold), "score": float(score),
                               "method": detector.name, "threshold": detector.threshold}
        set_meta(record, "detect", detector.info)
    return records


# --- classifier ------------------------------------------------------------------------------

def classifier_text(record: dict, n_passages: int) -> tuple[str, str | None]:
    """(question, "title: text [SEP] ...") for the classifier; the second part is None without passages."""
    snippets = passage_snippets(record, n_passages, words=CLASSIFIER_PASSAGE_WORDS)
    return record["question"], (" [SEP] ".join(snippets) if snippets else None)


def encode_pairs(tokenizer, pairs: list[tuple[str, str | None]], max_length: int = MAX_INPUT_TOKENS,
                 layout: str = "pair"):
    """Tokenize (question, passages) pairs; passages are cut first, then the question. ``layout`` joined (``cq
    train detect --input-layout joined``): one sequence "question[SEP]passage[SEP]..." cut at its end, its segment
    ids all 0, as AskCQ's run_ambiguity_detection.py:441-444 @d8be017 writes it."""
    if layout == "joined":
        sep = tokenizer.sep_token or " "
        texts = [q if p is None else sep.join([q, *p.split(" [SEP] ")]) for q, p in pairs]
        return tokenizer(texts, truncation=True, max_length=max_length, padding=True, return_tensors="pt")
    firsts = [q for q, _ in pairs]
    if all(p is None for _, p in pairs):
        return tokenizer(firsts, truncation=True, max_length=max_length, padding=True, return_tensors="pt")
    seconds = [p or "" for _, p in pairs]
    return tokenizer(firsts, seconds, truncation="longest_first", max_length=max_length, padding=True,
                     return_tensors="pt")


def trained_max_length(path: str) -> int:
    """The ``max_length`` (tokens) a ``cq train detect`` directory was trained with, else MAX_INPUT_TOKENS."""
    return int(trained_config(path).get("max_length") or MAX_INPUT_TOKENS)


class SequenceClassifier:
    """A model dir written by ``cq train detect`` (any AutoModelForSequenceClassification, 2 labels);
    inputs are cut to the length it was trained with."""

    def __init__(self, path: str, config, device: str = "cpu"):
        import torch

        from ...models.load import load_transformers

        self.tokenizer, self.model = load_transformers(
            path, "AutoModelForSequenceClassification", device, "a sequence classifier",
            "train one with `cq train detect --out DIR` and pass --model DIR", config)
        self.padded = config.padded_batches
        if self.model.config.num_labels != 2:
            raise ResourceError(f"{path} has {self.model.config.num_labels} labels; --method classifier needs 2 "
                                "(not ambiguous, ambiguous)")
        self.device = device
        self.max_length = trained_max_length(path)
        self.layout = trained_config(path).get("input_layout") or "pair"
        self._torch = torch

    def predict(self, pairs: list[tuple[str, str | None]], batch_size: int = 32) -> list[float]:
        """P(ambiguous) per pair; one pair per forward pass (no padding, so a score does not depend
        on its batch mates) unless ``CQ_PADDED_BATCHES=1``."""
        torch = self._torch
        step = batch_size if self.padded else 1
        out: list[float] = []
        for start in range(0, len(pairs), step):
            enc = encode_pairs(self.tokenizer, pairs[start:start + step], self.max_length, self.layout).to(self.device)
            with torch.inference_mode():
                probs = torch.softmax(self.model(**enc).logits.float(), dim=-1)[:, 1]
            out.extend(float(p) for p in probs)
        return out


THRESHOLD_FILE = "cq_threshold.json"  # {"threshold": T, "chosen_on": ..., "metric": ..., "command": ...}
FALLBACK_THRESHOLD = 0.5


def threshold_option(default: float | None, default_is: str = ""):
    """``default_is`` says what a None default means (the classifier's: the threshold stored with its model); the
    help is one text for every detector, so `cq detect --help` lists each method's default on one flag."""
    return option(default, "label = score > threshold")


@dataclass(frozen=True)
class ClassifierOptions:
    """P(ambiguous) from a `cq train detect` model over question + passages (AskCQ)"""

    model: str | None = option(None, "a `cq train detect` directory [default: $CQ_MODELS/detect when trained, else "
                                     "the classifier cq ships]", env=role("classifier").env)
    n_passages: int | None = option(None, "top passages shown to the model (0: none) [default: as many as it was "
                                          "trained with]", min=0, flag="--passages")
    threshold: float | None = threshold_option(None, f"the one stored with the model ({THRESHOLD_FILE}, chosen on "
                                                     "held-out questions), else 0.5")


def stored_threshold(path: str) -> tuple[float, str]:
    """(threshold, where it came from) for the classifier in directory ``path``: the ``threshold`` its
    :data:`THRESHOLD_FILE` stores (written by bench/detect_threshold.py, chosen on held-out visible dev
    questions), else :data:`FALLBACK_THRESHOLD`; a file that is there but unreadable is an error, never skipped."""
    import json
    import os

    file = os.path.join(path, THRESHOLD_FILE)
    if not os.path.isfile(file):
        return FALLBACK_THRESHOLD, "default"
    try:
        with open(file) as fh:
            value = json.load(fh)["threshold"]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(value)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ResourceError(f"{file} is not a threshold file ({exc.__class__.__name__}: {exc}); rewrite it with "
                            "bench/detect_threshold.py or pass --threshold") from None
    return float(value), THRESHOLD_FILE


def classifier_detector(options: ClassifierOptions, config) -> ScoredDetector:
    """``model`` None: the classifier trained here ($CQ_MODELS/detect), else the one cq ships; ``n_passages``
    None: as many passages as the model was trained with (its cq_train.json; 3 when it does not say)."""
    model, n_passages, threshold = options.model, options.n_passages, options.threshold
    model = model or role("classifier").model(config)
    if not model:
        raise ResourceError("--method classifier needs --model DIR, a model saved by `cq train detect --out DIR` "
                            "(none is installed in $CQ_MODELS/detect and this install ships none)")
    from ...models.load import pick_device
    from ...models.resolve import resolve

    resolved = resolve(model, config=config)
    trained = trained_config(resolved.path).get("passages")
    if n_passages is None:
        n_passages = 3 if trained is None else int(trained)
    elif trained is not None and int(trained) == 0 and n_passages > 0:  # (the reverse, passages off, is an ablation)
        raise InputError(_layout_mismatch(model, n_passages))
    threshold_source = "--threshold"
    if threshold is None:
        threshold, threshold_source = stored_threshold(resolved.path)
    dev = pick_device(config.device)
    clf = SequenceClassifier(resolved.path, config, dev)

    def score(records):
        return clf.predict([classifier_text(r, n_passages) for r in records])

    info = {"method": "classifier", "model": resolved.name, "source": resolved.source, "passages": n_passages,
            "max_length": clf.max_length, "threshold": threshold, "threshold_from": threshold_source,
            "device": dev}
    return ScoredDetector("classifier", score, threshold, info)


def _layout_mismatch(model: str, asked: int) -> str:
    """The one-line error for a question-only classifier asked to read passages its card says it never saw."""
    return (f"the classifier {model} was trained on the question alone (its cq_train.json), and --passages {asked} "
            "would feed it what it never saw; drop --passages to read as it was trained, or train one that reads "
            "passages (make train-detect DETECT_PASSAGES=100 DETECT_MAX_LENGTH=512, AskCQ's layout) and pass it as "
            "--model")


# --- llm (CLAM) ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class LlmDetectorOptions:
    """few-shot log p(True) - log p(False) (CLAM)"""

    model: str = llm_option(env=role("detector").env)
    threshold: float = threshold_option(0.0)
    prompt: str | None = prompt_option()


def load_llm_detector(options: LlmDetectorOptions, config) -> ScoredDetector:
    from ...models.load import load_generator

    return llm_detector(load_generator(options.model, config.device, config.dtype, config=config), options.threshold,
                        prompts.detect_template(options.prompt))


def llm_detector(generator, threshold: float, tpl: templates.Template | None = None) -> ScoredDetector:
    """score = log p(" True") - log p(" False") given the few-shot prefix (its KV cache reused)."""
    tpl = tpl or prompts.detect_template()
    prefix = prompts.detect_prefix(tpl)
    yes, no = prompts.detect_labels(tpl)

    def score(records):
        texts = [prompts.detect_prompt(r["question"], tpl) for r in records]
        n = len(texts)
        logps = generator.score(texts + texts, [yes] * n + [no] * n, prefix=prefix)
        return [logps[i] - logps[n + i] for i in range(n)]

    info = {"method": "llm", "model": generator.name, **dict(generator.info),
            "shots": len(prompts.detect_examples(tpl)), "threshold": threshold, **templates.meta(tpl)}
    return ScoredDetector("llm", score, threshold, info)


# --- answers (AskCQ "predicted answers") ------------------------------------------------------------

def distinct_answers(record: dict) -> int:
    """How many of the record's predicted answers differ once normalised (empty ones not counted)."""
    texts = answer_texts(record, "run cq answer --mode multi first")
    if not all(isinstance(a, (dict, str)) for a in record[ANSWERS]):
        raise InputError(f"record {record.get('id')}: 'answers' must be a list of {{text}} objects "
                         "(from cq answer --mode multi)", record_id=record.get("id"))
    return len(distinct_texts(texts))


@dataclass(frozen=True)
class AnswersOptions:
    """distinct answers from `cq answer --mode multi` (AskCQ)"""

    threshold: float = threshold_option(1.0)


def counting_detector(name: str, count, threshold: float) -> ScoredDetector:
    """A detector whose score is a count per record (``count(record)``): distinct answers, surviving nodes."""
    return ScoredDetector(name, lambda recs: [float(count(r)) for r in recs], threshold,
                          {"method": name, "threshold": threshold})


def answers_detector(options: AnswersOptions, config=None) -> ScoredDetector:
    return counting_detector("answers", distinct_answers, options.threshold)


# --- tree (ToC) ------------------------------------------------------------------------------

def surviving_nodes(record: dict) -> int:
    """Disambiguations left after pruning: ``tree`` ({nodes: [...]} or a list of nodes; a node
    marked ``pruned: true`` or ``keep: false`` does not count) or, failing that, ``dqs``."""
    tree = record.get("tree")
    if tree is not None:
        nodes = tree.get("nodes") if isinstance(tree, dict) else tree
        if not isinstance(nodes, list):
            raise InputError(f"record {record.get('id')}: 'tree' must be a list of nodes or {{nodes: [...]}}")
        return sum(1 for node in nodes if not (isinstance(node, dict) and (node.get("pruned") or
                                                                          node.get("keep") is False)))
    dqs = record.get("dqs")
    if dqs is None:
        raise InputError(f"record {record.get('id')} has neither 'tree' nor 'dqs'; run cq disambiguate --tree first")
    if not isinstance(dqs, list):
        raise InputError(f"record {record.get('id')}: 'dqs' must be a list")
    return len(dqs)


@dataclass(frozen=True)
class TreeOptions:
    """surviving disambiguations of `cq disambiguate --tree` (ToC)"""

    threshold: float = threshold_option(1.0)


def tree_detector(options: TreeOptions, config=None) -> ScoredDetector:
    return counting_detector("tree", surviving_nodes, options.threshold)


# --- baselines -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class AlwaysOptions:
    """baseline: always ambiguous"""

    threshold: float = threshold_option(0.5)


@dataclass(frozen=True)
class NeverOptions(AlwaysOptions):
    """baseline: never ambiguous"""


def constant_detector(options: AlwaysOptions, config=None) -> ScoredDetector:
    name = "never" if isinstance(options, NeverOptions) else "always"
    value = 1.0 if name == "always" else 0.0
    return ScoredDetector(name, lambda recs: [value] * len(recs), options.threshold, {"method": name})

