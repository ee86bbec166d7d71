"""Evidence budgets (cqtools/stages/evidence.py): passages in order, as many as fit."""
from cqtools.stages import evidence


def _p(title, words):
    return {"title": title, "text": " ".join(["w"] * words)}


def test_fit_reads_passages_in_order_until_the_budget_is_full():
    passages = [_p("A", 10), _p("B", 10), _p("C", 10), _p("D", 1)]
    words = lambda text: len(text.split())  # noqa: E731
    # "A: w w ..." is 11 words; 2 fit in 25 with 2 already used, the third would overflow
    chosen = evidence.fit(passages, 25, words, used=2)
    assert [p["title"] for p in chosen] == ["A", "B"]  # D would fit but never jumps the queue
    assert [p["title"] for p in evidence.fit(passages, 1000, words)] == ["A", "B", "C", "D"]
    assert [p["title"] for p in evidence.fit(passages, 1000, words, limit=3)] == ["A", "B", "C"]


def test_a_first_passage_longer_than_the_budget_is_still_read():
    assert [p["title"] for p in evidence.fit([_p("A", 50), _p("B", 1)], 10, lambda t: len(t.split()))] == ["A"]


def test_token_counter_uses_the_models_tokenizer_or_the_character_estimate():
    class Tok:
        def __call__(self, text, add_special_tokens=False, verbose=False):
            return type("Enc", (), {"input_ids": text.split()})()

    class Model:
        tokenizer = Tok()

    assert evidence.token_counter(Model())("a b c") == 3
    assert evidence.token_counter(None)("abcdefghi") == 3   # 9 characters / 4, rounded up
    assert evidence.token_counter(None)("") == 0


def test_note_read_keeps_other_stages_counts():
    record = {"id": "q", "meta": {"passages_read": {"answer": 8}}}
    evidence.note_read(record, "gen-cq", [3, 4])
    assert record["meta"]["passages_read"] == {"answer": 8, "gen-cq": [3, 4]}
