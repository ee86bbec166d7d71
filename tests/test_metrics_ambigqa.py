"""AmbigQA metrics (official scorer semantics), hand-computed."""
import pytest

from cqtools.metrics.ambigqa import edit_f1, edits, f1_answer, is_multi, qg_scores, set_f1

SINGLE = {"type": "singleAnswer", "answer": ["A"]}
MULTI = {"type": "multipleQAs", "qaPairs": [{"question": "q1", "answer": ["A"]}, {"question": "q2", "answer": ["B"]}]}


def test_set_f1_hand_computed():
    # clusters A, B, C; predictions a, x, b, a -> matched A and B: R = 2/3, P = 2/4 -> F1 = 4/7
    assert set_f1([["A"], ["B"], ["C"]], ["a", "x", "b", "a"]) == pytest.approx(4 / 7)


def test_set_f1_is_greedy_in_gold_order_like_the_official_scorer():
    # cluster 1 takes "x" first, so cluster 2 (only "x") stays unmatched: R = P = 1/2
    assert set_f1([["x", "y"], ["x"]], ["x", "y"]) == pytest.approx(0.5)


def test_set_f1_empty_sides_are_zero():
    assert set_f1([["A"]], []) == 0.0
    assert set_f1([], ["A"]) == 0.0


def test_f1_answer_is_max_over_annotations_and_normalised():
    # singleAnswer: F1 1; multipleQAs: R 1/2, P 1 -> 2/3; max = 1
    assert f1_answer([SINGLE, MULTI], ["the A."]) == pytest.approx(1.0)
    assert f1_answer([MULTI], ["A"]) == pytest.approx(2 / 3)
    assert is_multi([MULTI]) and not is_multi([SINGLE, MULTI]) and not is_multi([])


def test_edits_are_multiset_differences():
    assert edits("who played joker".split(), "who played joker in joker 2019".split()) == \
        ["[ADDED]in", "[ADDED]joker", "[ADDED]2019"]
    assert edits("who played joker".split(), "who joker".split()) == ["[DELETED]played"]


def test_edit_f1_hand_computed():
    prompt = "who played joker"
    # reference adds {in, dark, knight}; prediction adds {in, joker, 2019}: 1 common of 3 and 3 -> 1/3
    assert edit_f1("who played joker in joker 2019", ["who played joker in dark knight"], prompt) == pytest.approx(1 / 3)
    # max over references
    assert edit_f1("who played joker in joker 2019", ["who played joker in dark knight",
                                                      "who played joker in joker 2019"], prompt) == 1.0
    # both without edits = 1; exactly one without edits = 0
    assert edit_f1(prompt, [prompt], prompt) == 1.0
    assert edit_f1(prompt, ["who played joker in 2019"], prompt) == 0.0
    assert edit_f1("who played joker in 2019", [prompt], prompt) == 0.0


def test_qg_scores_counts_only_pairs_with_matching_answers():
    annotation = {"type": "multipleQAs", "qaPairs": [
        {"question": ["who played joker in dark knight 2008"], "answer": ["Heath Ledger"]},
        {"question": ["who played joker in joker 2019"], "answer": ["Joaquin Phoenix"]}]}
    prompt = "who played joker"
    good = qg_scores(prompt, [annotation], [("who played joker in dark knight 2008", "Heath Ledger")])
    # one matched pair scoring 1: 2 * 1 / (2 gold + 1 predicted) = 2/3
    assert good["f1_edit_f1"] == pytest.approx(2 / 3)
    assert good["f1_bleu"] == pytest.approx(2 / 3)
    wrong = qg_scores(prompt, [annotation], [("who played joker in dark knight 2008", "Jack Nicholson")])
    assert wrong == {"f1_bleu": 0.0, "f1_edit_f1": 0.0}
    assert qg_scores(prompt, [annotation], []) == {"f1_bleu": 0.0, "f1_edit_f1": 0.0}
    both = qg_scores(prompt, [annotation], [("who played joker in dark knight 2008", "Heath Ledger"),
                                            ("who played joker in joker 2019", "Joaquin Phoenix")])
    assert both["f1_edit_f1"] == pytest.approx(1.0)


def test_a_line_break_inside_a_predicted_dq_keeps_the_ptb_batch_aligned():
    """The released scorer writes every DQ on one line of one PTB batch; a \\r or U+2028 inside a DQ split it into
    two lines and shifted every later DQ (F1_BLEU 10.1 where 100 is right). cq reads each DQ as one line."""
    import json

    from click.testing import CliRunner

    from cqtools.cli import cli

    pairs = [{"question": "Who won the cup in 2008?", "answer": ["Ann"]},
             {"question": "Who won the cup in 2010?", "answer": ["Bob"]}]

    def record(i, sep):
        return {"id": str(i), "question": "Who won the cup?", "gold": {"annotations": [{"type": "multipleQAs",
                                                                                        "qaPairs": pairs}]},
                "answers": [{"text": "Ann"}, {"text": "Bob"}],
                "dqs": [{"question": f"Who won the cup{sep}in 2008?", "answer": "Ann"},
                        {"question": "Who won the cup in 2010?", "answer": "Bob"}]}

    for sep in ("\r", "\u2028", "\x85", "\n"):
        text = "".join(json.dumps(record(i, sep if i == 0 else " ")) + "\n" for i in range(3))
        result = CliRunner().invoke(cli, ["score", "--task", "ambigqa"], input=text)
        assert result.exit_code == 0, result.output
        out = json.loads(result.stdout)
        assert (out["f1_bleu"], out["f1_edit_f1"]) == (100.0, 100.0), repr(sep)
