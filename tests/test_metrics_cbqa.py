"""Answers after clarification (AskCQ Task 3): alias partial match, EM, collapse."""
import pytest

from cqtools.metrics.cbqa import answers_overlap, exact_matches, score_record

GOLD = [["Heath Ledger", "Ledger"], ["Joaquin Phoenix"]]
GOLD_CQ = "Which film: The Dark Knight, Joker?"


def test_answers_overlap_hand_computed():
    # normalised preds "heath ledger", "jack nicholson"
    # set 1: pred 1 -> alias "heath ledger", L=12 -> p 1, r 1; pred 2 -> L=1 (first alias) -> p 1/14, r 1/12
    # set 2: pred 1 -> L=1 -> p 1/12, r 1/15; pred 2 -> "ni"/"ho", L=2 -> p 2/14, r 2/15
    # best precision sum 1 + 1/7; best recall sum 1 + 2/15
    p_sum, r_sum = answers_overlap(GOLD, ["Heath Ledger", "Jack Nicholson"])
    assert p_sum == pytest.approx(1 + 1 / 7)
    assert r_sum == pytest.approx(1 + 2 / 15)


def test_answers_overlap_recall_uses_the_best_alias_length():
    # "ledger" has L=6 with both aliases; the first ("heath ledger", 12 chars) wins, as AskCQ's argmax: r = 6/12
    p_sum, r_sum = answers_overlap([["Heath Ledger", "Ledger"]], ["Ledger"])
    assert p_sum == pytest.approx(1.0) and r_sum == pytest.approx(0.5)


def test_answers_overlap_edge_cases():
    assert answers_overlap([], []) == (1.0, 1.0)
    assert answers_overlap(GOLD, []) == (0.0, 0.0)
    assert answers_overlap([], ["x"]) == (0.0, 0.0)


def test_score_record_counts_unique_answers():
    row = score_record(GOLD, ["Heath Ledger", "heath ledger!", "Joaquin Phoenix"])
    assert row["n_answers"] == 3 and row["n_unique_answers"] == 2
    assert row["precision"] == pytest.approx(2 / 3) and row["recall"] == pytest.approx(1.0)


def test_exact_matches_tied_by_option():
    preds = [{"text": "Ledger", "option": "The Dark Knight"}, {"text": "Jared Leto", "option": "Joker"}]
    assert exact_matches(GOLD_CQ, GOLD, preds) == [1, 0]
    # options name the gold option, whatever their order
    assert exact_matches(GOLD_CQ, GOLD, [{"text": "joaquin phoenix", "option": "joker"}]) == [1]
    # an option that is no gold option (a generated CQ's) is not tied: no EM, whatever its position
    assert exact_matches(GOLD_CQ, GOLD, [{"text": "Heath Ledger", "option": "Dark Knight film"}]) == []
    # a gold option without a gold answer set scores 0; no option: not tied
    assert exact_matches(GOLD_CQ, GOLD[:1], [{"text": "Joaquin Phoenix", "option": "Joker"}]) == [0]
    assert exact_matches(GOLD_CQ, GOLD, [{"text": "Heath Ledger"}]) == []


def test_a_question_without_gold_answers_is_skipped_and_counted_wherever_it_is():
    """The released CQA_evaluate zips predictions with gold lists: a last question without gold answers drops out
    silently, an earlier one shifts every later pairing. cq skips it, counts it, and scores the others alike."""
    from cqtools.score import ScoreOptions, score_records

    scored = [{"id": str(i), "question": "q", "gold": {"answers": [["Paris"], ["Lyon"]]},
               "answers": [{"text": "Paris"}, {"text": "Nice"}]} for i in range(2)]
    no_gold = {"id": "x", "question": "q", "gold": {}, "answers": [{"text": "Paris"}]}

    def summary(records):
        return score_records(enumerate(records, start=1), ScoreOptions(task="cbqa")).summary()

    alone = summary(scored)
    for records in ([*scored, no_gold], [no_gold, *scored], [scored[0], no_gold, scored[1]]):
        out = summary(records)
        assert out["skipped"] == 1 and out["n"] == alone["n"] == 2
        assert (out["precision"], out["recall"], out["f1"]) == (alone["precision"], alone["recall"], alone["f1"])
