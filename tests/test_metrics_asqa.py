"""ASQA / ToC / CLAM / retrieval metrics, hand-computed."""
import pytest

from cqtools.metrics import clam
from cqtools.metrics.asqa import disambig_f1, dr_score, rouge_lsum, str_em
from cqtools.metrics.retrieval import answer_coverage

SETS = [["Heath Ledger"], ["Jared Leto", "Leto"], ["Joaquin Phoenix"]]


def test_str_em_share_of_pairs_found():
    assert str_em("Heath Ledger played him in 2008; later, Joaquin Phoenix.", SETS) == pytest.approx(2 / 3)
    assert str_em("", SETS) == 0.0
    assert str_em("anything", []) is None


def test_disambig_f1_token_f1_max_over_aliases():
    # pair 1: exact -> 1; pair 2: "Leto actor" vs "Leto" -> P 1/2, R 1 -> 2/3 (better than vs "Jared Leto": 1/2)
    # pair 3: no reader answer left (zip stops) -> 0: mean (1 + 2/3 + 0) / 3
    assert disambig_f1(["Heath Ledger", "Leto actor"], SETS) == pytest.approx((1 + 2 / 3) / 3)
    assert disambig_f1([], []) is None


def test_dr_is_geometric_mean():
    assert dr_score(64.0, 25.0) == pytest.approx(40.0)
    assert dr_score(None, 25.0) is None


def test_rouge_lsum_max_over_references():
    rouge_scorer = pytest.importorskip("rouge_score.rouge_scorer")
    scorer = rouge_scorer.RougeScorer(["rougeLsum"], use_stemmer=True)
    split = lambda text: [s for s in text.split(". ") if s]  # noqa: E731
    refs = ["Completely different words here.", "Heath Ledger played the Joker."]
    assert rouge_lsum("Heath Ledger played the Joker.", refs, scorer, split) == pytest.approx(1.0)
    # stemming: "plays" ~ "played"; LCS 2 of 2 hyp tokens and 2 of 3 ref tokens -> F = 2*1*(2/3)/(1+2/3) = 0.8
    assert rouge_lsum("Ledger plays", ["Ledger played him"], scorer, split) == pytest.approx(0.8)
    assert rouge_lsum("", refs, scorer, split) == 0.0


def test_clam_adjusted_accuracy():
    needless = clam.score_record(["Paris"], "It is Paris.", asked=True, ambiguous=False, lam=0.8)
    assert needless["correct"] == 1.0 and needless["adjusted"] == pytest.approx(0.8)
    assert clam.score_record(["Paris"], "Paris", asked=True, ambiguous=True, lam=0.8)["adjusted"] == 1.0
    assert clam.score_record(["Paris"], "Lyon", asked=False, ambiguous=False, lam=0.8)["correct"] == 0.0
    assert clam.score_record(["Paris"], None, asked=False, ambiguous=False, lam=0.8)["correct"] == 0.0
    rows = [needless, clam.score_record(["Rome"], "Lyon", asked=False, ambiguous=False, lam=0.8)]
    assert clam.aggregate(rows) == {"accuracy": 0.5, "adjusted_accuracy": pytest.approx(0.4),
                                    "clarification_rate": 0.5, "n": 2}


def test_answer_coverage_at_k():
    clusters = [["Heath Ledger"], ["Joaquin Phoenix"], ["Jared Leto"]]
    passages = [{"title": "The Dark Knight", "text": "starring Heath Ledger"},
                {"title": "Other", "text": "nothing here"},
                {"title": "Joaquin Phoenix", "text": "an actor"}]
    assert answer_coverage(clusters, passages, [1, 2, 3, 10]) == pytest.approx({1: 1 / 3, 2: 1 / 3, 3: 2 / 3, 10: 2 / 3})
    assert answer_coverage([], passages, [5]) == {5: 0.0}
    assert answer_coverage(clusters, [], [5]) == {5: 0.0}


def test_disambig_f1_reader_decodes_as_the_released_run_qa():
    """The released run_qa.py (ASQA's Disambig-F1) keeps the 20 best start and 20 best end logits of a window and
    answers "" when the null score beats every span; cq searched every span and never answered "" (issue 35)."""
    import torch

    from cqtools.score.reader import N_BEST, ExtractiveReader, answer_or_null

    reader = ExtractiveReader.__new__(ExtractiveReader)
    reader.torch, reader.max_answer_tokens = torch, 30
    starts, ends = torch.full((64,), -10.0), torch.full((64,), -10.0)
    starts[10], ends[11] = 5.0, 5.0           # 10.0: the best pair among the 20 best starts and ends
    starts[[0, *range(1, 10), *range(12, 21)]] = 0.1  # 19 more of the 20 best starts, all over 30 tokens from 52
    starts[50], ends[52] = -0.5, 12.0         # 11.5, the best span overall, but its start is the 21st best
    assert N_BEST == 20
    assert reader._best_span(starts, ends, 1, 63) == (10.0, 10, 11)
    assert answer_or_null((10.0, "Heath Ledger"), 12.0) == ""           # the null answer wins
    assert answer_or_null((10.0, "Heath Ledger"), 9.5) == "Heath Ledger"
    assert answer_or_null(None, 1.0) == ""
