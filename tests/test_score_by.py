"""`cq score --by FIELD` and the rows-first protocol (issue 43, item 5): a task turns each record into a row
of numbers and declares its metrics over rows; the summary, the groups of --by, the --ci intervals and the
--paired differences are that one declaration evaluated on other rows. So a group's numbers are exactly what
scoring its records alone gives, a record without FIELD is a group of its own, and a metric added to a task
is one edit that every one of them shows."""
import json
from dataclasses import dataclass

import numpy as np
import pytest
from click.testing import CliRunner

from cqtools.cli import cli
from cqtools.metrics import bootstrap as boot
from cqtools.metrics.cq import parse_cq
from cqtools.score import Scored, ScoreOptions, Task, score_records
from cqtools.score.reading import NO_VALUE, group_of
from cqtools.score.ci import BootstrapOptions, paired, with_intervals
from cqtools.score.rows import mean, value

from .test_score_ci import fixture_records, predicted, replay_records

DATASETS = ("nq", "wq", "tq")


def tagged(records):
    """Each record gets a "dataset" (three values in turn); every seventh has none, one has null."""
    out = []
    for i, record in enumerate(records):
        record = dict(record)
        if i % 7 != 3:
            record["dataset"] = DATASETS[i % 3]
        if i == 5:
            record["dataset"] = None
        out.append(record)
    return out


def run(args, records):
    return CliRunner().invoke(cli, ["score", *args], input="".join(json.dumps(r) + "\n" for r in records))


def summary(args, records):
    result = run(args, records)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def write(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return str(path)


def members(records, group):
    return [r for r in records if group_of(r, "dataset") == group]


def only_in_nq(key):
    """Records where only the "nq" group has what a metric needs (``key``: dqs, answer options,
    thresholds): a group's declaration must follow its own records, not the whole input's."""
    def prepare(records):
        out = []
        for record in records:
            record = dict(record)
            nq = record.get("dataset") == "nq"
            if key == "threshold":
                record["ambiguity"] = {**record["ambiguity"], "threshold": 0.3 if nq else 0.6}
            elif key == "dqs" and not nq:
                record.pop("dqs", None)
            elif key == "option":  # answers tied to the gold CQ's options (EM) in nq only
                options = parse_cq(str(record["gold"].get("cq") or ""))[1] if nq else []
                record["answers"] = [{"text": a["text"], **({"option": o} if o else {})}
                                     for a, o in zip(record["answers"], [*options, *[None] * len(record["answers"])])]
            out.append(record)
        return out

    return prepare


CASES = [("detect", ["--sweep"], None), ("cq", ["--no-bertscore"], None), ("cbqa", [], None),
         ("cbqa", ["--unique-answers", "question"], None), ("ambigqa", ["--tokenizer", "simple"], None),
         ("clam", [], None), ("retrieval", ["--ac-average", "cluster", "--k", "1,2"], None),
         ("ambigqa", ["--tokenizer", "simple"], only_in_nq("dqs")), ("cbqa", [], only_in_nq("option")),
         ("detect", [], only_in_nq("threshold"))]


def case(task, prepare=None):
    """Records for ``task``: the fixture questions predicting their neighbour's gold, or (clam) the
    replayed `cq oracle --expand` run, whose records of one question are resampled together."""
    records = tagged(replay_records("answer-cq") if task == "clam" else predicted(fixture_records(), shift=1))
    return prepare(records) if prepare else records


@pytest.mark.parametrize("task,options,prepare", CASES)
def test_each_group_is_what_scoring_its_records_alone_gives(task, options, prepare):
    records = case(task, prepare)
    ci = ["--ci", "--n-boot", "200"]
    whole = summary(["--task", task, *options, "--by", "dataset", *ci], records)
    assert whole["by"] == "dataset" and list(whole["groups"]) == sorted(whole["groups"])
    assert set(whole["groups"]) <= {*DATASETS, NO_VALUE} and NO_VALUE in whole["groups"]
    assert sum(g["n"] + g.get("skipped", 0) for g in whole["groups"].values()) == len(records)  # none dropped
    for group, body in whole["groups"].items():
        alone = summary(["--task", task, *options, *ci], members(records, group))
        assert {k: v for k, v in body.items() if k not in ("notes", "ci")} == \
            {k: v for k, v in alone.items() if k not in ("task", "variant", "metric", "notes", "ci")}, group
        assert body["ci"]["intervals"] == alone["ci"]["intervals"], group
        assert set(body["notes"]) <= set(alone["notes"]), group


@pytest.mark.parametrize("task,options,prepare", CASES[:3])
def test_by_adds_the_groups_and_changes_nothing_else(task, options, prepare):
    records = case(task)
    for extra in ([], ["--ci", "--n-boot", "100"]):
        plain = summary(["--task", task, *options, *extra], records)
        grouped = summary(["--task", task, *options, *extra, "--by", "gold.ambiguous"], records)
        assert set(grouped.pop("groups")) == {"true", "false"} and grouped.pop("by") == "gold.ambiguous"
        assert grouped == plain and list(grouped) == list(plain)


@pytest.mark.parametrize("task,options", [("cbqa", []), ("clam", []), ("detect", [])])
def test_paired_by_group_is_the_paired_report_of_each_group(task, options, tmp_path):
    a = case(task)
    b = tagged(replay_records("answer-multi") if task == "clam" else predicted(fixture_records()))
    if task == "clam":  # the same question ids on both sides: B answers each as A's records do, but rotated
        b = [{**r, "answers": a[(i + 1) % len(a)].get("answers")} for i, r in enumerate(a)]
    args = ["--task", task, *options, "--n-boot", "200"]
    report = summary([*args, "--by", "dataset", "--paired", write(tmp_path / "b.jsonl", b)], a)
    assert set(report["groups"]) == {*DATASETS, NO_VALUE}
    for group, body in report["groups"].items():
        other = write(tmp_path / f"b-{group}.jsonl", members(b, group))
        alone = summary([*args, "--paired", other], members(a, group))
        assert body["n"] == alone["n"] and body["missing"] == alone["missing"], group
        assert body["metrics"] == alone["metrics"], group
    table = run([*args, "--by", "dataset", "--paired", str(tmp_path / "b.jsonl"), "--format", "table"], a)
    assert table.exit_code == 0 and f"groups.{NO_VALUE}." in table.stdout
    assert f"note: dataset={NO_VALUE}: {report['groups'][NO_VALUE]['n']} paired questions" in table.stdout


def test_a_record_without_the_field_is_counted_in_its_own_group():
    records = [{"id": "a", "question": "q", "gold": {"ambiguous": True, "type": "multi"}, "ambiguity": {"label": True}},
               {"id": "b", "question": "q", "gold": {"ambiguous": False, "type": "multi"}},
               {"id": "c", "question": "q", "gold": {"ambiguous": False}, "ambiguity": {"label": False}},
               {"id": "d", "question": "q", "gold": {"type": None}},  # unknown gold: skipped, still counted
               {"id": "e", "question": "q", "ambiguity": {"label": True}}]
    out = summary(["--task", "detect", "--by", "gold.type"], records)
    groups = out["groups"]
    assert list(groups) == [NO_VALUE, "multi"]
    assert groups["multi"]["n"] == 2 and groups["multi"]["missing"] == 1
    assert groups[NO_VALUE]["n"] == 1 and groups[NO_VALUE]["skipped"] == 2
    assert "1 record(s) skipped: gold.ambiguous is unknown" not in groups[NO_VALUE]["notes"]
    assert "2 record(s) skipped: gold.ambiguous is unknown" in groups[NO_VALUE]["notes"]
    assert groups[NO_VALUE]["accuracy"] == 100.0 and groups["multi"]["accuracy"] == 50.0
    table = run(["--task", "detect", "--by", "gold.type", "--format", "table"], records).stdout
    assert "groups.(none).n" in table and "note: gold.type=(none): 2 record(s) skipped" in table
    assert group_of({"gold": {"ambiguous": True}}, "gold.ambiguous") == "true"
    assert group_of({"gold": ["x"]}, "gold.type") == NO_VALUE and group_of({"n": 3}, "n") == "3"


def test_a_group_of_skipped_records_only_is_null_and_says_so():
    records = [{"id": "a", "question": "q", "dataset": "x", "gold": {"ambiguous": True}, "ambiguity": {"label": True}},
               {"id": "b", "question": "q", "dataset": "y"}]
    out = summary(["--task", "detect", "--by", "dataset", "--ci", "--n-boot", "20"], records)
    empty = out["groups"]["y"]
    assert empty["n"] == 0 and empty["skipped"] == 1 and empty["accuracy"] is None
    assert "no records to score: every metric is null" in empty["notes"]
    assert "ci: no scored questions to resample" in empty["notes"]


# ---------------------------------------------------------------- a new metric is one edit


@dataclass
class WordsTask(Task):
    """A toy task: the share of long questions (more than 5 words)."""

    columns = ("long", "words")

    def score_record(self, record):
        words = len(record["question"].split())
        return Scored({"id": record["id"], "long": int(words > 5), "words": words}, missing=not words)

    def aggregation(self, rows):
        return [mean("long", "long"), value("cutoff", 5)]


@dataclass
class MoreWordsTask(WordsTask):
    def aggregation(self, rows):
        return super().aggregation(rows) + [mean("avg_words", "words", percent=False)]  # the one edit


def scored_toy(cls, records, by="dataset"):
    opts = ScoreOptions(task="words", keep_questions=True, by=by)
    return score_records(enumerate(records, start=1), opts, task=cls(opts))


def test_a_metric_added_to_a_task_gets_summary_interval_paired_and_groups_for_free():
    a, b = tagged(fixture_records()), tagged(fixture_records()[::-1])
    words = np.array([len(r["question"].split()) for r in a], dtype=float)
    options = BootstrapOptions(n_boot=300)
    before = with_intervals(scored_toy(WordsTask, a).summary(), scored_toy(WordsTask, a), options)
    task = scored_toy(MoreWordsTask, a)
    after = with_intervals(task.summary(), task, options)
    assert after["avg_words"] == pytest.approx(words.mean())
    assert {k: v for k, v in after.items() if k not in ("avg_words", "ci", "groups")} == \
        {k: v for k, v in before.items() if k not in ("ci", "groups")}
    hand = boot.bootstrap(lambda idx: {"avg_words": float(words[idx].mean())}, len(words),
                          {"avg_words": float(words.mean())}, options)["avg_words"]
    assert after["ci"]["intervals"]["avg_words"] == pytest.approx([hand.low, hand.high], abs=1e-9)
    assert after["ci"]["intervals"]["long"] == before["ci"]["intervals"]["long"]
    for group, body in after["groups"].items():
        mine = np.array([len(r["question"].split()) for r in members(a, group)], dtype=float)
        assert body["avg_words"] == pytest.approx(mine.mean()) and "avg_words" in body["ci"]["intervals"]
    report = paired(task, scored_toy(MoreWordsTask, b), options, "a", "b")
    assert set(report["metrics"]) == {"long", "avg_words"}  # a value (cutoff) has no difference
    assert report["metrics"]["avg_words"]["diff"] == pytest.approx(0.0)  # the same questions, reordered
    assert all("avg_words" in body["metrics"] for body in report["groups"].values())


def test_a_task_on_the_old_protocol_is_told_what_to_return():
    @dataclass
    class Old(Task):
        def score_scorable(self, records):
            return [{"id": r["id"]} for r in records]

    opts = ScoreOptions(task="old")
    with pytest.raises(TypeError, match="must return one Scored per record"):
        score_records(enumerate([{"id": "a", "question": "q"}], start=1), opts, task=Old(opts))
