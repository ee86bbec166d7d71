"""Every number says which metric made it (issue 46, item 3): each `cq score` summary carries "metric" (name,
version, every option and fixed recipe that moves its numbers, and what the run actually used), two results
files compare by it, and a paired difference of two sides scored by different variants is refused."""
import json

import pytest

from cqtools.cli import cli
from cqtools.errors import InputError
from cqtools.score import ScoreOptions, score_records
from cqtools.score.ci import BootstrapOptions, paired
from cqtools.score.identity import differences

from .test_score_ci import fixture_records, predicted


def summary(runner, args, records):
    result = runner.invoke(cli, ["score", *args], input="".join(json.dumps(r) + "\n" for r in records))
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.mark.parametrize("task, args, expected", [
    ("detect", [], {"threshold": None}),
    ("cbqa", [], {"matcher": "difflib", "unique_answers": "dataset"}),
    ("cbqa", ["--matcher", "lcs"], {"matcher": "lcs"}),
    ("cq", ["--no-bertscore"], {"cq_parser": "askcq", "no_bertscore": True, "bertscore_used": None}),
])
def test_every_summary_names_its_metric_and_variant(runner, task, args, expected):
    out = summary(runner, ["--task", task, *args], predicted(fixture_records()))
    metric = out["metric"]
    assert metric["name"] == f"cq.{task}" and metric["version"] >= 1
    assert expected.items() <= metric["variant"].items(), metric
    if task == "cq":
        assert "13a" in metric["variant"]["bleu"]  # the BLEU tokenizer is named


def test_asqa_names_str_em_rouge_and_the_sentence_splitter(runner):
    records = [{"id": "a1", "question": "Who won?", "long_answer": "Ann won in 2001.",
                "gold": {"long_answers": ["Ann won the race in 2001."], "answers": [["Ann"]], "dqs": []}}]
    variant = summary(runner, ["--task", "asqa", "--str-em", "cq"], records)["metric"]["variant"]
    assert variant["str_em"] == "cq" and variant["reader"] is None and variant["reader_used"] is None
    assert "rougeLsum" in variant["rouge_l"] and "SQuAD" in variant["str_em_rule"]
    assert "unkt" in variant["sentence_splitter"]  # nltk's punkt, or its untrained fallback: said which


def test_two_results_files_compare_by_their_metric_blocks(runner):
    records = predicted(fixture_records())
    a = summary(runner, ["--task", "cbqa"], records)
    b = summary(runner, ["--task", "cbqa", "--matcher", "lcs"], records)
    assert differences(a["metric"], a["metric"]) == []
    assert differences(a["metric"], b["metric"]) == ["matcher: 'difflib' vs 'lcs'"]
    assert differences(a["metric"], None)  # a summary without one is not taken as comparable


def scored(records, **options):
    return score_records(enumerate(records, start=1), ScoreOptions(task="cbqa", keep_questions=True), **options)


def test_paired_refuses_two_sides_scored_by_different_variants():
    records = predicted(fixture_records())
    a, b = scored(records), scored(predicted(fixture_records(), shift=1), matcher="lcs")
    for task in (a, b):
        task.summary()
    with pytest.raises(InputError) as err:
        paired(a, b, BootstrapOptions(n_boot=50), "a.jsonl", "b.jsonl")
    message = str(err.value)
    assert "different metric variants" in message and "matcher: 'difflib' vs 'lcs'" in message
    assert "\n" not in message
    same = scored(predicted(fixture_records(), shift=1))
    same.summary()
    report = paired(a, same, BootstrapOptions(n_boot=50), "a.jsonl", "b.jsonl")
    assert report["metric"]["name"] == "cq.cbqa" and report["n"] > 0


def test_the_grid_of_several_runs_says_which_metric(runner, tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in predicted(fixture_records())))
    result = runner.invoke(cli, ["score", "--task", "cbqa", "--format", "md", "--n-boot", "50", str(path), str(path)])
    assert result.exit_code == 0, result.output
    assert "scored by cq.cbqa version 1" in result.stdout and "metric." not in result.stdout
