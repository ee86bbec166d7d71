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
    """ROC and precision-recall curves of ``scores``, with the point of the labels ``pred``."""
    plt = _pyplot()
    fig, (ax_roc, ax_pr) = plt.subplots(1, 2, figsize=(10, 4.5))
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
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


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
