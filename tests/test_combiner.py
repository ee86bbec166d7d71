"""`cq train combiner` and `cq detect --method combined`: the signals, the fit, the split, and the
detector on hand-written records whose labels follow the signals (so a broken fit fails)."""
from __future__ import annotations

import json
import os

import numpy as np
import orjson
import pytest

from cqtools.cli import cli
from cqtools.stages.detect import combined as dc
from cqtools.train.combiner import best_threshold

from .conftest import jsonl, parse_jsonl


def passages(titles, scores):
    return [{"id": f"p{i}", "title": t, "text": f"text of {t}", "score": s}
            for i, (t, s) in enumerate(zip(titles, scores))]


def test_base_name_and_title_signals():
    assert dc.base_name("Joker (2019 film)") == dc.base_name("Joker") == "joker"
    record = {"id": "q", "passages": passages(["Joker (2019 film)", "Joker (character)", "Joker", "Batman", "Batman"],
                                              [9, 8, 7, 6, 5])}
    got = dc.title_signals(record, k=5)
    assert got == {"titles": 4 / 5, "namesakes": 3 / 5, "parens": 2 / 5}
    assert dc.score_signals(record, k=5) == [pytest.approx(1 / 9), pytest.approx(7 / 9)]
    assert dc.title_signals({"id": "e", "passages": []}, k=5) == {"titles": 0.0, "namesakes": 0.0, "parens": 0.0}


def test_missing_passages_is_an_input_error():
    from cqtools.errors import InputError

    with pytest.raises(InputError, match="record q1 has no passages"):
        dc.title_signals({"id": "q1", "question": "?"}, k=3)


def test_fit_logistic_orders_by_the_informative_feature():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 2))
    y = x[:, 0] + 0.3 * rng.normal(size=200) > 0
    mean, scale, w, b = dc.fit_logistic(x, y)
    assert w[0] > 1.0 and abs(w[1]) < 0.5
    assert np.array_equal((mean, scale, w, b)[2], dc.fit_logistic(x, y)[2])  # deterministic


def test_best_threshold_maximises_accuracy():
    probs = np.array([0.1, 0.2, 0.35, 0.6, 0.7, 0.9])
    y = np.array([False, False, False, True, True, True])
    cut = best_threshold(probs, y)
    assert 0.35 < cut < 0.6


def test_split_is_by_id_alone():
    ids = [str(i) for i in range(400)]
    held = {i for i in ids if dc.held_out(i, 0.25, seed=3)}
    assert 60 < len(held) < 140
    assert held == {i for i in reversed(ids[:200] + ids[200:]) if dc.held_out(i, 0.25, seed=3)}
    assert held != {i for i in ids if dc.held_out(i, 0.25, seed=4)}


def synthetic(n: int = 120, method: str = "bm25") -> list[dict]:
    """Ambiguous records retrieve namesake pages with flat scores, the others one page with a clear
    winner; one in six of each breaks the pattern, so validation is good but not perfect."""
    out = []
    for i in range(n):
        ambiguous = i % 2 == 0
        looks_ambiguous = ambiguous != (i % 12 in (0, 1))
        if looks_ambiguous:
            titles, scores = ["Joker (film)", "Joker (song)", "Joker", "Joker (novel)", "Clown"], [10, 9.8, 9.5, 9, 8]
        else:
            titles, scores = ["Canberra", "Canberra", "Canberra", "Australia", "Canberra"], [20, 9, 8, 7, 6]
        out.append({"id": f"q{i}", "question": f"question {i}?", "passages": passages(titles, scores),
                    "gold": {"ambiguous": ambiguous}, "meta": {"retrieve": {"method": method}}})
    return out


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    from click.testing import CliRunner

    tmp = tmp_path_factory.mktemp("combiner")
    train = tmp / "train.jsonl"
    train.write_text(jsonl(synthetic()))
    out = str(tmp / "model")
    result = CliRunner().invoke(cli, ["train", "combiner", "--train", str(train), "--out", out, "--features",
                                      "titles,namesakes,parens,scores", "--top-k", "5", "--n-boot", "200", "-q"])
    assert result.exit_code == 0, result.stderr
    return out, orjson.loads(result.stdout)


def test_train_combiner_reports_validation_with_intervals(trained):
    out, summary = trained
    val = summary["validation"]
    assert summary["retrieval"] == "bm25" and 20 < val["records"] < 80
    combined = val["combined"]
    assert combined["auroc"]["value"] > 75 and combined["accuracy"]["value"] > 70
    low, high = combined["auroc"]["ci"]
    assert low <= combined["auroc"]["value"] <= high and high - low > 0
    assert set(val["signals_alone"]) == {"titles", "namesakes", "parens", "score_gap", "score_mean"}
    with open(os.path.join(out, "cq_train.json")) as fh:
        report = json.load(fh)
    assert len(report["validation_ids"]) == val["records"]
    assert all(dc.held_out(i, 0.4, 0) for i in report["validation_ids"])


def test_combined_detector_applies_the_saved_model(runner, trained):
    out, _ = trained
    records = synthetic(12)
    result = runner.invoke(cli, ["detect", "--method", "combined", "--model", out, "-q"], input=jsonl(records))
    assert result.exit_code == 0, result.stderr
    got = parse_jsonl(result.stdout)
    combiner = dc.load(out)
    expected = combiner.probability(dc.feature_matrix(records, combiner.features, combiner.k, None))
    assert [r["ambiguity"]["score"] for r in got] == pytest.approx(list(expected), abs=1e-12)
    assert all(r["ambiguity"]["label"] == (r["ambiguity"]["score"] > combiner.threshold) for r in got)
    assert got[0]["meta"]["detect"]["features"] == ["titles", "namesakes", "parens", "scores"]
    looks = [r["ambiguity"]["score"] for r in got]
    assert looks[2] > looks[3]  # the namesake pattern scores higher than the single-page one


def test_combined_detector_refuses_another_retriever(runner, trained):
    out, _ = trained
    result = runner.invoke(cli, ["detect", "--method", "combined", "--model", out, "-q"],
                           input=jsonl(synthetic(2, method="dense")))
    assert result.exit_code == 1 and "Traceback" not in result.stderr
    assert "record q0" in result.stderr and "--method bm25" in result.stderr


def test_combined_detector_needs_a_combiner_dir(runner, tmp_path):
    result = runner.invoke(cli, ["detect", "--method", "combined", "--model", str(tmp_path), "-q"],
                           input=jsonl(synthetic(1)))
    assert result.exit_code != 0 and "cq train combiner" in result.stderr and "Traceback" not in result.stderr


def test_combiner_with_the_classifier_signal(runner, tmp_path, tiny_classifier):
    train = tmp_path / "train.jsonl"
    train.write_text(jsonl(synthetic(40)))
    out = str(tmp_path / "m")
    result = runner.invoke(cli, ["train", "combiner", "--train", str(train), "--out", out, "--classifier",
                                 tiny_classifier, "--features", "classifier,namesakes", "--n-boot", "50", "-q"])
    assert result.exit_code == 0, result.stderr
    val = orjson.loads(result.stdout)["validation"]
    assert "classifier" in val["signals_alone"] and "combined_minus_classifier_auroc" in val
    detected = runner.invoke(cli, ["detect", "--method", "combined", "--model", out, "-q"],
                             input=jsonl(synthetic(4)))
    assert detected.exit_code == 0, detected.stderr
    assert parse_jsonl(detected.stdout)[0]["meta"]["detect"]["classifier"]["method"] == "classifier"


def test_unknown_feature_is_a_one_line_error(runner, tmp_path):
    train = tmp_path / "t.jsonl"
    train.write_text(jsonl(synthetic(4)))
    result = runner.invoke(cli, ["train", "combiner", "--train", str(train), "--out", str(tmp_path / "m"),
                                 "--features", "titles,vibes"])
    assert result.exit_code != 0 and "unknown vibes" in result.stderr and "Traceback" not in result.stderr


def test_resume_refuses_a_combiner_retrained_in_place(runner, tmp_path):
    """The combiner dir is fingerprinted in the run record like any model: retraining it at the same
    path and resuming would mix two detectors' scores in one file."""
    train = tmp_path / "train.jsonl"
    train.write_text(jsonl(synthetic(40)))
    model, out = str(tmp_path / "m"), str(tmp_path / "out.jsonl")

    def fit(features):
        result = runner.invoke(cli, ["train", "combiner", "--train", str(train), "--out", model, "--features",
                                     features, "--n-boot", "20", "-q", "--overwrite"])
        assert result.exit_code == 0, result.stderr

    fit("titles,namesakes")
    first = runner.invoke(cli, ["detect", "--method", "combined", "--model", model, "--resume", out, "-q"],
                          input=jsonl(synthetic(4)[:2]))
    assert first.exit_code == 0, first.stderr
    fit("parens,scores")
    again = runner.invoke(cli, ["detect", "--method", "combined", "--model", model, "--resume", out, "-q"],
                          input=jsonl(synthetic(4)))
    assert again.exit_code != 0 and "Traceback" not in again.stderr, again.stderr
    assert len(parse_jsonl(open(out).read())) == 2  # nothing appended


def test_retraining_into_a_model_directory_needs_overwrite_and_swaps_only_at_the_end(runner, tmp_path):
    """`cq train` never overwrites a model in place: without --overwrite it refuses; with it, the new
    model is written beside and swapped in when training ends, a failed run keeps the old one, and
    --overwrite never replaces a directory that is not a model."""
    import os

    train = tmp_path / "train.jsonl"
    train.write_text(jsonl(synthetic(40)))
    model = tmp_path / "m"

    def fit(*extra, source=train):
        return runner.invoke(cli, ["train", "combiner", "--train", str(source), "--out", str(model), "--features",
                                   "titles,namesakes", "--n-boot", "20", "-q", *extra])

    first = fit()
    assert first.exit_code == 0, first.stderr
    before = (model / "combiner.json").read_bytes()
    refused = fit()
    assert refused.exit_code != 0 and "pass --overwrite" in refused.stderr and "Traceback" not in refused.stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n")
    failed = fit("--overwrite", source=bad)
    assert failed.exit_code != 0 and (model / "combiner.json").read_bytes() == before  # the old model stays
    again = fit("--overwrite")
    assert again.exit_code == 0, again.stderr
    assert orjson.loads(again.stdout)["out"] == str(model) and ".training-" not in again.stdout
    assert ".training-" not in (model / "cq_train.json").read_text()
    assert sorted(os.listdir(tmp_path)) == ["bad.jsonl", "m", "train.jsonl"]  # no staging or old directory left
    other = tmp_path / "notes"
    other.mkdir()
    (other / "mine.txt").write_text("keep")
    kept = runner.invoke(cli, ["train", "combiner", "--train", str(train), "--out", str(other), "--features",
                               "titles", "--n-boot", "20", "-q", "--overwrite"])
    assert kept.exit_code != 0 and "not a `cq train` model directory" in kept.stderr
    assert (other / "mine.txt").read_text() == "keep"
