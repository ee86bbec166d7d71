"""An index is a manifest of registered parts (cqtools/retrieval/parts.py): a plugin adds a part in two files
(tests/plugins/cq_impact_plugin) that `cq index` builds, `cq retrieve` searches alone and hybrid fuses with any
other part; an index whose manifest names a part no plugin registers is a one-line error; a manifest from
before part lists opens as its parts."""
import json
import os
import shutil
import subprocess
import sys

import orjson
import pytest

from cqtools.cli import cli

from .conftest import FIXTURES, ROOT, install_plugin, jsonl

QUESTIONS = [{"id": "a", "question": "Who played the Joker in 2019?"},
             {"id": "b", "question": "Which city hosted the 2008 Summer Olympics?"}]


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory):
    return install_plugin("cq_impact_plugin", tmp_path_factory.mktemp("site"))


def cq(args, plugin_path=None, input_text=""):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(([plugin_path] if plugin_path else []) + [str(ROOT)]))
    return subprocess.run([sys.executable, "-m", "cqtools", *args], input=input_text, capture_output=True,
                          text=True, cwd=ROOT, env=env)


@pytest.fixture(scope="module")
def impact_index(plugin_path, tmp_path_factory):
    out = tmp_path_factory.mktemp("impact") / "idx"
    built = cq(["index", "--corpus", str(FIXTURES / "corpus.jsonl"), "--out", str(out), "--impact", "--dense",
                "--threads", "2", "-q"], plugin_path)
    assert built.returncode == 0, built.stderr
    return out


def _passages(result):
    assert result.returncode == 0, result.stderr
    return [orjson.loads(line)["passages"] for line in result.stdout.splitlines()]


def test_the_plugin_part_is_built_listed_and_searched_alone(plugin_path, impact_index):
    manifest = json.loads((impact_index / "cq_index.json").read_text())
    assert manifest["parts"] == ["bm25", "bm25_matrix", "dense", "impact"] and manifest["impact"]["terms"] > 100
    listed = {(r["registry"], r["method"], r["plugin"]) for r in map(orjson.loads, cq(["plugins"], plugin_path)
                                                                      .stdout.splitlines())}
    assert listed == {("index part", "impact", "cq-impact-plugin 0.1"), ("searcher", "impact", "cq-impact-plugin 0.1")}
    hits = _passages(cq(["retrieve", "--index", str(impact_index), "--method", "impact", "--hits", "5"], plugin_path,
                        jsonl(QUESTIONS)))
    assert "Joker" in hits[0][0]["text"] and "2008 Summer Olympics" in [h["title"] for h in hits[1]]
    assert [h["rank"] for h in hits[0]] == [1, 2, 3, 4, 5]
    assert [h["score"] for h in hits[0]] == sorted((h["score"] for h in hits[0]), reverse=True)


@pytest.mark.parametrize("parts", ["impact,dense", "bm25,impact"])
def test_hybrid_fuses_the_plugin_part_with_any_other(plugin_path, impact_index, parts):
    from cqtools.retrieval.hybrid import rrf

    first, second = parts.split(",")
    args = ["retrieve", "--index", str(impact_index)]
    runs = [_passages(cq(args + ["--method", name, "--hits", "100"], plugin_path, jsonl(QUESTIONS)))  # rrf's depth
            for name in (first, second)]
    fused = cq(args + ["--method", "hybrid", "--parts", parts, "--hits", "10"], plugin_path, jsonl(QUESTIONS))
    for n, hits in enumerate(_passages(fused)):
        assert hits == rrf([runs[0][n], runs[1][n]], 10)
    meta = orjson.loads(fused.stdout.splitlines()[0])["meta"]["retrieve"]
    assert meta["parts"] == [first, second] and meta["fusion"] == "rrf"


REPEATED = [{"id": "r", "question": "Joker Joker Joker Joker film"}]


def test_the_plugin_parts_query_encoder_is_its_own_flag(plugin_path, impact_index):
    """--impact-encoder (the toy part's search option) reaches the impact part alone and, in a fusion, the impact
    side only; given to a fusion without that part, it is refused."""
    from cqtools.retrieval.hybrid import rrf

    args = ["retrieve", "--index", str(impact_index), "--hits", "100"]
    words, unique = (_passages(cq(args + ["--method", "impact"] + extra, plugin_path, jsonl(REPEATED)))[0]
                     for extra in ([], ["--impact-encoder", "unique"]))
    assert [h["id"] for h in words] != [h["id"] for h in unique]  # "joker" counts four times, or once
    dense = _passages(cq(args + ["--method", "dense"], plugin_path, jsonl(REPEATED)))[0]
    fused = cq(args[:-1] + ["10", "--method", "hybrid", "--parts", "impact,dense", "--impact-encoder", "unique"],
               plugin_path, jsonl(REPEATED))
    assert _passages(fused)[0] == rrf([unique, dense], 10)
    assert orjson.loads(fused.stdout)["meta"]["retrieve"]["parts"] == ["impact", "dense"]
    refused = cq(args + ["--method", "hybrid", "--impact-encoder", "unique"], plugin_path, jsonl(REPEATED))
    assert refused.returncode != 0 and "Traceback" not in refused.stderr
    assert "--impact-encoder is an option of index part impact, which --method hybrid --parts bm25,dense does not " \
        "search" in refused.stderr


def test_a_part_no_plugin_registers_is_a_one_line_error(impact_index, plugin_path):
    """Without the plugin, the index's manifest names a part cq does not know: one line naming it and the fix."""
    result = cq(["retrieve", "--index", str(impact_index), "--hits", "3"], None, jsonl(QUESTIONS))
    assert result.returncode != 0 and result.stdout == "" and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "part 'impact' that no installed plugin registers" in result.stderr and "cq plugins" in result.stderr
    unknown = cq(["retrieve", "--index", str(impact_index), "--method", "hybrid", "--parts", "bm25,impact"], None,
                 jsonl(QUESTIONS))
    assert unknown.returncode != 0 and "'impact' is no registered index part" in unknown.stderr


def test_a_manifest_from_before_part_lists_opens_as_its_parts(runner, tmp_path, fixture_index, questions_text):
    old = tmp_path / "old"
    shutil.copytree(fixture_index, old)
    manifest = json.loads((old / "cq_index.json").read_text())
    assert manifest.pop("parts") == ["bm25", "bm25_matrix", "dense"]
    (old / "cq_index.json").write_text(json.dumps(manifest))
    for method in ("bm25", "dense", "hybrid"):
        outputs = [runner.invoke(cli, ["retrieve", "--index", str(index), "--method", method, "--hits", "5"],
                                 input=questions_text) for index in (fixture_index, old)]
        assert outputs[0].exit_code == 0, outputs[0].stderr
        assert outputs[1].stdout.replace(str(old), str(fixture_index)) == outputs[0].stdout


@pytest.mark.parametrize("parts,says", [("bm25_matrix,dense", "'bm25_matrix' is not searched alone"),
                                        ("bm25,bm26", "'bm26' is no registered index part"),
                                        ("bm25", "two different index parts"), ("dense,dense", "two different")])
def test_parts_that_cannot_be_fused_are_one_line_errors(runner, fixture_index, parts, says):
    result = runner.invoke(cli, ["retrieve", "--index", fixture_index, "--method", "hybrid", "--parts", parts],
                           input='{"question": "Joker"}\n')
    assert result.exit_code != 0 and says in result.stderr and "Traceback" not in result.stderr


@pytest.mark.heavy(reason="cq index builds a Lucene index (JVM)")
def test_an_index_without_the_part_names_the_flag_that_builds_it(runner, tmp_path):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join((FIXTURES / "corpus.jsonl").read_text().splitlines(keepends=True)[:6]))
    assert runner.invoke(cli, ["index", "--corpus", str(corpus), "--out", str(tmp_path / "i"), "-q"]).exit_code == 0
    result = runner.invoke(cli, ["retrieve", "--index", str(tmp_path / "i"), "--method", "dense"],
                           input='{"question": "q"}\n')
    assert result.exit_code != 0 and f"has no dense part; rebuild it with `cq index --corpus FILE --out " \
        f"{tmp_path / 'i'} --dense`" in result.stderr


def test_a_manifest_naming_an_unregistered_part_is_refused_before_anything_opens(runner, tmp_path):
    (tmp_path / "idx").mkdir()
    (tmp_path / "idx" / "cq_index.json").write_text(json.dumps({"parts": ["bm25", "splade"], "lucene": "lucene"}))
    result = runner.invoke(cli, ["retrieve", "--index", str(tmp_path / "idx")], input='{"question": "q"}\n')
    assert result.exit_code != 0 and "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert f"index {tmp_path / 'idx'} has a part 'splade' that no installed plugin registers" in result.stderr


@pytest.mark.parametrize("manifest,parts", [
    ({"lucene": "lucene", "docstore": "docstore.sqlite", "bm25_matrix": "bm25_matrix.npz", "dense": {"dir": "dense"}},
     ["bm25", "bm25_matrix", "dense"]),
    ({"lucene": "lucene", "docstore": "docstore.sqlite", "bm25_matrix": None, "dense": None}, ["bm25"]),
    ({"lucene": ".", "dense": None}, ["bm25"]),  # what read_manifest makes of a plain Pyserini index
    ({"lucene": "lucene", "parts": ["bm25", "dense"]}, ["bm25", "dense"])])
def test_a_manifest_is_read_as_its_parts(manifest, parts):
    from cqtools.retrieval.parts import part_names

    assert part_names(manifest, "idx") == parts
