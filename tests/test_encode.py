"""`cq encode --shard I/N` then `cq index --dense --vectors DIR` (cqtools/retrieval/vectors.py): shards encoded apart
and merged give the one-process `cq index --dense` index bit for bit; a killed shard resumes where it stopped; vectors
that are not one complete run over the corpus are refused with one line, leaving no index."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from cqtools.cli import cli

from .conftest import FIXTURES, _save_tiny_model, parse_jsonl

CORPUS = str(FIXTURES / "corpus.jsonl")  # 155 passages
CHUNK = "20"  # 8 chunks, the last of 15


def _tiny_bert(out: str, hidden: int) -> str:
    from transformers import BertConfig, BertModel

    return _save_tiny_model(out, lambda tok: BertModel(BertConfig(
        vocab_size=len(tok), hidden_size=hidden, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32)))


@pytest.fixture(scope="module")
def tiny_encoder(tmp_path_factory) -> str:
    """A random, tiny BERT: sentence-transformers loads it with mean pooling (16-dimensional vectors)."""
    return _tiny_bert(str(tmp_path_factory.mktemp("tinyenc")), 16)


@pytest.fixture(scope="module")
def other_encoder(tmp_path_factory) -> str:
    return _tiny_bert(str(tmp_path_factory.mktemp("otherenc")), 8)


def encode(runner, out, shard: str, encoder: str, *extra: str, corpus: str = CORPUS):
    return runner.invoke(cli, ["encode", "--corpus", corpus, "--out", str(out), "--shard", shard, "--encoder", encoder,
                               "--chunk", CHUNK, "--device", "cpu", *extra])


def index(runner, out, *extra: str, corpus: str = CORPUS):
    return runner.invoke(cli, ["index", "--corpus", corpus, "--out", str(out), "--dense", "--threads", "1",
                               "--bm25-matrix", "no", "--device", "cpu", *extra])


def encoded(runner, out, shards: int, encoder: str) -> Path:
    for i in range(shards):
        result = encode(runner, out, f"{i}/{shards}", encoder)
        assert result.exit_code == 0, result.stderr
    return Path(out)


def vectors_of(index_dir) -> tuple[str, np.ndarray]:
    import faiss

    dense = Path(index_dir) / "dense"
    index = faiss.read_index(str(dense / "index"))
    return (dense / "docid").read_text(), index.reconstruct_n(0, index.ntotal)


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype == np.float32 and a.shape == b.shape and np.array_equal(a.view(np.uint32),
                                                                                   b.view(np.uint32))


@pytest.fixture(scope="module")
def one_process(tiny_encoder, tmp_path_factory) -> Path:
    """`cq index --dense` of the corpus in one process, in chunks of CHUNK."""
    from click.testing import CliRunner

    out = tmp_path_factory.mktemp("one") / "idx"
    result = index(CliRunner(), out, "--encoder", tiny_encoder, "--chunk", CHUNK)
    assert result.exit_code == 0, result.stderr
    return out


def dense_hits(runner, index_dir, encoder) -> list:
    result = runner.invoke(cli, ["retrieve", "--index", str(index_dir), "--method", "dense", "--encoder", encoder,
                                 "--hits", "5"], input=(FIXTURES / "questions.jsonl").read_text())
    assert result.exit_code == 0, result.stderr
    return [[(h["id"], h["score"]) for h in r["passages"]] for r in parse_jsonl(result.stdout)]


@pytest.mark.parametrize("shards", [2, 3])
def test_shards_merged_equal_the_one_process_index(runner, tmp_path, tiny_encoder, one_process, shards):
    vecs = encoded(runner, tmp_path / "vecs", shards, tiny_encoder)
    manifests = sorted(p.name for p in vecs.glob("vectors.*.json"))
    assert manifests == [f"vectors.{i}-of-{shards}.json" for i in range(shards)]
    first = json.loads((vecs / manifests[0]).read_text())
    assert first["complete"] and first["passages"] == 155 and first["chunks"] == 8 and first["chunk"] == 20
    assert first["chunks_done"] == list(range(0, 8, shards)) and first["encoder"]["dim"] == 16
    assert set(first["corpus"]) == {"bytes", "head_sha256", "tail_sha256"} and "path" not in json.dumps(first)
    last, ids = np.load(vecs / "chunk-000007.npy"), (vecs / "chunk-000007.ids").read_text().splitlines()
    assert last.shape == (15, 16) and last.dtype == np.float32 and len(ids) == 15
    merged = tmp_path / "idx"
    result = index(runner, merged, "--vectors", str(vecs))  # --encoder not given: the vectors' own
    assert result.exit_code == 0, result.stderr
    docid, got = vectors_of(merged)
    want_docid, want = vectors_of(one_process)
    assert docid == want_docid and docid.splitlines() == [p["id"] for p in parse_jsonl(Path(CORPUS).read_text())]
    assert same_bits(got, want)
    info = json.loads((merged / "cq_index.json").read_text())["dense"]
    assert info["encoder"] == tiny_encoder and info["passages"] == 155 and info["normalized"] is True
    assert dense_hits(runner, merged, tiny_encoder) == dense_hits(runner, one_process, tiny_encoder)
    assert not list(one_process.rglob(".vectors"))  # the one-process build's vector files are gone


def test_a_killed_shard_resumes_and_encodes_only_its_missing_chunks(runner, tmp_path, tiny_encoder, one_process,
                                                                     monkeypatch):
    from cqtools.retrieval.dense import PassageEncoder

    real, calls = PassageEncoder.encode_chunk, []

    def counted(limit):
        def encode_chunk(self, passages, batch_size, show_progress=False):
            if len(calls) == limit:
                raise KeyboardInterrupt  # killed while encoding its (limit + 1)-th chunk
            calls.append(passages[0]["id"])
            return real(self, passages, batch_size, show_progress)
        return encode_chunk

    vecs = tmp_path / "vecs"
    monkeypatch.setattr(PassageEncoder, "encode_chunk", counted(2))
    killed = encode(runner, vecs, "0/2", tiny_encoder)
    assert killed.exit_code != 0 and len(calls) == 2
    assert sorted(p.name for p in vecs.glob("chunk-*.npy")) == ["chunk-000000.npy", "chunk-000002.npy"]
    manifest = json.loads((vecs / "vectors.0-of-2.json").read_text())
    assert manifest["chunks_done"] == [0, 2] and not manifest["complete"]
    (vecs / ".chunk-000004.npy.tmp-99999").write_bytes(b"\x93NUMPY half")  # a kill mid-write
    refused = index(runner, tmp_path / "early", "--vectors", str(vecs))
    assert refused.exit_code == 1 and "shard 1/2" in refused.stderr and "has not been encoded" in refused.stderr
    calls.clear()
    monkeypatch.setattr(PassageEncoder, "encode_chunk", counted(None))
    assert encode(runner, vecs, "0/2", tiny_encoder).exit_code == 0
    assert len(calls) == 2 and not list(vecs.glob(".chunk-*"))  # chunks 4 and 6 only; the torn file is gone
    calls.clear()
    assert encode(runner, vecs, "0/2", tiny_encoder).exit_code == 0 and calls == []  # nothing left to do
    assert encode(runner, vecs, "1/2", tiny_encoder).exit_code == 0 and len(calls) == 4
    result = index(runner, tmp_path / "idx", "--vectors", str(vecs), "--encoder", tiny_encoder)
    assert result.exit_code == 0, result.stderr
    docid, got = vectors_of(tmp_path / "idx")
    want_docid, want = vectors_of(one_process)
    assert docid == want_docid and same_bits(got, want)


@pytest.fixture(scope="module")
def two_shards(tiny_encoder, tmp_path_factory) -> Path:
    from click.testing import CliRunner

    return encoded(CliRunner(), tmp_path_factory.mktemp("two") / "vecs", 2, tiny_encoder)


def refused(runner, out: Path, *args: str, corpus: str = CORPUS) -> str:
    """`cq index` refuses with one line and leaves nothing in --out's parent; returns the line."""
    result = index(runner, out, "-q", *args, corpus=corpus)
    assert result.exit_code == 1, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("cq index: error: ") and "Traceback" not in result.stderr, lines
    assert not out.exists() and not [p for p in out.parent.iterdir() if p.name.startswith(f".{out.name}.")]
    return lines[0]


def copy_of(vecs: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(vecs, tmp_path / "copy"))


def test_a_missing_chunk_or_shard_is_refused_naming_the_command(runner, tmp_path, two_shards, tiny_encoder):
    vecs = copy_of(two_shards, tmp_path)
    (vecs / "chunk-000003.npy").unlink()
    (vecs / "chunk-000007.npy").unlink()
    line = refused(runner, tmp_path / "idx", "--vectors", str(vecs))
    assert "shard 1/2" in line and "missing chunks 3, 7" in line and f"rerun `cq encode --corpus {CORPUS}" in line
    assert "--shard 1/2" in line
    (vecs / "vectors.1-of-2.json").unlink()
    line = refused(runner, tmp_path / "idx", "--vectors", str(vecs))
    assert "shard 1/2" in line and "has not been encoded" in line
    assert "--vectors goes with --dense" in runner.invoke(cli, ["index", "--corpus", CORPUS, "--out",
                                                                str(tmp_path / "x"), "--vectors", str(vecs)]).stderr


def test_a_shard_of_another_encoder_is_refused(runner, tmp_path, two_shards, tiny_encoder, other_encoder):
    vecs = copy_of(two_shards, tmp_path)
    result = encode(runner, vecs, "1/2", other_encoder, "-q")  # into a directory of another encoder's vectors
    lines = result.stderr.strip().splitlines()
    assert result.exit_code == 1 and len(lines) == 1
    assert f"made by encoder {tiny_encoder}, not {other_encoder}" in lines[0]
    other = tmp_path / "other"
    assert encode(runner, other, "1/2", other_encoder).exit_code == 0
    for path in other.iterdir():  # shard 1 replaced by one of another encoder
        shutil.copy(path, vecs / path.name)
    line = refused(runner, tmp_path / "idx", "--vectors", str(vecs))
    assert "not of one run" in line and "encoder" in line
    line = refused(runner, tmp_path / "idx", "--vectors", str(two_shards), "--encoder", other_encoder)
    assert f"made by encoder {tiny_encoder}, not {other_encoder}" in line


def test_vectors_of_another_corpus_are_refused(runner, tmp_path, two_shards):
    passages = parse_jsonl(Path(CORPUS).read_text())
    edited = tmp_path / "edited.jsonl"
    edited.write_text("".join(json.dumps({**p, "text": p["text"] + "!"}) + "\n" for p in passages))
    line = refused(runner, tmp_path / "idx", "--vectors", str(two_shards), corpus=str(edited))
    assert "made from another corpus" in line


def test_another_chunk_size_or_shard_count_is_refused(runner, tmp_path, two_shards, tiny_encoder):
    vecs = copy_of(two_shards, tmp_path)
    for args, what in ((["--chunk", "30"], "chunks of 20 passages, not 30"),
                       (["--shard", "1/3"], "shards of 2, not 3")):
        result = runner.invoke(cli, ["encode", "--corpus", CORPUS, "--out", str(vecs), "--shard", "0/2",
                                     "--encoder", tiny_encoder, "--chunk", CHUNK, "--device", "cpu", "-q", *args])
        lines = result.stderr.strip().splitlines()
        assert result.exit_code == 1 and len(lines) == 1 and what in lines[0], lines
    assert sorted(p.name for p in vecs.glob("vectors.*")) == sorted(p.name for p in two_shards.glob("vectors.*"))
    extra = tmp_path / "extra"  # a third shard's manifest of another N, copied in
    assert encode(runner, extra, "2/3", tiny_encoder).exit_code == 0
    shutil.copy(extra / "vectors.2-of-3.json", vecs)
    line = refused(runner, tmp_path / "idx", "--vectors", str(vecs))
    assert "not of one run" in line and "shards of" in line


def test_a_damaged_chunk_is_refused_then_encoded_again(runner, tmp_path, two_shards, tiny_encoder, one_process):
    vecs = copy_of(two_shards, tmp_path)
    chunk = vecs / "chunk-000005.npy"
    chunk.write_bytes(chunk.read_bytes()[:-7])  # truncated
    line = refused(runner, tmp_path / "idx", "--vectors", str(vecs))
    assert "chunk-000005.npy" in line and "damaged" in line and "--shard 1/2" in line
    chunk.write_bytes(b"not a numpy file")
    assert "chunk-000005.npy" in refused(runner, tmp_path / "idx", "--vectors", str(vecs))
    assert encode(runner, vecs, "1/2", tiny_encoder).exit_code == 0  # encodes chunk 5 again
    (vecs / "chunk-000002.ids").write_text("x\n" * 20)  # ids of other passages
    line = refused(runner, tmp_path / "idx", "--vectors", str(vecs))
    assert "chunk 2 of the vectors" in line and "another version" in line and "--shard 0/2" in line
    assert encode(runner, vecs, "0/2", tiny_encoder).exit_code == 0  # and chunk 2
    assert index(runner, tmp_path / "idx", "--vectors", str(vecs)).exit_code == 0
    assert same_bits(vectors_of(tmp_path / "idx")[1], vectors_of(one_process)[1])


def test_vectors_swapped_under_intact_ids_are_refused_then_encoded_again(runner, tmp_path, two_shards, tiny_encoder,
                                                                          one_process):
    """Issue 57 item 2: `cp chunk-000001.npy chunk-000002.npy` keeps every id and shape; the chunk's sha256 in
    its manifest tells (6fba24f indexed it, exit 0, and retrieval differed from the real index)."""
    vecs = copy_of(two_shards, tmp_path)
    manifest = json.loads((vecs / "vectors.0-of-2.json").read_text())
    assert sorted(manifest["sha256"], key=int) == ["0", "2", "4", "6"]
    shutil.copy(vecs / "chunk-000001.npy", vecs / "chunk-000002.npy")
    line = refused(runner, tmp_path / "idx", "--vectors", str(vecs))
    assert "chunk-000002.npy holds other vectors" in line and "--shard 0/2" in line
    result = encode(runner, vecs, "0/2", tiny_encoder)  # the rerun the message names sees it too
    assert result.exit_code == 0 and "chunk 2" in result.stderr and "sha256" in result.stderr
    assert index(runner, tmp_path / "idx", "--vectors", str(vecs)).exit_code == 0
    assert same_bits(vectors_of(tmp_path / "idx")[1], vectors_of(one_process)[1])


def test_a_shard_being_written_is_not_written_twice(runner, tmp_path, two_shards, tiny_encoder):
    import fcntl

    vecs = copy_of(two_shards, tmp_path)
    with open(vecs / "vectors.1-of-2.lock", "a+") as held:  # another `cq encode --shard 1/2` running
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        result = encode(runner, vecs, "1/2", tiny_encoder, "-q")
    lines = result.stderr.strip().splitlines()
    assert result.exit_code == 1 and len(lines) == 1 and "another `cq encode` is writing this shard" in lines[0]


def test_a_shard_of_padded_batches_among_unpadded_ones_is_refused(runner, tmp_path, two_shards, tiny_encoder,
                                                                   monkeypatch):
    """CQ_PADDED_BATCHES=1 changes the vectors' last bits: the manifest says so, and a shard encoded the other
    way is refused as not of one run."""
    vecs = copy_of(two_shards, tmp_path)
    monkeypatch.setenv("CQ_PADDED_BATCHES", "1")
    result = encode(runner, vecs, "1/2", tiny_encoder, "-q")
    assert result.exit_code == 1 and len(result.stderr.strip().splitlines()) == 1
    padded = tmp_path / "padded"
    assert encode(runner, padded, "1/2", tiny_encoder).exit_code == 0
    assert json.loads((padded / "vectors.1-of-2.json").read_text())["encoder"]["padded_batches"] is True
    for path in padded.iterdir():
        shutil.copy(path, vecs / path.name)
    monkeypatch.delenv("CQ_PADDED_BATCHES")
    assert "not of one run" in refused(runner, tmp_path / "idx", "--vectors", str(vecs))
