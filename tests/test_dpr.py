"""DPR: separate question/context encoders (CLS pooling, raw inner product) in the model layer,
`cq index --dense --encoder <DPR ctx encoder>` and `cq retrieve --method dense` over it. The models
are tiny, random and built here (seeded), with the MiniLM tokenizer; nothing is downloaded."""
import json
import os

import numpy as np
import pytest

from cqtools.cli import cli

from .conftest import FIXTURES, parse_jsonl

QUESTIONS = ["Who played the Joker in Suicide Squad?", "When was the Eiffel Tower built?", "capital of France"]


@pytest.fixture(scope="module")
def tiny_dpr(tmp_path_factory):
    """{"question": dir, "context": dir}: a tiny DPRQuestionEncoder and DPRContextEncoder, seeded,
    saved under DPR's naming (dpr-question_encoder-*, dpr-ctx_encoder-*)."""
    import torch
    from transformers import AutoTokenizer, DPRConfig, DPRContextEncoder, DPRQuestionEncoder

    from cqtools.models.resolve import resolve

    tok = AutoTokenizer.from_pretrained(resolve("sentence-transformers/all-MiniLM-L6-v2", announce=False).path)
    root = tmp_path_factory.mktemp("dpr")
    out = {}
    for seed, (role, cls) in enumerate([("question", DPRQuestionEncoder), ("context", DPRContextEncoder)]):
        torch.manual_seed(seed)
        config = DPRConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                           intermediate_size=64, max_position_embeddings=512)
        path = root / f"dpr-{'question' if role == 'question' else 'ctx'}_encoder-tiny"
        cls(config).eval().save_pretrained(path)
        tok.save_pretrained(path)
        out[role] = str(path)
    return out


@pytest.fixture(scope="module")
def corpus():
    return [json.loads(line) for line in (FIXTURES / "corpus.jsonl").read_text().splitlines()]


def reference(path, texts, titles=None, max_length=512):
    """What transformers' DPR classes compute directly, one text at a time: pooler_output."""
    import torch
    import transformers
    from transformers import AutoTokenizer

    config = json.loads(open(os.path.join(path, "config.json")).read())
    model = getattr(transformers, config["architectures"][0]).from_pretrained(path).eval()
    tok = AutoTokenizer.from_pretrained(path)
    out = []
    with torch.no_grad():
        for i, text in enumerate(texts):
            args = (titles[i], text) if titles is not None else (text,)
            inputs = tok(*args, truncation=True, max_length=max_length, return_tensors="pt")
            out.append(model(**inputs).pooler_output[0].numpy())
    return np.stack(out)


def test_vectors_equal_transformers_dpr(tiny_dpr, corpus, monkeypatch):
    from cqtools.models import dpr

    q = dpr.load_dpr(tiny_dpr["question"], "cpu", dpr.QUESTION)
    c = dpr.load_dpr(tiny_dpr["context"], "cpu", dpr.CONTEXT)
    assert q.kind == dpr.QUESTION and c.kind == dpr.CONTEXT
    np.testing.assert_allclose(q.encode(QUESTIONS), reference(tiny_dpr["question"], QUESTIONS), rtol=0, atol=1e-5)
    texts, titles = [p["text"] for p in corpus[:8]], [p["title"] for p in corpus[:8]]
    mine = c.encode(texts, titles=titles)
    np.testing.assert_allclose(mine, reference(tiny_dpr["context"], texts, titles, max_length=256), rtol=0, atol=1e-5)
    # padded batches pass the attention mask: the same vectors up to float error
    monkeypatch.setattr(c, "padded", True)
    np.testing.assert_allclose(c.encode(texts, titles=titles, batch_size=4), mine, rtol=0, atol=1e-4)
    with pytest.raises(Exception, match="DPRContextEncoder is needed"):
        dpr.load_dpr(tiny_dpr["question"], "cpu", dpr.CONTEXT)


@pytest.fixture(scope="module")
def dpr_index(tiny_dpr, tmp_path_factory):
    from click.testing import CliRunner

    out = tmp_path_factory.mktemp("dpridx") / "idx"
    result = CliRunner().invoke(cli, ["index", "--corpus", str(FIXTURES / "corpus.jsonl"), "--out", str(out),
                                      "--dense", "--encoder", tiny_dpr["context"], "--threads", "2"])
    assert result.exit_code == 0, result.output
    return str(out)


def test_index_records_both_encoders(dpr_index, tiny_dpr):
    dense = json.loads(open(os.path.join(dpr_index, "cq_index.json")).read())["dense"]
    assert dense["kind"] == "dpr" and dense["normalized"] is False and dense["pooling"] == "cls"
    assert dense["query_encoder"] == tiny_dpr["question"]  # paired by DPR's naming


def test_dense_retrieval_is_raw_inner_product(runner, dpr_index, tiny_dpr, corpus):
    """cq retrieve's ids and scores equal a brute-force inner product of transformers' own DPR
    vectors (question encoder vs context encoder on title [SEP] text), with no normalisation."""
    import faiss

    stored = faiss.read_index(os.path.join(dpr_index, "dense", "index"))
    passages = stored.reconstruct_n(0, stored.ntotal)
    expected = reference(tiny_dpr["context"], [p["text"] for p in corpus], [p["title"] for p in corpus], 256)
    np.testing.assert_allclose(passages, expected, rtol=0, atol=1e-5)
    assert not np.allclose(np.linalg.norm(passages, axis=1), 1.0)  # not normalised, as DPR

    questions = "".join(json.dumps({"id": f"q{i}", "question": q}) + "\n" for i, q in enumerate(QUESTIONS))
    result = runner.invoke(cli, ["retrieve", "--index", dpr_index, "--method", "dense", "--hits", "5"],
                           input=questions)
    assert result.exit_code == 0, result.stderr
    qvecs = reference(tiny_dpr["question"], QUESTIONS)
    ids = [p["id"] for p in corpus]
    for record, qvec in zip(parse_jsonl(result.stdout), qvecs):
        scores = expected @ qvec
        top = sorted(range(len(ids)), key=lambda i: (-scores[i], ids[i]))[:5]
        hits = record["passages"]
        assert [h["id"] for h in hits] == [ids[i] for i in top]
        assert [h["score"] for h in hits] == pytest.approx([float(scores[i]) for i in top], abs=1e-4)
        assert record["meta"]["retrieve"]["encoder"] == tiny_dpr["question"]


def test_hybrid_over_a_dpr_index(runner, dpr_index):
    result = runner.invoke(cli, ["retrieve", "--index", dpr_index, "--method", "hybrid", "--hits", "3"],
                           input='{"question": "Who played the Joker in Joker (2019)?"}\n')
    assert result.exit_code == 0, result.stderr
    assert len(parse_jsonl(result.stdout)[0]["passages"]) == 3


@pytest.mark.heavy(reason="builds a Lucene index (JVM)")
def test_dpr_encoder_mistakes_are_one_line_errors(runner, tiny_dpr, tmp_path):
    corpus = str(FIXTURES / "formats" / "psgs_w100.tsv")
    wrong = runner.invoke(cli, ["index", "--corpus", corpus, "--out", str(tmp_path / "a"), "--dense",
                                "--encoder", tiny_dpr["question"]])
    assert wrong.exit_code == 1 and "DPRContextEncoder is needed" in wrong.stderr
    assert "Traceback" not in wrong.stderr
    renamed = tmp_path / "my-context-model"
    os.symlink(tiny_dpr["context"], renamed)
    unpaired = runner.invoke(cli, ["index", "--corpus", corpus, "--out", str(tmp_path / "b"), "--dense",
                                   "--encoder", str(renamed)])
    assert unpaired.exit_code == 1 and "--query-encoder" in unpaired.stderr
    paired = runner.invoke(cli, ["index", "--corpus", corpus, "--out", str(tmp_path / "c"), "--dense",
                                 "--encoder", str(renamed), "--query-encoder", tiny_dpr["question"]])
    assert paired.exit_code == 0, paired.stderr
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
