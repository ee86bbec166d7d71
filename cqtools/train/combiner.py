"""``cq train combiner``: fit the combined detector (:mod:`cqtools.stages.detect.combined`).

Records with gold labels (``cq convert ambignq``), retrieved (and answered, for the ``answers``
signal) the way inference will see them, are split by a hash of their id into a training part
and a validation part. On the training part: k-fold out-of-fold probabilities choose the
threshold (highest accuracy), then one fit on the whole part gives the weights. The validation
part is scored once, with bootstrap intervals: the combiner, each signal alone, and (when the
combiner uses it) the paired difference to the classifier alone.
"""
from __future__ import annotations

import json
import logging
import os
from dataclasses import asdict, dataclass

import numpy as np

from ..config import RunConfig
from ..errors import InputError
from ..metrics import bootstrap as m_boot
from ..metrics.detect import auroc
from ..registry import option
from ..score.settings import BootstrapOptions
from ..stages.detect import combined as dc
from ..stages.options import CommandSettings
from .loop import REPORT, gold_label, load_records

log = logging.getLogger("cqtools")


@dataclass
class CombinerConfig:
    train: str
    out: str
    features: tuple[str, ...]
    classifier: str | None = None
    classifier_passages: int = option(0, "Passages the classifier reads (0: question only, as `make train-detect` "
                                         "trains it).", min=0)
    validation: float = option(0.4, "Share of question ids held out (a hash of seed and id) for the report.", min=0,
                               max=1)
    folds: int = option(5, "Cross-validation folds on the training part that choose the threshold.", min=2)
    k: int = option(dc.TOP_K, "Top passages the retrieval signals read.", min=1, flag="--top-k")
    l2: float = option(dc.L2, "L2 penalty on the weights.", min=0)
    seed: int = CommandSettings.seed
    n_boot: int = option(BootstrapOptions.n_boot, "Bootstrap resamples for the validation intervals.", min=1)
    device: str = RunConfig.device


def best_threshold(probs: np.ndarray, y: np.ndarray) -> float:
    """The cut between sorted probabilities with the highest accuracy (lowest cut on ties)."""
    cuts = np.unique(np.concatenate([[0.0], (np.sort(probs)[1:] + np.sort(probs)[:-1]) / 2, [1.0]]))
    accs = [float(np.mean((probs > c) == y)) for c in cuts]
    return float(cuts[int(np.argmax(accs))])


def detection_metrics(y: np.ndarray, scores: np.ndarray, threshold: float | None) -> dict:
    out = {"auroc": auroc(list(y), list(scores))}
    if threshold is not None:
        pred = scores > threshold
        tp = float(np.sum(pred & y))
        p, r = (tp / pred.sum() if pred.sum() else 0.0), (tp / y.sum() if y.sum() else 0.0)
        out.update(accuracy=float(np.mean(pred == y)), f1=2 * p * r / (p + r) if p + r else 0.0)
    return {k: (None if v is None else 100 * v) for k, v in out.items()}


def with_ci(y: np.ndarray, scores: np.ndarray, threshold: float | None, cfg: CombinerConfig) -> dict:
    point = detection_metrics(y, scores, threshold)
    ivs = m_boot.bootstrap(lambda idx: detection_metrics(y[idx], scores[idx], threshold), len(y), point,
                           BootstrapOptions(n_boot=cfg.n_boot, seed=cfg.seed))
    return {name: {"value": value, "ci": [ivs[name].low, ivs[name].high] if name in ivs else None}
            for name, value in point.items()}


def paired_auroc(y: np.ndarray, a: np.ndarray, b: np.ndarray, boot: BootstrapOptions = BootstrapOptions()) -> dict:
    """AUROC(b) - AUROC(a) on the same questions, with its paired-bootstrap interval (``boot``: its settings)."""
    diffs = m_boot.paired_bootstrap(lambda idx: detection_metrics(y[idx], a[idx], None),
                                    lambda idx: detection_metrics(y[idx], b[idx], None), len(y), boot)
    if "auroc" not in diffs:  # one class only: AUROC undefined
        return {"a": None, "b": None, "diff": None, "ci": None, "excludes_zero": False}
    d = diffs["auroc"]
    return {"a": d.a, "b": d.b, "diff": d.diff, "ci": [d.interval.low, d.interval.high],
            "excludes_zero": d.interval.excludes(0.0)}


def fold_of(record_id, folds: int, seed: int) -> int:
    return dc.id_hash(record_id, seed, salt="fold:") % folds


def _retrieval_method(cfg: CombinerConfig, records: list[dict]) -> str | None:
    """The `cq retrieve --method` every record came from, when a retrieval signal is asked for (None
    otherwise); an error unless that is one method."""
    if not set(cfg.features) & set(dc.RETRIEVAL_FEATURES):
        return None
    methods = {dc.retrieval_method(r) for r in records}
    if len(methods) != 1 or None in methods:
        raise InputError(f"{cfg.train}: the retrieval signals need records from one `cq retrieve --method M` "
                         f"run (found {sorted(map(str, methods))})")
    return methods.pop()


def train_combiner(cfg: CombinerConfig) -> dict:
    records = load_records(cfg.train, None)
    if not records:
        raise InputError(f"{cfg.train} has no records")
    if "classifier" in cfg.features and not cfg.classifier:
        raise InputError("--features classifier needs --classifier DIR (a `cq train detect` model)")
    retrieval = _retrieval_method(cfg, records)
    y = np.array([gold_label(r) for r in records])
    classifier = os.path.abspath(cfg.classifier) if cfg.classifier else None
    skeleton = dc.Combiner(cfg.features, np.zeros(0), np.ones(0), np.zeros(0), 0.0, 0.5, cfg.k, classifier,
                           cfg.classifier_passages, retrieval)

    matrix, clf_info = dc.signal_scorer(skeleton, RunConfig.from_env().replace(device=cfg.device))  # cq train's configuration
    log.info("train combiner: signals %s of %d records", ",".join(cfg.features), len(records))
    x = matrix(records)

    held = np.array([dc.held_out(r.get("id"), cfg.validation, cfg.seed) for r in records])
    if held.all() or not held.any():
        raise InputError(f"--validation {cfg.validation} leaves {'no training' if held.all() else 'no validation'} "
                         f"records of {len(records)}")
    ids = [r.get("id") for r in records]
    train_idx, val_idx = np.flatnonzero(~held), np.flatnonzero(held)

    oof = np.zeros(len(train_idx))
    folds = np.array([fold_of(ids[i], cfg.folds, cfg.seed) for i in train_idx])
    for f in range(cfg.folds):
        fit_on, predict_on = folds != f, folds == f
        if not predict_on.any() or len(set(y[train_idx][fit_on])) < 2:
            continue
        part = dc.Combiner(cfg.features, *dc.fit_logistic(x[train_idx][fit_on], y[train_idx][fit_on], cfg.l2), 0.5)
        oof[predict_on] = part.probability(x[train_idx][predict_on])
    threshold = best_threshold(oof, y[train_idx])
    mean, scale, weights, bias = dc.fit_logistic(x[train_idx], y[train_idx], cfg.l2)
    combiner = dc.Combiner(cfg.features, mean, scale, weights, bias, threshold, cfg.k, classifier,
                           cfg.classifier_passages, retrieval)

    yv, xv = y[val_idx], x[val_idx]
    pv = combiner.probability(xv)
    columns = dc.feature_names(cfg.features)
    validation = {"records": int(len(val_idx)), "ambiguous": int(yv.sum()),
                  "majority_accuracy": 100 * max(yv.mean(), 1 - yv.mean()),
                  "combined": with_ci(yv, pv, threshold, cfg),
                  "signals_alone": {c: with_ci(yv, xv[:, j], None, cfg)["auroc"] for j, c in enumerate(columns)}}
    if "classifier" in cfg.features:
        validation["combined_minus_classifier_auroc"] = paired_auroc(yv, xv[:, columns.index("classifier")], pv,
                                                                          BootstrapOptions(n_boot=cfg.n_boot,
                                                                                           seed=cfg.seed))
    os.makedirs(cfg.out, exist_ok=True)
    with open(os.path.join(cfg.out, dc.COMBINER_FILE), "w") as fh:
        json.dump(combiner.to_json(), fh, indent=1)
    report = {"task": "combiner", "config": {**asdict(cfg), "features": list(cfg.features)},
              "train_records": int(len(train_idx)), "threshold": threshold, "weights": dict(zip(columns, weights)),
              "classifier": clf_info, "retrieval": retrieval, "validation": validation,
              "validation_ids": [ids[i] for i in val_idx]}
    with open(os.path.join(cfg.out, REPORT), "w") as fh:
        json.dump(report, fh, indent=1)
    return report
