"""Normalisation, string overlap, token F1 and the two BLEUs, with hand-computed values."""
import math

import pytest

from cqtools.metrics.bleu import BleuStats, coco_bleu, corpus_bleu, tokenize_13a
from cqtools.metrics.normalize import any_alias_in, longest_common_substring, normalize_answer, token_f1


def test_normalize_answer_drops_case_punctuation_articles_spaces():
    assert normalize_answer("  The Dark-Knight, (2008)!  ") == "darkknight 2008"
    assert normalize_answer("An apple a day") == "apple day"
    assert normalize_answer("theatre") == "theatre"  # articles only as whole words


def test_longest_common_substring():
    assert longest_common_substring("Joker", "The Joker film") == 5
    assert longest_common_substring("abcde", "xbcdy") == 3
    assert longest_common_substring("", "abc") == 0
    assert longest_common_substring("abc", "xyz") == 0


def test_token_f1_hand_computed():
    # gold tokens [heath, ledger], pred [ledger, actor]: 1 common -> P = R = 1/2 -> F1 = 1/2
    assert token_f1("Heath Ledger", "Ledger, actor") == pytest.approx(0.5)
    assert token_f1("", "") == 1.0
    assert token_f1("the", "x") == 0.0  # gold normalises to nothing: one side empty


def test_any_alias_in_ignores_empty_aliases():
    assert any_alias_in(["Heath Ledger"], "It was heath ledger.")
    assert not any_alias_in(["", "the"], "anything")


def test_tokenize_13a():
    assert tokenize_13a("Which film: A, B, or C?") == ["Which", "film", ":", "A", ",", "B", ",", "or", "C", "?"]
    assert tokenize_13a("1,000-year 3.5") == ["1,000", "-", "year", "3.5"]


def test_corpus_bleu_identical_is_one_and_empty_is_zero():
    assert corpus_bleu(["a b c d e"], [["a b c d e"]]) == pytest.approx(1.0)
    assert corpus_bleu([""], [["a b c d"]]) == 0.0
    assert BleuStats().score() is None


def test_corpus_bleu_hand_computed_brevity_penalty():
    # hyp "a b c d" vs ref "a b c d e f": all n-gram precisions 1, BP = exp(1 - 6/4)
    assert corpus_bleu(["a b c d"], [["a b c d e f"]]) == pytest.approx(math.exp(1 - 6 / 4))


def test_corpus_bleu_pools_counts_over_the_corpus():
    # bleu-1: seg1 "a b" vs "a c": 1/2 matched; seg2 "c" vs "c": 1/1 -> pooled 2/3.
    # lengths 3 vs 3 -> BP 1.
    assert corpus_bleu(["a b", "c"], [["a c"], ["c"]], max_order=1) == pytest.approx(2 / 3)


def test_corpus_bleu_uses_shortest_reference_and_clipping():
    # hyp "a a a", refs "a b" and "a a c d": clipped 1-gram matches = max ref count of "a" = 2 -> 2/3;
    # reference length = shortest = 2 < 3 -> BP 1.
    assert corpus_bleu(["a a a"], [["a b", "a a c d"]], max_order=1) == pytest.approx(2 / 3)


def test_coco_bleu_hand_computed():
    # hyp = ref, 4 tokens: every order ~1.
    assert coco_bleu("who played joker in 2008", ["who played joker in 2008"])[3] == pytest.approx(1.0)
    # hyp 3 tokens: no 4-gram guess -> BLEU-4 ~ (1e-15 / 1e-9)^(1/4) ~ 0.0316 * ...: tiny, not an error
    assert coco_bleu("a b c", ["a b c"])[3] < 0.05
    # bleu-1 with closest reference: hyp "a b" refs "a b c d" (len 4) and "a" (len 1):
    # |4-2| = 2 > |1-2| = 1 -> reflen 1 -> no brevity penalty; p1 = 2/2... "b" not in refs? it is in ref 1.
    assert coco_bleu("a b", ["a b c d", "a"])[0] == pytest.approx(1.0)
    # bleu-1: hyp "a x" vs "a y": 1/2 matched, same length -> 0.5
    assert coco_bleu("a x", ["a y"])[0] == pytest.approx(0.5)


@pytest.mark.parametrize("hyp,refs", [("who played joker in dark knight", ["who played joker in dark knight 2008"]),
                                      ("a b c d e f", ["a b x d e f", "a b c"])])
def test_coco_bleu_matches_pycocoevalcap(hyp, refs, capsys):
    bleu = pytest.importorskip("pycocoevalcap.bleu.bleu")
    expected, _ = bleu.Bleu(4).compute_score({"s": refs}, {"s": [hyp]}, verbose=0)
    assert coco_bleu(hyp, refs) == pytest.approx(expected)
