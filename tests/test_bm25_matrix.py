"""The BM25 matrix (cqtools/retrieval/matrix.py): Lucene's exact hits computed in numpy, written by
`cq index` only when its analysis reproduces the Lucene index, never mixed with another build."""
import json
import os
import shutil

import numpy as np
import pytest

from cqtools.cli import cli

from .conftest import FIXTURES

HAND_MADE = ["film film film Joker actor", "Joker Joker", "joker joker joker joker joker", "the of and a",
             "zzqx unknownword", "Who, played... the JOKER?!", "Batman Batman Batman Batman Batman Batman Batman",
             "joker film " + " ".join(f"w{i}x" for i in range(1100))]  # over Lucene's default 1,024 clauses


def _queries(questions) -> list[str]:
    """Questions, disambiguated questions, passages' texts (long queries: many scores summed per
    document, where a sum in float32 instead of Lucene's double differs on almost every query), HAND_MADE."""
    passages = [json.loads(line)["text"] for line in (FIXTURES / "corpus.jsonl").read_text().splitlines()[:40]]
    return [q["question"] for q in questions] + [d["question"] for q in questions for d in q["gold"]["dqs"]] + \
        passages + HAND_MADE


def _same_hits(ours, theirs):
    assert len(ours) == len(theirs)
    for (nums, scores), (their_nums, their_scores) in zip(ours, theirs):
        assert nums == their_nums
        assert np.array_equal(np.asarray(scores, dtype=np.float32), np.asarray(their_scores, dtype=np.float32))


@pytest.mark.parametrize("k1,b", [(0.9, 0.4), (1.2, 0.75)])
def test_matrix_hits_equal_lucenes_and_anserinis(fixture_index, questions, k1, b):
    """Doc numbers, float32 scores and order equal Lucene's IndexSearcher at every depth (a cut inside a
    tie, past the corpus' size), and the passages equal Anserini's SimpleSearcher, for questions,
    disambiguated questions, passages' texts and queries with repeated words (boosts 2, 3, 5, 7),
    stopwords only, unknown words and punctuation."""
    from cqtools.retrieval import open_searcher
    from cqtools.retrieval.lucene import LuceneBM25

    matrix = open_searcher(fixture_index, "bm25", k1=k1, b=b, bm25_scorer="matrix")
    lucene = open_searcher(fixture_index, "bm25", k1=k1, b=b, bm25_scorer="lucene")
    assert matrix._matrix is not None and lucene._matrix is None  # noqa: SLF001
    queries = _queries(questions)
    for fetch in (1, 5, 30, 116, 5000):
        _same_hits(matrix._hits(queries, fetch, 2), lucene._hits(queries, fetch, 2))  # noqa: SLF001
    matrix._matrix.threaded = True  # noqa: SLF001 (as from 50k passages: batches in parts, on threads)
    for threads in (1, 3):  # the batch scored whole, or in three uneven parts at once
        _same_hits(matrix._hits(queries, 116, threads), lucene._hits(queries, 116, 2))  # noqa: SLF001
    anserini = LuceneBM25(os.path.join(fixture_index, "lucene"), k1=k1, b=b)  # no docstore: SimpleSearcher
    ids = [str(n) for n in range(len(queries))]
    ours, theirs = matrix.batch_search(queries, ids, 30), anserini.batch_search(queries, ids, 30, 1)
    assert {i: [(h["id"], h["score"], h["rank"]) for h in hits] for i, hits in ours.items()} == \
        {i: [(h["id"], h["score"], h["rank"]) for h in hits] for i, hits in theirs.items()}
    assert ours[str(len(queries) - 5)] == [] and ours[str(len(queries) - 4)] == []  # stopwords only; unknown words
    assert ours[str(len(queries) - 1)]  # the 1,102-term question is scored on both paths


def test_retrieve_writes_the_same_bytes_with_either_scorer(runner, fixture_index, questions_text):
    outputs = {}
    for scorer in ("auto", "lucene", "matrix"):
        result = runner.invoke(cli, ["retrieve", "--index", fixture_index, "--hits", "20", "-q",
                                     "--bm25-scorer", scorer], input=questions_text)
        assert result.exit_code == 0, result.output
        outputs[scorer] = result.stdout
    assert outputs["auto"] == outputs["lucene"] == outputs["matrix"]
    assert "bm25_scorer" not in outputs["auto"]  # how it was computed is not part of the record


def test_a_run_resumed_with_the_other_scorer_continues(runner, tmp_path, fixture_index, questions_text):
    """--bm25-scorer changes how, not what: a --resume under the other scorer is not refused, and the
    resumed output equals one uninterrupted run."""
    lines = questions_text.splitlines(keepends=True)
    out = tmp_path / "out.jsonl"
    base = ["retrieve", "--index", fixture_index, "--hits", "10", "-q", "--resume", str(out)]
    assert runner.invoke(cli, base + ["--bm25-scorer", "lucene"], input="".join(lines[:3])).exit_code == 0
    result = runner.invoke(cli, base + ["--bm25-scorer", "matrix"], input=questions_text)
    assert result.exit_code == 0, result.output
    whole = runner.invoke(cli, ["retrieve", "--index", fixture_index, "--hits", "10", "-q"], input=questions_text)
    assert out.read_text() == whole.stdout and len(lines) > 3


@pytest.mark.heavy(reason="builds a BM25 index (JVM)")
def test_an_index_without_a_matrix_is_searched_by_lucene_and_matrix_is_refused(runner, tmp_path, questions_text):
    out = tmp_path / "idx"
    result = runner.invoke(cli, ["index", "--corpus", str(FIXTURES / "corpus.jsonl"), "--out", str(out), "-q",
                                 "--bm25-matrix", "no"])
    assert result.exit_code == 0, result.output
    assert not (out / "bm25_matrix.npz").exists() and "bm25_matrix" not in json.loads((out / "cq_index.json").read_text())
    result = runner.invoke(cli, ["retrieve", "--index", str(out), "-q"], input=questions_text)
    assert result.exit_code == 0 and result.stdout.count("\n") == questions_text.count("\n")
    result = runner.invoke(cli, ["retrieve", "--index", str(out), "-q", "--bm25-scorer", "matrix"], input=questions_text)
    assert result.exit_code != 0 and "has no BM25 matrix" in result.stderr and "--bm25-matrix yes" in result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""


def test_a_matrix_from_another_build_is_never_used(runner, tmp_path, fixture_index):
    """The matrix records the Lucene commit it was counted from: another build's matrix in the
    directory (a swap half done) makes the searcher refuse, as for the other parts."""
    from cqtools.errors import ResourceError
    from cqtools.retrieval import open_searcher

    other = tmp_path / "other"
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join((FIXTURES / "corpus.jsonl").read_text().splitlines(keepends=True)[:6]))
    assert runner.invoke(cli, ["index", "--corpus", str(corpus), "--out", str(other), "-q"]).exit_code == 0
    mixed = tmp_path / "mixed"
    shutil.copytree(fixture_index, mixed)
    shutil.copy(other / "bm25_matrix.npz", mixed / "bm25_matrix.npz")
    with pytest.raises(ResourceError, match="BM25 matrix is of Lucene commit"):
        open_searcher(str(mixed), "bm25")
    assert open_searcher(str(mixed), "bm25", bm25_scorer="lucene").search("Joker", 3)  # Lucene alone: fine


class _Changed:
    """matrix.Analysis, with the documents' tokens changed by ``change`` (a list of token lists, in place)."""

    def __init__(self, real, change):
        self.real, self.change = real, change

    def __call__(self, analyzer):
        real, change = self.real(analyzer), self.change

        def analyse(texts):
            tokens = real(texts)
            change(tokens)
            return tokens
        return analyse


def _drop_one(tokens):
    tokens[3].pop()


def _swap_word(tokens):
    """One token becomes another word: the same token and posting counts, one term's frequencies differ."""
    doc = next(t for t in tokens if t.count("joker") == 1 and "film" not in t)
    doc[doc.index("joker")] = "film"


def _swap_documents(tokens):
    """The shortest and the longest document trade tokens: every term's counts stay, their norms do not."""
    short = min(range(len(tokens)), key=lambda i: len(tokens[i]))
    long = max(range(len(tokens)), key=lambda i: len(tokens[i]))
    tokens[short], tokens[long] = tokens[long], tokens[short]


@pytest.mark.parametrize("change,reason", [(_drop_one, "(documents, tokens, postings)"), (_swap_word, "term "),
                                           (_swap_documents, "norm")])
def test_no_matrix_is_written_when_the_analysis_differs_from_the_index(tmp_path, fixture_index, monkeypatch, change,
                                                                       reason):
    """Each check at build time can fail: totals, one term's frequencies, one document's norm."""
    from cqtools.retrieval import matrix
    from cqtools.retrieval.docstore import DocStore

    store = DocStore(os.path.join(fixture_index, "docstore.sqlite"))
    path = str(tmp_path / "m.npz")
    assert matrix.build(os.path.join(fixture_index, "lucene"), store, path) is None and os.path.exists(path)
    os.remove(path)
    monkeypatch.setattr(matrix, "Analysis", _Changed(matrix.Analysis, change))
    why = matrix.build(os.path.join(fixture_index, "lucene"), store, path)
    assert why and reason in why and not os.path.exists(path)


def _hand_made_matrix(path) -> None:
    """Two terms over four documents, every document of length 1 (norm byte 1), as `build` writes them."""
    np.savez(path, words=np.frombuffer(b"a\nb", dtype=np.uint8), indptr=np.array([0, 3, 5]),
             docs=np.array([0, 1, 3, 2, 3], dtype=np.int32), freqs=np.array([1, 1, 2, 1, 1], dtype=np.float32),
             norms=np.ones(4, dtype=np.uint8), idf=np.array([0.5, 1.25], dtype=np.float32),
             length_table=np.arange(256, dtype=np.float32), stats=np.array([4, 5]), commit=np.array("c"))


def test_matrix_scores_follow_lucenes_formula_and_order(tmp_path):
    """Without the JVM: term scores by BM25Similarity's float32 formula, a boost of 3 scored apart and equal
    to the formula, sums per document, ties in document order, the fetch cut."""
    from cqtools.retrieval.matrix import Bm25Matrix

    path = tmp_path / "m.npz"
    _hand_made_matrix(path)
    m = Bm25Matrix(str(path), 0.9, 0.4)
    f32 = np.float32
    avgdl = f32(5 / 4)
    inv = f32(1) / (f32(0.9) * ((f32(1) - f32(0.4)) + f32(0.4) * f32(1) / avgdl))

    def score(weight, freq):
        weight = f32(weight)
        return weight - weight / (f32(1) + f32(freq) * inv)

    (nums, scores), = m.search([["a"]], 10)
    assert nums == [3, 0, 1] and scores.tolist() == [score(0.5, 2), score(0.5, 1), score(0.5, 1)]  # ties: doc order
    (nums, scores), = m.search([["a", "b", "b", "b"]], 2)
    both = f32(np.float64(score(0.5, 2)) + np.float64(score(f32(3) * f32(1.25), 1)))
    assert nums == [3, 2] and scores.tolist() == [both, score(f32(3) * f32(1.25), 1)]
    assert m.search([["b", "b"], [], ["nothing"]], 5)[0][1].tolist() == [2 * score(1.25, 1)] * 2
    assert [hits[0] for hits in m.search([["b", "b"], [], ["nothing"]], 5)] == [[2, 3], [], []]


def _corpus(tmp_path, passages) -> str:
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps({"id": i, "title": "", "text": t}) + "\n" for i, t in passages))
    return str(path)


@pytest.mark.heavy(reason="builds BM25 indexes (JVM)")
def test_a_corpus_without_terms_is_indexed_without_a_matrix_unless_one_is_required(runner, tmp_path):
    corpus = _corpus(tmp_path, [("a", "the of and"), ("b", "?!")])
    result = runner.invoke(cli, ["index", "--corpus", corpus, "--out", str(tmp_path / "auto")])
    assert result.exit_code == 0, result.output
    assert "no passage has a term" in result.stderr and not (tmp_path / "auto" / "bm25_matrix.npz").exists()
    result = runner.invoke(cli, ["index", "--corpus", corpus, "--out", str(tmp_path / "yes"), "--bm25-matrix", "yes"])
    assert result.exit_code == 1 and "--bm25-matrix yes" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "yes").exists()


@pytest.mark.parametrize("damage", ["truncated", "shapes", "pickled"])
def test_a_damaged_matrix_is_a_one_line_error(runner, tmp_path, damage):
    """Without the JVM's index: the file alone is read and refused before anything is searched."""
    from cqtools.errors import ResourceError
    from cqtools.retrieval.matrix import Bm25Matrix

    path = tmp_path / "m.npz"
    _hand_made_matrix(path)
    if damage == "truncated":
        path.write_bytes(path.read_bytes()[:-30])
    elif damage == "shapes":
        with np.load(path) as z:
            arrays = {k: z[k] for k in z.files}
        np.savez(path, **(arrays | {"docs": arrays["docs"][:-1]}))
    else:
        np.save(tmp_path / "x.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
        os.replace(tmp_path / "x.npy", path)
    with pytest.raises(ResourceError, match="rebuild the index") as err:
        Bm25Matrix(str(path), 0.9, 0.4)
    assert "\n" not in str(err.value)


def test_a_matrix_whose_scores_round_to_zero_is_not_exact(tmp_path):
    """k1 in the tens of millions: term scores of 0.0, matches Lucene keeps and a sparse product drops."""
    from cqtools.retrieval.matrix import Bm25Matrix

    _hand_made_matrix(tmp_path / "m.npz")
    assert Bm25Matrix(str(tmp_path / "m.npz"), 0.9, 0.4).exact
    assert not Bm25Matrix(str(tmp_path / "m.npz"), 1e9, 0.4).exact


def test_huge_k1_falls_back_to_lucene_and_invalid_k1_b_are_one_line_errors(runner, fixture_index):
    args = ["retrieve", "--index", fixture_index, "--hits", "3", "-q"]
    question = '{"id": "q", "question": "joker"}\n'
    lucene = runner.invoke(cli, args + ["--k1", "1e9", "--bm25-scorer", "lucene"], input=question)
    auto = runner.invoke(cli, args + ["--k1", "1e9"], input=question)
    assert lucene.exit_code == auto.exit_code == 0 and auto.stdout == lucene.stdout
    assert '"score":0.0' in auto.stdout and "scoring with Lucene" in auto.stderr
    for flag, value in (("--k1", "-1"), ("--k1", "inf"), ("--k1", "nan"), ("--b", "1.5")):
        result = runner.invoke(cli, args + [flag, value], input=question)
        assert result.exit_code != 0 and "Traceback" not in result.stderr and "Exception" not in result.stderr
        last = result.stderr.strip().splitlines()[-1]  # click's usage error, or cq's one line
        assert flag.lstrip("-") in last and value in last, result.stderr


def test_a_matrix_file_gone_while_opening_reads_as_a_swap(tmp_path, fixture_index):
    """The file missing is what a `cq index --overwrite` swap looks like mid-open: retried, then the swap's
    message (not "rebuild")."""
    from cqtools.errors import ResourceError
    from cqtools.retrieval import open_searcher

    index = tmp_path / "idx"
    shutil.copytree(fixture_index, index)
    os.remove(index / "bm25_matrix.npz")
    with pytest.raises(ResourceError, match="changed while cq was opening it"):
        open_searcher(str(index), "bm25")
