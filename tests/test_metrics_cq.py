"""CQ parsing and options partial match (AskCQ), with hand-computed values."""
import pytest

from cqtools.metrics.cq import INVALID, micro_prf, options_overlap, parse_cq, score_record


@pytest.mark.parametrize("text,expected", [
    ("Which film: The Dark Knight, Joker, or Suicide Squad?", ("Which film", ["The Dark Knight", "Joker", "Suicide Squad"])),
    ("Which year: 2008 or 2019?", ("Which year", ["2008", "2019"])),
    ("In which sport: cricket, rugby?", ("In which sport", ["cricket", "rugby"])),
    ('Which song: "Hello, Goodbye", or "Let It Be"?', ("Which song", ["Hello, Goodbye", "Let It Be"])),
    ("Which one: 'Rock or Roll', 'Jazz'?", ("Which one", ["Rock or Roll", "Jazz"])),
    ("Which team: Women's team or men's team?", ("Which team", ["Women's team", "men's team"])),
    ("Which one:?", ("Which one", [])),
    ("Do you mean the film or the book?", (INVALID, [INVALID])),
    ("", (INVALID, [INVALID])),
])
def test_parse_cq(text, expected):
    assert parse_cq(text) == expected


def test_options_overlap_hand_computed():
    # LCS: (The Dark Knight, Dark Knight)=11, (The Dark Knight, Batman)=1, (Joker, Dark Knight)=1, (Joker, Batman)=0
    # precision matrix [[11/11, 1/6], [1/11, 0]] -> best assignment 1 + 0 = 1
    # recall matrix [[11/15, 1/15], [1/5, 0]] -> best 11/15 (vs 1/15 + 1/5 = 4/15)
    p_sum, r_sum = options_overlap(["The Dark Knight", "Joker"], ["Dark Knight", "Batman"])
    assert p_sum == pytest.approx(1.0)
    assert r_sum == pytest.approx(11 / 15)


def test_options_overlap_edge_cases():
    assert options_overlap([], []) == (1.0, 1.0)
    assert options_overlap(["A"], []) == (0.0, 0.0)
    assert options_overlap([], ["A"]) == (0.0, 0.0)


def test_micro_average_over_records():
    # record 1 as above (p 1, r 11/15, 2 pred, 2 gold); record 2: 3 gold options, no prediction
    # P = 1 / (2 + max(0, 1)) = 1/3; R = (11/15) / (2 + 3) = 11/75
    p, r, f = micro_prf(1.0 + 0.0, 11 / 15 + 0.0, 2 + 1, 2 + 3)
    assert p == pytest.approx(1 / 3) and r == pytest.approx(11 / 75)
    assert f == pytest.approx(2 * (1 / 3) * (11 / 75) / (1 / 3 + 11 / 75))


def test_score_record_gold_is_perfect_and_missing_is_zero():
    gold = "Which film: The Dark Knight, Joker?"
    perfect = score_record(gold, gold)
    assert perfect["options_f1"] == 1.0 and perfect["category_em"] == 1.0 and perfect["n_options"] == 2
    missing = score_record(gold, None)
    assert missing["options_f1"] == 0.0 and missing["category_em"] == 0.0 and missing["n_pred"] == 1
    invalid = score_record(gold, "Which one?")
    assert invalid["category"] == INVALID and invalid["n_options"] == 1 and invalid["category_em"] == 0.0
