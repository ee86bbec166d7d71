"""`cq train rerank` (issue 55 item 5): REFUEL's reranker recipe (amzn/refuel-open-domain-qa @159090e,
RerankData.py, models/reranker.py, DataLoader.py, scripts/reranker/train_nq.sh): positives and negatives as the
release picks them, its listwise loss, and a tiny random BERT trained end to end and read back by
`cq rerank --model DIR`. CPU only, no hub."""
import json
import math
import os

import pytest

from cqtools.cli import cli

from .conftest import jsonl, parse_jsonl
from .conftest_models import tiny_cross_encoder  # noqa: F401  (a random 1-label BERT with MiniLM's tokenizer)

pytestmark = pytest.mark.heavy(reason="trains a tiny cross-encoder")


def _record(rid="q1", titles=None):
    passages = [{"id": f"p{n}", "title": title, "text": text} for n, (title, text) in enumerate([
        ("Joker", "The Joker was played by Heath Ledger in 2008."),
        ("Batman", "A film about a man dressed as a bat."),
        ("Joker (2019 film)", "Joaquin Phoenix plays the Joker."),
        ("Gotham", "A city."),
        ("Heath", "Heath is a kind of shrubland."),
    ])]
    gold = {"annotations": [{"type": "multipleQAs", "qaPairs": [
        {"question": "in 2008?", "answer": ["Heath Ledger"]}, {"question": "in 2019?", "answer": ["Joaquin Phoenix"]}]}]}
    if titles:
        gold["viewed_doc_titles"] = titles
    return {"id": rid, "question": "Who played the Joker?", "gold": gold, "passages": passages}


def test_positives_hold_a_gold_answer_and_every_other_passage_is_a_negative():
    """RerankData.py:192-194: a normalised alias inside the normalised text; 250-265: the gold pages' positives when
    the record names its pages, the others (answer passages of other pages too) negatives."""
    from cqtools.train.rerank import groups

    positives, negatives = groups(_record(), None)
    assert [p["id"] for p in positives] == ["p0", "p2"]
    assert [p["id"] for p in negatives] == ["p1", "p3", "p4"]
    positives, negatives = groups(_record(titles=["Joker (2019 film)"]), None)
    assert [p["id"] for p in positives] == ["p2"] and [p["id"] for p in negatives] == ["p0", "p1", "p3", "p4"]
    positives, negatives = groups(_record(titles=["Some other page"]), 3)  # no gold page among them: all answers
    assert [p["id"] for p in positives] == ["p0", "p2"] and [p["id"] for p in negatives] == ["p1"]
    record = _record()
    record["gold"]["annotations"] = [{"type": "singleAnswer", "answer": ["Jack Nicholson"]}]
    assert groups(record, None) == ([], [])  # no positive: the question is left out (RerankData.py:252-253)


def test_the_loss_is_cross_entropy_over_each_group_with_the_positive_first():
    """models/reranker.py:50-58: CrossEntropy(logits of the group, the positive's slot) summed, / questions."""
    import torch

    from cqtools.train.rerank import group_loss

    logits = torch.tensor([2.0, 0.0, 1.0, 0.5, 0.5])  # group 1: 3 candidates; group 2: 2
    want = (-(2.0 - math.log(math.exp(2) + 1 + math.exp(1))) - (0.5 - math.log(2 * math.exp(0.5)))) / 2
    assert group_loss(logits, [3, 2], [1, 1]).item() == pytest.approx(want)


def test_a_group_is_one_positive_and_up_to_31_negatives_drawn_afresh():
    """DataLoader.py:407-422 with train_nq.sh's train_MP 1 and train_MN 31: a fresh draw each time, seeded."""
    import torch

    from cqtools.train.rerank import RerankTrainConfig, draw_group

    cfg = RerankTrainConfig(train="-", dev=None, model="-", out="-")
    example = ("q", ["pos a", "pos b"], [f"neg {n}" for n in range(40)])
    torch.manual_seed(0)
    draws = [draw_group(example, cfg) for _ in range(6)]
    assert all(len(texts) == 32 and n == 1 and texts[0].startswith("pos") for texts, n in draws)
    assert all(all(t.startswith("neg") for t in texts[1:]) for texts, _ in draws)
    assert len({tuple(texts) for texts, _ in draws}) == 6
    torch.manual_seed(0)
    assert [draw_group(example, cfg) for _ in range(6)] == draws


def test_defaults_are_refuels_train_nq_sh():
    from cqtools.train.rerank import RerankTrainConfig

    cfg = RerankTrainConfig(train="-", dev=None, model="-", out="-")
    assert (cfg.batch_size, cfg.lr, cfg.epochs, cfg.eval_every, cfg.train_positives, cfg.train_negatives,
            cfg.dev_passages, cfg.max_length) == (16, 1e-5, 10, 10, 1, 31, 200, 160)


def test_a_cpu_run_with_refuels_batch_is_told_how_to_split_it():
    """REFUEL's 16 x 32 pairs in one pass do not fit a 24 GB CPU box (16 x 16 peaked at 23.7 GB): the advice names a
    split whose passes hold at most CPU_PAIRS_WARN pairs and whose product is the batch; a GPU run, an accumulating
    run or a small batch hears nothing."""
    from cqtools.train.rerank import CPU_PAIRS_WARN, RerankTrainConfig, cpu_batch_advice

    cfg = RerankTrainConfig(train="-", dev=None, model="-", out="-")
    assert "--batch-size 2 --grad-accum 8" in cpu_batch_advice(cfg, "cpu")
    assert "--batch-size 4 --grad-accum 4" in cpu_batch_advice(
        RerankTrainConfig(train="-", dev=None, model="-", out="-", train_negatives=15), "cpu")
    assert "--batch-size 1 --grad-accum 12" in cpu_batch_advice(
        RerankTrainConfig(train="-", dev=None, model="-", out="-", batch_size=12, train_negatives=99), "cpu")
    assert cpu_batch_advice(cfg, "cuda") is None
    assert cpu_batch_advice(RerankTrainConfig(train="-", dev=None, model="-", out="-", grad_accum=4), "cpu") is None
    assert cpu_batch_advice(RerankTrainConfig(train="-", dev=None, model="-", out="-", batch_size=2), "cpu") is None
    assert cpu_batch_advice(RerankTrainConfig(train="-", dev=None, model="-", out="-", batch_size=1,
                                              train_negatives=99), "cpu") is None
    assert cpu_batch_advice(RerankTrainConfig(train="-", dev=None, model="-", out="-", accumulate="sum"),
                            "cpu") is None
    assert 2 * 32 <= CPU_PAIRS_WARN


def test_a_tiny_cross_encoder_trains_end_to_end_and_cq_rerank_reads_it(runner, tmp_path, tiny_cross_encoder,
                                                                        monkeypatch):
    """`cq train rerank` on records with passages and gold answers, dev recall kept, then `cq rerank --model DIR`
    reranks with the trained weights (the default model stays the offline ms-marco one). Its 2 x 3 pairs a pass,
    with the CPU bound lowered to 1, get the split advice on stderr (the warning is wired to the run's device)."""
    monkeypatch.setattr("cqtools.train.rerank.CPU_PAIRS_WARN", 1)
    train = tmp_path / "train.jsonl"
    train.write_text(jsonl([_record(f"q{n}") for n in range(6)]))
    out = str(tmp_path / "rerank")
    done = runner.invoke(cli, ["train", "rerank", "--model", tiny_cross_encoder, "--train", str(train), "--dev",
                               str(train), "--out", out, "--batch-size", "2", "--train-negatives", "2",
                               "--max-steps", "4", "--eval-every", "2", "--lr", "1e-3", "--max-length", "48",
                               "--seed", "3", "-q"])
    assert done.exit_code == 0, done.output
    assert "--batch-size 1 --grad-accum 2" in done.stderr, done.stderr
    summary = json.loads(done.stdout)
    with open(os.path.join(out, "cq_train.json")) as fh:
        saved = json.load(fh)
    assert summary["task"] == "rerank" and saved["steps"] == 4 and saved["train_questions"] == 6
    assert saved["selected_on"] == "recall" and [h["step"] for h in saved["history"]] == [2, 4]
    assert set(saved["dev"]) == {"recall@10", "recall@20", "recall@50", "recall@100", "recall"}
    assert saved["config"]["train_negatives"] == 2 and saved["config"]["max_length"] == 48

    result = runner.invoke(cli, ["rerank", "--model", out, "--top", "3", "-q"], input=jsonl([_record()]))
    assert result.exit_code == 0, result.stderr
    record = parse_jsonl(result.stdout)[0]
    assert record["meta"]["rerank"]["model"] == out and len(record["passages"]) == 3

    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from cqtools.stages.rerank import passage_text

    tok, model = AutoTokenizer.from_pretrained(out), AutoModelForSequenceClassification.from_pretrained(out).eval()
    base = AutoModelForSequenceClassification.from_pretrained(tiny_cross_encoder).eval()
    texts = [passage_text(p) for p in _record()["passages"]]
    with torch.inference_mode():
        enc = tok(["Who played the Joker?"] * len(texts), texts, truncation=True, max_length=48, padding=True,
                  return_tensors="pt")
        trained, untrained = model(**enc).logits[:, 0].tolist(), base(**enc).logits[:, 0].tolist()
    assert trained != untrained  # the directory holds the trained weights
    ranked = sorted(range(len(texts)), key=lambda n: (-trained[n], f"p{n}"))[:3]
    assert [p["id"] for p in record["passages"]] == [f"p{n}" for n in ranked]
    assert [p["rerank_score"] for p in record["passages"]] == pytest.approx([trained[n] for n in ranked], abs=1e-4)


def test_records_without_an_answer_passage_are_a_one_line_error(runner, tmp_path, tiny_cross_encoder):
    record = _record()
    record["gold"]["annotations"] = [{"type": "singleAnswer", "answer": ["Jack Nicholson"]}]
    train = tmp_path / "train.jsonl"
    train.write_text(jsonl([record]))
    done = runner.invoke(cli, ["train", "rerank", "--model", tiny_cross_encoder, "--train", str(train), "--out",
                               str(tmp_path / "m"), "-q"])
    assert done.exit_code != 0 and "no record has a retrieved passage holding a gold answer" in done.stderr
    assert "Traceback" not in done.output


def test_the_default_offline_int8_reranker_trains_from_a_dequantised_copy(runner, tmp_path, monkeypatch):
    """With no --model, cq train rerank starts from the offline ms-marco-MiniLM-L-12-v2 (INT8 ONNX): its weights are
    dequantised once into a BERT classifier under $CQ_CACHE that scores pairs as the ONNX copy does (within INT8's
    rounding), and trains."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from cqtools.models.load import load_cross_encoder
    from cqtools.models.onnx_torch import torch_copy
    from cqtools.models.resolve import resolve
    from cqtools.models.roles import RERANKER

    resolved = resolve(RERANKER)
    if resolved.fmt != "onnx":
        pytest.skip(f"{RERANKER} resolves to {resolved.source}, not the offline INT8 copy")
    monkeypatch.setenv("CQ_CACHE", str(tmp_path / "cache"))
    train = tmp_path / "train.jsonl"
    train.write_text(jsonl([_record()]))
    out = str(tmp_path / "rerank")
    done = runner.invoke(cli, ["train", "rerank", "--train", str(train), "--out", out, "--batch-size", "1",
                               "--train-negatives", "2", "--max-steps", "1", "--max-length", "48", "-q"])
    assert done.exit_code == 0, done.output
    copy = torch_copy(resolved, str(tmp_path / "cache"))  # the one training built (cached)
    assert os.path.dirname(copy) == str(tmp_path / "cache" / "torch-copies")
    pairs = [("Who played the Joker?", "Joker\nHeath Ledger played the Joker in The Dark Knight."),
             ("Who played the Joker?", "Paris\nParis is the capital of France."),
             ("how many people live in berlin", "Berlin\nBerlin has a population of 3.7 million.")]
    tok, model = AutoTokenizer.from_pretrained(copy), AutoModelForSequenceClassification.from_pretrained(copy).eval()
    with torch.inference_mode():
        enc = tok([q for q, _ in pairs], [p for _, p in pairs], padding=True, return_tensors="pt")
        torch_scores = model(**enc).logits[:, 0].tolist()
    onnx_scores = load_cross_encoder(RERANKER, "cpu").predict(pairs)
    assert torch_scores == pytest.approx(onnx_scores, abs=0.5) and onnx_scores[0] > 0 > onnx_scores[1]
    with open(os.path.join(out, "cq_train.json")) as fh:
        assert json.load(fh)["base_model"].startswith(RERANKER)


def test_the_offline_int8_bare_encoder_dequantises_into_a_classifier_with_its_own_encoder(tmp_path):
    """BAAI/bge-small-en-v1.5's offline copy is a bare BertModel export (no "bert." scope, no pooler, no head):
    its dequantised copy holds the same encoder (CLS states as onnxruntime computes them, within INT8's
    rounding), a seeded new head, and two builds give the same bytes."""
    import numpy as np
    import onnxruntime
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from cqtools.models.onnx_torch import torch_copy
    from cqtools.models.resolve import resolve

    resolved = resolve("BAAI/bge-small-en-v1.5")
    if resolved.fmt != "onnx":
        pytest.skip(f"bge-small resolves to {resolved.source}, not the offline INT8 copy")
    copies = []
    for i in range(2):  # each build from another global RNG state, as two processes would start
        torch.manual_seed(100 + i)
        copies.append(torch_copy(resolved, str(tmp_path / f"cache{i}")))
    texts = ["Who played the Joker?", "Berlin has a population of 3.7 million."]
    tok = AutoTokenizer.from_pretrained(copies[0])
    enc = tok(texts, padding=True, return_tensors="np")
    session = onnxruntime.InferenceSession(os.path.join(resolved.path, "model.onnx"))
    names = {i.name for i in session.get_inputs()}
    onnx_cls = session.run(None, {k: v.astype("int64") for k, v in enc.items() if k in names})[0][:, 0]
    models = [AutoModelForSequenceClassification.from_pretrained(c).eval() for c in copies]
    with torch.inference_mode():
        states = models[0].bert(**{k: torch.from_numpy(v) for k, v in enc.items()}).last_hidden_state[:, 0].numpy()
    cosine = (states * onnx_cls).sum(1) / np.linalg.norm(states, axis=1) / np.linalg.norm(onnx_cls, axis=1)
    assert cosine.min() > 0.98, cosine
    first, second = (dict(m.state_dict()) for m in models)
    assert all(torch.equal(first[k], second[k]) for k in first)
    assert models[0].config.num_hidden_layers == 12 and models[0].config.hidden_size == 384
