"""cq retrieve / cq index on the fixture corpus: BM25, dense, hybrid."""
import json
import os

import pytest

from cqtools.cli import cli
from cqtools.retrieval.hybrid import linear, rrf

from .conftest import FIXTURES, parse_jsonl


def answer_coverage(records, k):
    """Share of gold answer clusters with an alias in the top-k passages (fixture-level check)."""
    found = total = 0
    for record in records:
        text = " ".join(f"{p['title']} {p['text']}".lower() for p in record["passages"][:k])
        for cluster in record["gold"]["answers"]:
            total += 1
            found += any(alias.lower() in text for alias in cluster)
    return found / total


@pytest.fixture(scope="module")
def runs(runner_module, fixture_index, questions_text):
    out = {}
    for method in ("bm25", "dense", "hybrid"):
        result = runner_module.invoke(cli, ["retrieve", "--index", fixture_index, "--method", method,
                                            "--hits", "5"], input=questions_text)
        assert result.exit_code == 0, result.stderr
        out[method] = result.stdout
    return out


@pytest.fixture(scope="module")
def runner_module():
    from click.testing import CliRunner

    return CliRunner()


@pytest.mark.parametrize("method, floor", [("bm25", 0.95), ("dense", 0.95), ("hybrid", 0.95)])
def test_answers_are_in_the_top_five(runs, method, floor):
    # Measured on the fixtures: AC@5 bm25 57/57, dense 56/57, hybrid 57/57.
    assert answer_coverage(parse_jsonl(runs[method]), 5) >= floor


def test_passages_are_ranked_and_complete(runs, questions):
    for method, text in runs.items():
        records = parse_jsonl(text)
        assert len(records) == len(questions)
        for record in records:
            hits = record["passages"]
            assert len(hits) == 5
            assert [h["rank"] for h in hits] == [1, 2, 3, 4, 5]
            assert all(set(h) == {"id", "title", "text", "score", "rank"} for h in hits)
            assert all(a["score"] >= b["score"] for a, b in zip(hits, hits[1:]))
            assert record["meta"]["retrieve"]["method"] == method


def test_title_and_text_come_back_intact(runs):
    corpus = {p["id"]: p for p in map(json.loads, (FIXTURES / "corpus.jsonl").read_text().splitlines())}
    for text in runs.values():
        for record in parse_jsonl(text):
            for hit in record["passages"]:
                assert (hit["title"], hit["text"]) == (corpus[hit["id"]]["title"], corpus[hit["id"]]["text"])


def test_deterministic(runner_module, fixture_index, questions_text, runs):
    for method in ("bm25", "hybrid"):
        again = runner_module.invoke(cli, ["retrieve", "--index", fixture_index, "--method", method, "--hits", "5",
                                           "--batch-size", "4", "--threads", "1"], input=questions_text)
        assert again.stdout == runs[method]


def test_query_field(runner_module, fixture_index):
    line = '{"id": "q", "question": "x", "dq": "Who played the Joker in Joker (2019)?"}\n'
    result = runner_module.invoke(cli, ["retrieve", "--index", fixture_index, "--query-field", "dq", "--hits", "1"],
                                  input=line)
    assert "Joaquin Phoenix" in parse_jsonl(result.stdout)[0]["passages"][0]["text"]


@pytest.mark.heavy(reason="builds a Lucene index (JVM)")
def test_dense_needs_a_dense_index(runner_module, tmp_path):
    out = tmp_path / "bm25only"
    assert runner_module.invoke(cli, ["index", "--corpus", str(FIXTURES / "formats" / "psgs_w100.tsv"),
                                      "--out", str(out)]).exit_code == 0
    result = runner_module.invoke(cli, ["retrieve", "--index", str(out), "--method", "dense"], input='{"question": "q"}\n')
    assert result.exit_code == 1 and "--dense" in result.stderr
    bm25 = runner_module.invoke(cli, ["retrieve", "--index", str(out), "--hits", "2"],
                                input='{"question": "zebra crossing photograph"}\n')
    assert '"zebra crossing"' in parse_jsonl(bm25.stdout)[0]["passages"][0]["text"]


def test_index_refuses_to_overwrite(runner_module, fixture_index):
    result = runner_module.invoke(cli, ["index", "--corpus", str(FIXTURES / "corpus.jsonl"), "--out", fixture_index])
    assert result.exit_code == 1 and "--overwrite" in result.stderr


def hit(i, score, rank):
    return {"id": i, "title": "", "text": "", "score": score, "rank": rank}


def test_rrf_by_hand():
    fused = rrf([[hit("a", 9, 1), hit("b", 5, 2)], [hit("b", 0.9, 1), hit("c", 0.5, 2)]], k=3, rrf_k=60)
    assert [h["id"] for h in fused] == ["b", "a", "c"]
    assert fused[0]["score"] == pytest.approx(1 / 62 + 1 / 61)
    assert fused[1]["score"] == pytest.approx(1 / 61)


def test_linear_fusion_matches_pyserini_formula_and_survives_ties():
    sparse = [hit("a", 10.0, 1), hit("b", 6.0, 2)]
    dense = [hit("b", 0.8, 1), hit("c", 0.4, 2)]
    fused = {h["id"]: h["score"] for h in linear(sparse, dense, k=3, alpha=0.5)}
    # sparse normalised: a 0.5, b -0.5; dense: b 0.5, c -0.5; a lacks dense -> dense min (c) -> -0.5
    assert fused == pytest.approx({"a": 0.5 * 0.5 - 0.5, "b": 0.5 * -0.5 + 0.5, "c": 0.5 * -0.5 - 0.5})
    tied = linear([hit("a", 3.0, 1), hit("b", 3.0, 2)], [hit("a", 0.5, 1)], k=2, alpha=0.1)
    assert [h["id"] for h in tied] == ["a", "b"] and all(h["score"] == h["score"] for h in tied)  # no NaN


def test_linear_fusion_through_the_cli(runner_module, fixture_index, questions):
    """--fusion linear --alpha reaches the searcher: the CLI's passages are the sparse and dense
    lists fused by linear(), and differ from RRF's."""
    from cqtools.retrieval import open_searcher

    text = "".join(json.dumps(q) + "\n" for q in questions[:5])
    args = ["retrieve", "--index", fixture_index, "--method", "hybrid", "--hits", "5"]
    result = runner_module.invoke(cli, args + ["--fusion", "linear", "--alpha", "0.3"], input=text)
    assert result.exit_code == 0, result.stderr
    out = parse_jsonl(result.stdout)
    assert out[0]["meta"]["retrieve"]["fusion"] == "linear" and out[0]["meta"]["retrieve"]["alpha"] == 0.3
    sparse, dense = open_searcher(fixture_index, "bm25"), open_searcher(fixture_index, "dense")
    for q, record in zip(questions, out):
        depth = 100  # HybridSearcher fuses max(2k, 100) candidates from each side
        want = linear(sparse.search(q["question"], depth), dense.search(q["question"], depth), k=5, alpha=0.3)
        assert [p["id"] for p in record["passages"]] == [h["id"] for h in want]
        assert [p["score"] for p in record["passages"]] == pytest.approx([h["score"] for h in want], abs=1e-5)
    rrf_out = parse_jsonl(runner_module.invoke(cli, args, input=text).stdout)
    assert [r["passages"] for r in rrf_out] != [r["passages"] for r in out]


@pytest.mark.slow
def test_pyserini_faiss_searcher_reads_our_dense_index(fixture_index):
    """Our dense index is in Pyserini's layout: its FaissSearcher returns the same top hit."""
    from cqtools.retrieval import jvm

    with jvm.pyserini_imports():
        from pyserini.encode import AutoQueryEncoder
        from pyserini.search.faiss import FaissSearcher
    assert "OPENAI_API_KEY" not in os.environ or os.environ["OPENAI_API_KEY"] != "unused-placeholder"

    from cqtools.models import resolve
    from cqtools.retrieval.base import DENSE_DIR
    from cqtools.retrieval.dense import DenseSearcher
    from cqtools.retrieval.lucene import LuceneBM25

    path = resolve("sentence-transformers/all-MiniLM-L6-v2").path
    theirs = FaissSearcher(os.path.join(fixture_index, DENSE_DIR), AutoQueryEncoder(path, pooling="mean", l2_norm=True))
    ours = DenseSearcher(os.path.join(fixture_index, DENSE_DIR), path, LuceneBM25(os.path.join(fixture_index, "lucene")))
    query = "Who played the Joker in Suicide Squad?"
    their_hits = theirs.search(query, k=3)
    our_hits = ours.search(query, 3)
    assert [h.docid for h in their_hits] == [h["id"] for h in our_hits]
    assert their_hits[0].score == pytest.approx(our_hits[0]["score"], abs=1e-3)


def test_fast_bm25_equals_anserini_searcher(fixture_index, questions):
    """Our Lucene path (docstore, direct IndexSearcher) returns exactly Anserini's ids, scores and order
    (the BM25 matrix's path: tests/test_bm25_matrix.py)."""
    from cqtools.retrieval import open_searcher
    from cqtools.retrieval.lucene import LuceneBM25

    ours = open_searcher(fixture_index, "bm25", bm25_scorer="lucene")
    assert ours.docstore is not None
    anserini = LuceneBM25(os.path.join(fixture_index, "lucene"))  # no docstore: SimpleSearcher
    queries = [q["question"] for q in questions] + [d["question"] for q in questions for d in q["gold"]["dqs"]]
    ids = [str(n) for n in range(len(queries))]
    a = ours.batch_search(queries, ids, 30, 2)
    b = anserini.batch_search(queries, ids, 30, 1)
    for i in ids:
        assert [(h["id"], h["score"], h["rank"]) for h in a[i]] == [(h["id"], h["score"], h["rank"]) for h in b[i]]
    one_thread = ours.batch_search([" "] + queries, ["blank"] + ids, 30, 1)  # a pool of one, and a blank query
    assert one_thread.pop("blank") == [] and one_thread == a


@pytest.mark.parametrize("scorer", ["lucene", "matrix"])
def test_prefetched_batches_equal_fresh_searches(fixture_index, questions, scorer):
    """cq retrieve hands the searcher each next batch early (LuceneBM25.prefetch): a batch searched ahead (by
    Lucene's Java pool, or scored from the BM25 matrix by a Python worker), or a prefetch that no later call
    asks for, changes no id, score or rank."""
    from cqtools.retrieval import open_searcher

    searcher = open_searcher(fixture_index, "bm25", bm25_scorer=scorer)
    if searcher._matrix is not None:  # noqa: SLF001 (threads only from 50k passages: the fixtures' are few)
        searcher._matrix.threaded = True  # noqa: SLF001
    queries = [q["question"] for q in questions] + [d["question"] for q in questions for d in q["gold"]["dqs"]]
    first, second = queries[: len(queries) // 2], queries[len(queries) // 2:]
    fresh = [searcher.batch_search(part, [str(n) for n in range(len(part))], 30, 2) for part in (first, second)]
    searcher.prefetch(["an unused batch"], 30, 2)
    searcher.prefetch(first + [" "], 30, 2)
    searcher.prefetch(second, 30, 2)
    assert len(searcher._ahead) == 2  # noqa: SLF001 (the oldest was dropped)
    ahead = searcher.batch_search(first + [" "], [str(n) for n in range(len(first) + 1)], 30, 2)
    assert ahead.pop(str(len(first))) == [] and ahead == fresh[0]
    assert searcher.batch_search(second, [str(n) for n in range(len(second))], 30, 2) == fresh[1]
    assert searcher._ahead == []  # noqa: SLF001 (both taken)
    assert searcher.batch_search(second, [str(n) for n in range(len(second))], 10, 1) == \
        {i: hits[:10] for i, hits in fresh[1].items()}


def test_anserini_tie_adjustment_by_hand():
    from cqtools.retrieval.lucene import anserini_ties

    hits = [{"id": i, "score": s} for i, s in [("a", 3.00004), ("b", 3.0), ("c", 2.99995), ("d", 2.5)]]
    scores = [round(h["score"], 6) for h in anserini_ties(hits)]
    # 3.00004 -> 3.0; 3.0 ties with it (-1e-6); 2.99995 is 2.9999499 in float32 -> 2.9999, still
    # within 1e-4 of 2.999999, so the run goes on (-2e-6); 2.5 starts afresh.
    assert scores == [3.0, 2.999999, 2.999898, 2.5]


def _ties_by_the_rule(scores):
    """Anserini's ScoreTiesAdjusterReranker step by step, every score through the loop (no shortcut)."""
    import numpy as np

    f32, out, previous, dup = np.float32, [], None, 0
    for raw in scores:
        score = float(f32(np.floor(float(f32(raw)) * 10000.0 + 0.5) / 10000.0))
        if previous is not None and float(f32(previous - score)) <= float(f32(1e-4)):
            dup += 1
            score = float(f32(score) - f32(1e-6) * f32(dup))
        else:
            dup = 0
        out.append(score)
        previous = score
    return out


def test_tie_shortcuts_agree_with_the_full_rule():
    """cq's ranking skips the tie loop before the first near-tie and sorts only runs of equal scores:
    on random hit lists with many ties both equal the full rule and the full (-score, id) sort."""
    import random

    import numpy as np

    from cqtools.retrieval.lucene import anserini_order, tie_scores, tie_scores_rows

    rng = random.Random(7)
    batch = []
    for case in range(600):
        n = rng.randint(1, 40) if case < 300 else rng.randint(60, 130)  # then long runs of near-ties
        grid = rng.choice([0.5, 1e-4, 3e-5, 1e-2])
        scores = sorted((float(np.float32(10 - rng.randint(0, 30) * grid)) for _ in range(n)), reverse=True)
        nums = rng.sample(range(1000), n)  # Lucene's order: score desc, document number asc
        order_lucene = sorted(range(n), key=lambda j: (-scores[j], nums[j]))
        scores, nums = [scores[j] for j in order_lucene], [nums[j] for j in order_lucene]
        docs = {num: {"id": f"p{rng.randint(0, 99):02d}-{num}"} for num in nums}
        k = rng.randint(1, n)
        want = sorted(range(n), key=lambda j: (-scores[j], docs[nums[j]]["id"]))[:k]
        assert anserini_order(nums, scores, docs, k) == want
        assert tie_scores(scores) == _ties_by_the_rule(scores)
        batch.append(scores)
    assert tie_scores_rows(batch + [[]]) == [_ties_by_the_rule(s) for s in batch] + [[]]  # one pass, rows padded


def test_jvm_heap_option(monkeypatch):
    from cqtools.errors import ResourceError
    from cqtools.retrieval import jvm

    monkeypatch.delenv("CQ_JVM_XMX", raising=False)
    assert jvm.heap_option() == "-Xmx2g"
    assert jvm.heap_option(jvm.SEARCH_XMX) == "-Xmx256m"
    monkeypatch.setenv("CQ_JVM_XMX", "512M")
    assert jvm.heap_option() == "-Xmx512m"
    monkeypatch.setenv("CQ_JVM_XMX", "default")
    assert jvm.heap_option() is None
    monkeypatch.setenv("CQ_JVM_XMX", "lots")
    with pytest.raises(ResourceError, match="CQ_JVM_XMX"):
        jvm.heap_option()


def test_hits_text_parses_to_exact_float32():
    import numpy as np

    from cqtools.retrieval.lucene import parse_hits

    assert parse_hits("") == ([], [])
    assert parse_hits("12 7.4542847 3 1.0E-4 ") == ([12, 3], [float(np.float32(7.4542847)), float(np.float32(1e-4))])
    with pytest.raises(RuntimeError, match="unexpected hits text"):
        parse_hits("12 7.45 3")
    rng = np.random.default_rng(0)  # float32 scores as Java prints them (shortest decimal) come back bit for bit
    scores = np.concatenate([rng.uniform(0, 40, 5000), rng.uniform(0, 1e-3, 500)]).astype(np.float32)
    text = " ".join(f"{n} {np.format_float_scientific(s, unique=True) if n % 2 else repr(float(s))}"
                    for n, s in enumerate(scores))
    nums, parsed = parse_hits(text)
    assert nums == list(range(len(scores)))
    assert np.array(parsed, dtype=np.float32).tobytes() == scores.tobytes()

def test_the_toc_preset_pools_bm25_and_dense_before_its_rerank(fixture_index, runner):
    """Tree of Clarifications pools two retrievers' passages (over 200 per question) before reranking them per node;
    `cq retrieve --preset toc` keeps the union of BM25's and the dense encoder's top --hits (it kept BM25's 100)."""
    import orjson

    from cqtools.cli import cli

    question = {"id": "q", "question": "Who played the Joker?"}
    out = runner.invoke(cli, ["retrieve", "--preset", "toc", "--index", fixture_index, "--hits", "20", "-q"],
                        input=orjson.dumps(question).decode() + "\n")
    assert out.exit_code == 0, out.output
    pooled = orjson.loads(out.stdout)["passages"]
    sides = []
    for method in ("bm25", "dense"):
        side = runner.invoke(cli, ["retrieve", "--method", method, "--index", fixture_index, "--hits", "20", "-q"],
                             input=orjson.dumps(question).decode() + "\n")
        sides.append({p["id"] for p in orjson.loads(side.stdout)["passages"]})
    assert {p["id"] for p in pooled} == sides[0] | sides[1]
    assert 20 < len(pooled) <= 40


JVM_ARGS = ("from cqtools.retrieval import open_searcher, jvm; open_searcher({index!r}, 'bm25'); "
            "print(' '.join(jvm.autoclass('java.lang.management.ManagementFactory').getRuntimeMXBean()"
            ".getInputArguments().toArray()))")


def test_a_search_jvm_compiles_with_c1_only(fixture_index):
    """The JVM a BM25 search starts: C1 only and the serial collector (jvm.SEARCH_OPTS), the small heap."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", JVM_ARGS.format(index=fixture_index)], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    args = proc.stdout.split()
    assert "-XX:TieredStopAtLevel=1" in args and "-XX:+UseSerialGC" in args and "-Xmx256m" in args, args


def test_cq_jvm_opts_replaces_the_search_jvms_options(fixture_index):
    """CQ_JVM_OPTS (read through cqtools/config.py, listed in docs/config.md) replaces cq's C1/serial options."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "CQ_JVM_OPTS": "-XX:+UseParallelGC"}
    proc = subprocess.run([sys.executable, "-c", JVM_ARGS.format(index=fixture_index)], capture_output=True,
                          text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    args = proc.stdout.split()
    assert "-XX:+UseParallelGC" in args and "-XX:+UseSerialGC" not in args and "-XX:TieredStopAtLevel=1" not in args
