"""`cq index` on a corpus of any size: bounded memory settings, progress, the BM25 matrix's limit, and the
corpus errors that must stop a build before anything replaces a good index (issue 44 item 1)."""
from __future__ import annotations

import gzip
import json
import logging
import sqlite3

import pytest

from cqtools.cli import cli

pytestmark = pytest.mark.heavy  # starts a JVM


def passages(n: int, prefix: str = "p") -> list[dict]:
    return [{"id": f"{prefix}{i}", "title": f"Title {i % 7}", "text": f"words {i} about item {i % 13} and more {i % 5}"}
            for i in range(n)]


def write(path, rows, blank_at=None) -> str:
    lines = [json.dumps(r) for r in rows]
    if blank_at is not None:
        lines.insert(blank_at, "")
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def test_document_numbers_come_from_the_id_doc_values_across_segments(tmp_path):
    """_docnums reads the ids' doc values segment by segment: the same pairs as the stored documents give,
    on an index of several segments (two threads over several collection files)."""
    from cqtools.retrieval import jvm, lucene

    out = tmp_path / "lucene"
    count = lucene.build_lucene(iter(passages(900)), str(out), threads=2, chunk=100, buffer_mb=64)
    assert count == 900
    reader = jvm.open_reader(str(out))
    try:
        assert reader.leaves().size() > 1
        stored = reader.storedFields()
        want = [(n, stored.document(n).get("id")) for n in range(reader.maxDoc())]
    finally:
        reader.close()
    assert list(lucene._docnums(str(out))) == want  # noqa: SLF001


def test_indexing_buffer_follows_the_heap():
    from cqtools.retrieval.jvm import indexing_buffer_mb

    assert indexing_buffer_mb("2g") == 256
    assert indexing_buffer_mb("512m") == 64
    assert indexing_buffer_mb("64g") == 2048
    assert indexing_buffer_mb("default") == 256


def test_a_heap_size_the_jvm_refuses_is_one_line_before_anything_is_built(runner, tmp_path):
    out = tmp_path / "idx"
    result = runner.invoke(cli, ["index", "--corpus", write(tmp_path / "c.jsonl", passages(5)), "--out", str(out),
                                 "--jvm-heap", "4x"])
    assert result.exit_code == 1 and "not a JVM heap size" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and not out.exists()


def test_estimate_of_passages_for_progress(tmp_path):
    from cqtools.data.formats import estimate_passages

    small = write(tmp_path / "small.jsonl", passages(50))
    assert estimate_passages(small) == 50  # shorter than the sample: exact
    big = write(tmp_path / "big.jsonl", passages(60_000))
    assert abs(estimate_passages(big, sample=1 << 16) - 60_000) < 6_000
    zipped = tmp_path / "big.jsonl.gz"  # the compressed bytes read ahead of the sample blur the ratio a little
    zipped.write_bytes(gzip.compress(open(big, "rb").read()))
    assert abs(estimate_passages(str(zipped)) - 60_000) < 12_000


@pytest.mark.parametrize("kind, expect", [
    ("blank", "line 4: an empty line"),
    ("binary", "line 4: not UTF-8 text"),
    ("duplicate", "passage id 'p1' appears twice in the corpus (again at passage 6)"),
])
def test_bad_corpus_lines_stop_the_build_and_keep_the_old_index(runner, tmp_path, kind, expect):
    """An empty line, a binary line and a repeated id: one line naming where and what to do, exit 1, and
    an index already at --out (replaced only with --overwrite) is left exactly as it was."""
    out = tmp_path / "idx"
    good = write(tmp_path / "good.jsonl", passages(5, "g"))
    assert runner.invoke(cli, ["index", "--corpus", good, "--out", str(out), "-q"]).exit_code == 0
    before = sorted(p.name for p in out.iterdir())
    rows = passages(5)
    corpus = tmp_path / f"{kind}.jsonl"
    if kind == "blank":
        write(corpus, rows, blank_at=3)
    elif kind == "binary":
        write(corpus, rows)
        lines = corpus.read_bytes().splitlines(keepends=True)
        corpus.write_bytes(b"".join(lines[:3]) + b"\x00\xff\xfe\x81 binary\n" + b"".join(lines[3:]))
    else:
        write(corpus, rows + [rows[1]])
    result = runner.invoke(cli, ["index", "--corpus", str(corpus), "--out", str(out), "--overwrite", "-q"])
    assert result.exit_code == 1, result.output
    assert expect in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert sorted(p.name for p in out.iterdir()) == before
    store = sqlite3.connect(out / "docstore.sqlite")
    assert {r[0] for r in store.execute("SELECT id FROM docs")} == {f"g{i}" for i in range(5)}
    assert not [p for p in tmp_path.iterdir() if ".building-" in p.name]


def test_dpr_tsv_empty_line_is_an_error(runner, tmp_path):
    corpus = tmp_path / "psgs.tsv"
    corpus.write_text("id\ttext\ttitle\n1\tsome text\tA\n\n2\tmore text\tB\n")
    result = runner.invoke(cli, ["index", "--corpus", str(corpus), "--out", str(tmp_path / "idx"), "-q"])
    assert result.exit_code == 1 and "line 3: an empty line" in result.stderr


def test_the_matrix_declines_above_its_limit_with_what_it_would_need(runner, tmp_path, monkeypatch, caplog):
    """--bm25-matrix auto above MATRIX_MAX_PASSAGES: no matrix, and one info line with its postings and memory."""
    from cqtools.retrieval import builtin_parts

    monkeypatch.setattr(builtin_parts, "MATRIX_MAX_PASSAGES", 10)
    out = tmp_path / "idx"
    with caplog.at_level(logging.INFO, logger="cqtools"):
        result = runner.invoke(cli, ["index", "--corpus", write(tmp_path / "c.jsonl", passages(30)), "--out", str(out)])
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "cq_index.json").read_text())
    assert manifest["parts"] == ["bm25"]
    said = [r.getMessage() for r in caplog.records if "no BM25 matrix above" in r.getMessage()]
    assert len(said) == 1 and "postings, 8 bytes each" in said[0] and "--bm25-matrix yes" in said[0]
    from cqtools.retrieval.matrix import postings

    assert f"({postings(str(out / manifest['lucene'])):,} postings" in said[0]


def test_progress_lines_count_passages_with_a_time_left(monkeypatch, caplog):
    """Off a terminal, the corpus pass says passages, rate and (with an estimate) the time left."""
    from cqtools import progress

    monkeypatch.setattr(progress, "LINE_INTERVAL", 0.0)
    with caplog.at_level(logging.INFO, logger="cqtools"):
        assert sum(1 for _ in progress.counted(iter(range(5000)), "index: reading the corpus", total=10_000)) == 5000
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("index: reading the corpus")]
    assert lines and "passages in" in lines[-1] and "/s" in lines[-1] and "left" in lines[-1]


def test_cq_index_gives_lucene_the_buffer_of_its_heap(runner, tmp_path, monkeypatch):
    """--jvm-heap reaches Anserini's -memoryBuffer (an eighth of it), not only the heap option."""
    from cqtools.retrieval import lucene

    seen = {}
    real = lucene.build_lucene

    def spy(*args, **kwargs):
        seen["buffer_mb"] = kwargs.get("buffer_mb")
        return real(*args, **kwargs)

    monkeypatch.setattr(lucene, "build_lucene", spy)
    result = runner.invoke(cli, ["index", "--corpus", write(tmp_path / "c.jsonl", passages(5)), "--out",
                                 str(tmp_path / "idx"), "--jvm-heap", "1g", "-q"])
    assert result.exit_code == 0, result.output
    assert seen == {"buffer_mb": 128}
