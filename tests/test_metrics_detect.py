"""Detection metrics with hand-computed values (ambiguous = positive class)."""
import pytest

from cqtools.metrics.detect import auroc, confusion, pr_points, roc_points, sweep

GOLD = [True, True, False, False]
SCORES = [0.9, 0.4, 0.6, 0.1]


def test_confusion_hand_computed():
    m = confusion(GOLD, [True, False, True, False])
    assert (m["tp"], m["fp"], m["fn"], m["tn"]) == (1, 1, 1, 1)
    assert m["accuracy"] == m["precision"] == m["recall"] == m["f1"] == m["tnr"] == pytest.approx(0.5)


def test_confusion_no_positive_prediction_is_zero_not_error():
    m = confusion(GOLD, [False] * 4)
    assert m["precision"] == 0.0 and m["f1"] == 0.0 and m["tnr"] == 1.0 and m["accuracy"] == 0.5


def test_auroc_pairs_and_ties():
    # positive > negative in 3 of the 4 (pos, neg) pairs
    assert auroc(GOLD, SCORES) == pytest.approx(0.75)
    assert auroc([True, False], [0.5, 0.5]) == pytest.approx(0.5)
    assert auroc([True, True], [0.1, 0.2]) is None


def test_sweep_best_f1_and_accuracy_thresholds():
    # predict ambiguous when score > t (cq detect's rule): t=0.6: F1 2/3 acc 3/4; t=0.4: F1 1/2 acc 1/2;
    # t=0.1: F1 4/5 acc 3/4; t=-0.9 (all): F1 2/3 acc 1/2; accuracy's tie goes to the higher t
    s = sweep(GOLD, SCORES)
    assert s["best_f1"] == pytest.approx(0.8) and s["best_f1_threshold"] == 0.1
    assert s["best_accuracy"] == pytest.approx(0.75) and s["best_accuracy_threshold"] == 0.6


def test_sweep_thresholds_reproduce_their_values_under_detects_rule():
    gold = [True, True, False, True, False, False, True]
    scores = [3.0, 2.0, 2.0, 1.0, 1.0, 0.0, 0.5]
    s = sweep(gold, scores)
    for key in ("f1", "accuracy"):
        m = confusion(gold, [x > s[f"best_{key}_threshold"] for x in scores])
        assert m[key] == pytest.approx(s[f"best_{key}"])
    everything = sweep([True, True], [0.5, 0.5])  # only predicting all ambiguous is possible: below the lowest
    assert everything["best_f1"] == pytest.approx(1.0) and everything["best_f1_threshold"] < 0.5


def test_curves():
    assert roc_points(GOLD, SCORES) == [(0.0, 0.0), (0.0, 0.5), (0.5, 0.5), (0.5, 1.0), (1.0, 1.0)]
    assert pr_points(GOLD, SCORES)[0] == (0.5, 1.0)
