"""REFUEL's FiD training targets (issue 55 item 5): every order of every combination of found aliases, as
amzn/refuel-open-domain-qa @159090e QAData.py:765-821 builds them, one drawn per question each step
(DataLoader.py:51-61). The release's loop is transcribed below on strings (its token ids decoded) and run on the
same example; the first batch `cq train fid` encodes is decoded and checked against it. CPU, a tiny random BART."""
import itertools
import random

import pytest

from .test_train_paper_models import tiny_bart  # noqa: F401  (a random 2-layer BART with MiniLM's tokenizer)

pytestmark = pytest.mark.heavy(reason="builds a tiny BART and its FiD batches")


def release_targets(annotations: list[dict], included) -> list[str]:
    """QAData.py:765-821 @159090e, on strings: ``included`` is its _included (the alias in the passages), the
    tokens joined by <SEP> as bos + answers + eos are (the text cq's tokenizer encodes), do_lowercase's lower()."""
    new_targets = []
    for ann in annotations:  # for _curr_metadata in curr_metadata  (one annotator's clusters)
        clusters = [ann["answer"]] if ann["type"] == "singleAnswer" else [p["answer"] for p in ann["qaPairs"]]
        found_answers = []
        for cluster in clusters:  # for start, end in _curr_metadata
            _answers = []
            for answer in (a.lower() for a in cluster):
                if not included(answer):  # discard_not_found_answers
                    continue
                if answer in _answers:
                    continue
                _answers.append(answer)
            if len(_answers) > 0:
                found_answers.append(_answers)
        if len(found_answers) == 0:
            continue
        cnt = 0
        cat_answers = []
        for _cat_answers in itertools.product(*found_answers):
            _cat_answers = list(_cat_answers)
            cnt_perm = 0
            for _cat_answers_perm in itertools.permutations(_cat_answers):
                cat_answers.append(" <SEP> ".join(_cat_answers_perm))
                cnt += 1
                cnt_perm += 1
                if cnt_perm == 500:
                    break
        if cnt > 100:
            cnt = 100
            sel_idx = random.sample(range(len(cat_answers)), cnt)
        elif 0 < cnt <= 100:
            sel_idx = list(range(len(cat_answers)))
        else:
            continue
        for jdx in sel_idx:
            new_targets.append(cat_answers[jdx])
    return new_targets


PASSAGES = [{"title": "Joker", "text": "Heath Ledger, Jack Nicholson and Jared Leto played the Joker; so did "
                                       "Joaquin Phoenix and Cesar Romero and Mark Hamill."}]


def _record(rid, annotations):
    return {"id": rid, "question": "Who played the Joker?", "passages": PASSAGES,
            "gold": {"annotations": annotations}}


def _pairs(*clusters):
    return {"type": "multipleQAs", "qaPairs": [{"question": "q", "answer": list(c)} for c in clusters]}


RECORDS = [
    _record("three", [_pairs(["Heath Ledger", "Ledger", "Heath"], ["Jack Nicholson"], ["Jared Leto", "Brad Pitt"]),
                      {"type": "singleAnswer", "answer": ["Heath Ledger"]},
                      _pairs(["Jack Nicholson"], ["Heath Ledger"]),
                      {"type": "singleAnswer", "answer": ["Heath Ledger"]}]),  # a second annotator's: kept twice
    _record("many", [_pairs(["Heath Ledger"], ["Jack Nicholson"], ["Jared Leto"], ["Joaquin Phoenix"],
                            ["Cesar Romero"])]),  # 5! = 120 orders: a seeded draw of 100
    _record("none", [{"type": "singleAnswer", "answer": ["Adam West"]}]),
]


def _config(tiny_bart, seed=7):
    from cqtools.train.fid import FiDTrainConfig

    return FiDTrainConfig(train="-", dev=None, model=tiny_bart, out="-", passages=1, seed=seed)


def test_targets_are_every_order_of_every_combination_as_the_release_builds_them(tiny_bart):
    from cqtools.train.fid import fid_examples
    from cqtools.train.spanseqgen import seqgen_tokenizer

    tokenizer = seqgen_tokenizer(tiny_bart)
    cfg = _config(tiny_bart)
    examples = fid_examples(RECORDS, tokenizer, cfg)
    assert [record["id"] for _, _, record in examples] == ["three", "many"]  # no alias found: left out
    source = tokenizer.decode(examples[0][0][0], skip_special_tokens=True).lower()
    random.seed(cfg.seed)  # cli.py:434: random.seed(args.seed), then the records in order
    want = [release_targets(r["gold"]["annotations"], lambda a: a in source) for r in RECORDS]
    assert examples[0][1] == want[0] and examples[1][1] == want[1] and want[2] == []
    three = examples[0][1]
    assert len(three) == 3 * 6 + 1 + 2 + 1  # (3 x 1 x 1 combinations) x 3! orders, the single answer, 2 orders, it
    assert "jack nicholson <SEP> heath ledger <SEP> jared leto" in three and three.count("heath ledger") == 2
    assert three.count("jack nicholson <SEP> heath ledger") == 1 and len(examples[1][1]) == 100
    assert len(set(examples[1][1])) == 100 and examples[1][1] != sorted(examples[1][1])
    assert fid_examples(RECORDS, tokenizer, _config(tiny_bart, seed=8))[1][1] != examples[1][1]


def test_the_first_batch_decodes_to_a_target_the_release_would_train_each_question_on(tiny_bart):
    """The batch encoder draws one of a question's targets each time (DataLoader.py:59-60, np.random.choice):
    seeded, every order reachable, labels decoding to the drawn target."""
    import torch

    from cqtools.train.fid import draw_targets, fid_batch_encoder, fid_examples
    from cqtools.train.spanseqgen import seqgen_tokenizer

    tokenizer = seqgen_tokenizer(tiny_bart)
    examples = fid_examples(RECORDS, tokenizer, _config(tiny_bart))
    encode = fid_batch_encoder(tokenizer, 48)
    torch.manual_seed(0)
    batch = encode(examples)
    labels = batch["labels"].masked_fill(batch["labels"] == -100, tokenizer.pad_token_id)
    decoded = [" ".join(tokenizer.decode(row, skip_special_tokens=True).split()) for row in labels]
    assert batch["input_ids"].shape[:2] == (2, 1)
    for text, (_, targets, _) in zip(decoded, examples):
        assert text in {" ".join(tokenizer.decode(tokenizer(text_target=t).input_ids,
                                                  skip_special_tokens=True).split()) for t in targets}
    torch.manual_seed(0)
    first = draw_targets(examples)
    torch.manual_seed(0)
    assert draw_targets(examples) == first
    seen = {draw_targets(examples[:1])[0] for _ in range(400)}
    assert seen == set(examples[0][1])  # every order of the question is drawn in time
