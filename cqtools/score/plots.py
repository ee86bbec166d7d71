"""Figures of `cq score --plot` (matplotlib, Agg backend, imported on first use)."""
from __future__ import annotations

from collections import Counter
from typing import Sequence

from ..metrics import detect as m_detect


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def detection_curves(path: str, gold: Sequence[bool], pred: Sequence[bool], scores: Sequence[float]) -> None:
    """ROC and precision-recall curves of ``scores``, with the point of the labels ``pred``, and a
    calibration (reliability) diagram when the scores are probabilities."""
    plt = _pyplot()
    fig, (ax_roc, ax_pr, ax_cal) = plt.subplots(1, 3, figsize=(15, 4.5))
    roc = m_detect.roc_points(gold, scores)
    ax_roc.plot([p[0] for p in roc], [p[1] for p in roc], marker=".")
    ax_roc.plot([0, 1], [0, 1], linestyle=":", color="grey")
    m = m_detect.confusion(gold, pred)
    ax_roc.scatter([1 - m["tnr"]], [m["tpr"]], color="red", zorder=3, label="threshold used")
    ax_roc.set(xlabel="false positive rate", ylabel="true positive rate (recall)", title="ROC")
    ax_roc.legend(loc="lower right")
    pr = m_detect.pr_points(gold, scores)
    ax_pr.plot([p[0] for p in pr], [p[1] for p in pr], marker=".")
    ax_pr.scatter([m["recall"]], [m["precision"]], color="red", zorder=3, label="threshold used")
    ax_pr.set(xlabel="recall", ylabel="precision", title="precision-recall (ambiguous = positive)",
              ylim=(0, 1.02))
    ax_pr.legend(loc="lower left")
    calibration_panel(ax_cal, gold, scores)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def calibration_bins(gold: Sequence[bool], scores: Sequence[float], n_bins: int = 10) -> list[tuple]:
    """(mean score, fraction ambiguous, records) per non-empty bin of equal width over [0, 1]; [] when the
    scores are not probabilities (outside [0, 1], e.g. an LLM's log-ratio)."""
    if not scores or any(not 0.0 <= s <= 1.0 for s in scores):
        return []
    bins: list[list] = [[] for _ in range(n_bins)]
    for g, s in zip(gold, scores):
        bins[min(int(s * n_bins), n_bins - 1)].append((bool(g), s))
    return [(sum(s for _, s in b) / len(b), sum(g for g, _ in b) / len(b), len(b)) for b in bins if b]


def calibration_panel(ax, gold: Sequence[bool], scores: Sequence[float]) -> None:
    """A reliability diagram: the fraction of ambiguous questions against the mean score, per bin."""
    bins = calibration_bins(gold, scores)
    ax.plot([0, 1], [0, 1], linestyle=":", color="grey")
    if bins:
        ax.plot([b[0] for b in bins], [b[1] for b in bins], marker="o")
        for x, y, n in bins:
            ax.annotate(str(n), (x, y), textcoords="offset points", xytext=(4, -10), fontsize=7)
    else:
        ax.text(0.5, 0.5, "scores are not probabilities", ha="center")
    ax.set(xlabel="score (10 bins; records per bin marked)", ylabel="fraction ambiguous", title="calibration",
           xlim=(0, 1), ylim=(0, 1.02))


def options_histogram(path: str, pred_hist: Counter, gold_hist: Counter) -> None:
    """Records per number of options of the CQ, predicted beside gold."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    top = max(list(pred_hist) + list(gold_hist) + [1])
    xs = list(range(0, top + 1))
    ax.bar([x - 0.2 for x in xs], [pred_hist.get(x, 0) for x in xs], width=0.4, label="predicted")
    ax.bar([x + 0.2 for x in xs], [gold_hist.get(x, 0) for x in xs], width=0.4, label="gold")
    ax.set(xlabel="options per CQ", ylabel="records", title="options per clarifying question", xticks=xs)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def clarifying_cost(path: str, lambdas: Sequence[dict], points: Sequence[dict]) -> None:
    """The cost of clarifying (`cq score --task clam --curves`): accuracy and adjusted accuracy against the share
    of questions clarified, one point per threshold of the detector's score; adjusted accuracy against lambda."""
    plt = _pyplot()
    fig, (ax_rc, ax_lam) = plt.subplots(1, 2, figsize=(11, 4.5))
    if points:
        xs = [p["clarified"] for p in points]
        ax_rc.plot(xs, [p["accuracy"] for p in points], marker=".", label="accuracy")
        ax_rc.plot(xs, [p["adjusted_accuracy"] for p in points], marker=".", linestyle="--", label="adjusted accuracy")
        ax_rc.legend(loc="lower right")
    else:
        ax_rc.text(50, 50, "no record has ambiguity.score", ha="center")
    ax_rc.set(xlabel="questions clarified (%)", ylabel="%", title="accuracy against the share clarified",
              xlim=(-2, 102))
    ax_lam.plot([p["lambda"] for p in lambdas], [p["adjusted_accuracy"] for p in lambdas], marker="o")
    ax_lam.set(xlabel="lambda (credit of a correct answer after a needless CQ)", ylabel="adjusted accuracy (%)",
               title="CLAM's adjusted accuracy over lambda")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
