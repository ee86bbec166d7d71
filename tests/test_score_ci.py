"""`cq score --ci` and `--paired`: bootstrap intervals over questions (cqtools.metrics.bootstrap),
recomputed with each task's own aggregation (Task.resample), through the real CLI."""
import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from cqtools.cli import cli
from cqtools.metrics import bootstrap as boot
from cqtools.score.settings import BootstrapOptions
from cqtools.score import ScoreOptions, score_records

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"


def mean_of(values):
    values = np.asarray(values, dtype=float)
    return lambda idx: {"mean": float(values[idx].mean())}


def ci_of(values, **kw):
    return boot.bootstrap(mean_of(values), len(values), {"mean": float(np.mean(values))}, BootstrapOptions(**kw))["mean"]


# ---------------------------------------------------------------- the pure functions


def test_interval_contains_the_estimate_and_shrinks_with_more_questions():
    rng = np.random.default_rng(123)
    small = rng.random(30)
    large = rng.random(3000)
    for values in (small, large):
        iv = ci_of(values)
        assert iv.low < values.mean() < iv.high
        assert iv.used == 1000
    assert (ci_of(large).high - ci_of(large).low) < (ci_of(small).high - ci_of(small).low) / 5


def test_same_seed_same_interval_other_seed_another():
    values = np.random.default_rng(0).random(50)
    a, b, c = ci_of(values, seed=0), ci_of(values, seed=0), ci_of(values, seed=1)
    assert (a.low, a.high) == (b.low, b.high)
    assert (a.low, a.high) != (c.low, c.high)


def test_percentile_and_basic_intervals():
    values = np.arange(101, dtype=float)  # quantiles 2.5 and 97.5 are exact here
    assert boot.interval(values, 30.0, 0.95, "percentile") == pytest.approx((2.5, 97.5))
    assert boot.interval(values, 30.0, 0.95, "basic") == pytest.approx((2 * 30 - 97.5, 2 * 30 - 2.5))
    assert boot.interval(np.array([np.nan, 1.0, np.nan]), 1.0, 0.95, "percentile") == (1.0, 1.0)  # undefined values left out
    assert boot.interval(np.array([np.nan]), 1.0, 0.95, "percentile") == (None, None)
    with pytest.raises(ValueError):
        boot.interval(values, 1.0, 0.95, "bca")


def test_undefined_resamples_are_counted():
    gold = [True] + [False] * 9  # a resample without the one positive has no recall

    def recall(idx):
        positives = [i for i in idx if gold[i]]
        return {"recall": 1.0 if positives else None}

    iv = boot.bootstrap(recall, 10, {"recall": 1.0}, BootstrapOptions(n_boot=500))["recall"]
    assert 0 < iv.used < 500 and (iv.low, iv.high) == (1.0, 1.0)


def test_paired_difference_of_identical_systems_is_exactly_zero():
    values = np.random.default_rng(1).random(40)
    diffs = boot.paired_bootstrap(mean_of(values), mean_of(values.copy()), 40, BootstrapOptions())
    d = diffs["mean"]
    assert d.diff == 0 and (d.interval.low, d.interval.high) == (0.0, 0.0)
    assert not d.interval.excludes(0.0)


def test_paired_bootstrap_detects_a_known_difference_that_unpaired_intervals_miss():
    rng = np.random.default_rng(7)
    a = rng.random(200)
    b = a + 0.02  # every question a little better: the unpaired intervals overlap, the paired one does not
    d = boot.paired_bootstrap(mean_of(a), mean_of(b), 200, BootstrapOptions())["mean"]
    assert d.diff == pytest.approx(0.02)
    assert d.interval.low == pytest.approx(0.02) and d.interval.excludes(0.0)
    ia, ib = ci_of(a), ci_of(b)
    assert ib.low < ia.high
    noise = boot.paired_bootstrap(mean_of(a), mean_of(rng.permutation(a)), 200, BootstrapOptions())["mean"]
    assert not noise.interval.excludes(0.0)


# ---------------------------------------------------------------- each task's own aggregation


def fixture_records():
    return [json.loads(line) for line in (FIXTURES / "questions.jsonl").read_text().splitlines() if line.strip()]


def predicted(records, shift=0):
    """Records predicting the gold of the record ``shift`` places later (0: their own gold)."""
    out = []
    for i, record in enumerate(records):
        gold = records[(i + shift) % len(records)]["gold"]
        record = dict(record)
        record["answers"] = [{"text": c[0], "option": o} for c, o in zip(gold["answers"], ("A", "B", "C"))]
        record["dqs"] = [{"question": d["question"], "answer": d["answers"][0]} for d in gold.get("dqs", [])]
        if gold.get("cq"):
            record["cq"] = {"text": gold["cq"]}
        record["ambiguity"] = {"label": len(gold["answers"]) > 1, "score": len(record["question"]) / 50}
        record["passages"] = [{"id": f"d{i}", "title": c[0], "text": ""} for c in gold["answers"]]
        out.append(record)
    return out


def replay_records(step):
    for line in (FIXTURES / "replay" / "pipeline.jsonl").read_text().splitlines():
        data = json.loads(line)
        if data["step"] == step:
            return data["records"]
    raise KeyError(step)


def scored(task, records, **options):
    own = {"ambigqa": {"tokenizer": "simple"}, "cq": {"no_bertscore": True}}.get(task, {})
    result = score_records(enumerate(records, start=1), ScoreOptions(task=task, keep_questions=True),
                           **own, **options)
    return result, boot.flatten(result.summary())


CASES = [("detect", "gold", {"sweep": True}), ("detect", "detect-llm", {}), ("cq", "gold", {}),
         ("cq", "gen-cq-llm", {}), ("cbqa", "gold", {}), ("cbqa", "answer-cq", {}),
         ("cbqa", "answer-cq", {"unique_answers": "question"}), ("ambigqa", "disambiguate-qd", {}),
         ("ambigqa", "gold", {}), ("clam", "answer-cq", {}), ("clam", "gold", {}),
         ("retrieval", "retrieve", {}), ("retrieval", "gold", {"ac_average": "cluster", "ks": "1,2"})]


def case_records(source):
    return predicted(fixture_records(), shift=1) if source == "gold" else replay_records(source)


@pytest.mark.parametrize("task,source,options", CASES)
def test_resample_of_every_question_gives_the_summary(task, source, options):
    result, summary = scored(task, case_records(source), **options)
    point = result.resample(np.arange(len(result.question_ids)))
    assert point, "resample gives no metric"
    for name, value in point.items():
        assert value == pytest.approx(summary[name], abs=1e-9), name


@pytest.mark.parametrize("task,source,options", CASES)
def test_resample_equals_scoring_the_resampled_records(task, source, options):
    """A resample with repeats gives what scoring those records (repeats included) gives: corpus
    BLEU, micro averages, AUROC and distinct answers are recomputed, not averaged."""
    from cqtools.score.clam import question_of

    records = case_records(source)
    result, _ = scored(task, records, **options)
    unit = question_of if task == "clam" else (lambda r: r["id"])  # clam resamples whole questions
    members = [[r for r in records if unit(r) == qid] for qid in result.question_ids]
    idx = np.random.default_rng(5).integers(0, len(members), size=len(members))
    _, direct = scored(task, [r for i in idx for r in members[i]], **options)
    for name, value in result.resample(idx).items():
        assert value == pytest.approx(direct[name], abs=1e-9), name


def test_asqa_resample_equals_scoring_the_resampled_records():
    records = json.loads((FIXTURES / "released" / "asqa.json").read_text())["records"]
    result, summary = scored("asqa", records)
    assert result.resample(np.arange(len(records))) == pytest.approx(
        {k: summary[k] for k in ("rouge_l", "str_em", "answer_f1", "length") if summary[k] is not None})
    idx = np.array([0, 0, len(records) - 1] + list(range(len(records) - 3)))
    _, direct = scored("asqa", [records[i] for i in idx])
    for name, value in result.resample(idx).items():
        assert value == pytest.approx(direct[name], abs=1e-9), name


# ---------------------------------------------------------------- the CLI


def run(args, records):
    return CliRunner().invoke(cli, ["score", *args], input="".join(json.dumps(r) + "\n" for r in records))


def write(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return str(path)


def test_ci_adds_intervals_and_changes_nothing_else():
    records = predicted(fixture_records(), shift=1)
    plain = run(["--task", "cbqa"], records)
    with_ci = run(["--task", "cbqa", "--ci", "--n-boot", "300"], records)
    assert plain.exit_code == 0 and with_ci.exit_code == 0, with_ci.stderr
    a, b = json.loads(plain.stdout), json.loads(with_ci.stdout)
    ci = b.pop("ci")
    b["notes"] = [note for note in b["notes"] if not note.startswith("avg_unique_answers: no interval")]
    assert a == b
    assert ci["method"] == "percentile" and ci["level"] == 0.95 and ci["n_boot"] == 300 and ci["seed"] == 0
    assert set(ci["intervals"]) == {"precision", "recall", "f1", "avg_answers"}  # em: null
    for name, (low, high) in ci["intervals"].items():
        assert low - 1e-4 <= a[name] <= high + 1e-4, name
    assert list(json.loads(with_ci.stdout)) == [*list(a)[:-1], "ci", "notes"]


def test_distinct_answers_over_the_set_get_no_interval():
    """Distinct answers over a resample undercount (a question drawn twice adds none): its bootstrap
    values lie below the estimate, so that metric has no interval and a note says why."""
    records = predicted(fixture_records(), shift=1)
    dataset = json.loads(run(["--task", "cbqa", "--ci", "--n-boot", "100"], records).stdout)
    assert "avg_unique_answers" not in dataset["ci"]["intervals"]
    assert any(note.startswith("avg_unique_answers: no interval") for note in dataset["notes"])
    question = json.loads(run(["--task", "cbqa", "--ci", "--n-boot", "100", "--unique-answers", "question"],
                              records).stdout)
    low, high = question["ci"]["intervals"]["avg_unique_answers"]
    assert low <= question["avg_unique_answers"] <= high


def test_ci_nests_like_the_summary_and_is_reproducible():
    records = replay_records("answer-cq")
    first = run(["--task", "clam", "--ci", "--n-boot", "200"], records)
    again = run(["--task", "clam", "--ci", "--n-boot", "200"], records)
    other = run(["--task", "clam", "--ci", "--n-boot", "200", "--seed", "1"], records)
    assert first.exit_code == 0, first.stderr
    assert first.stdout == again.stdout and first.stdout != other.stdout
    intervals = json.loads(first.stdout)["ci"]["intervals"]
    assert set(intervals) == {"ambiguous", "unambiguous", "all", "over_clarification", "under_clarification",
                              "questions_asked", "turns"}  # the cost of clarifying (issue 59) gets intervals too
    assert set(intervals["all"]) == {"accuracy", "adjusted_accuracy", "clarification_rate"}


def test_ci_table_shows_the_interval_beside_the_value():
    result = run(["--task", "detect", "--ci", "--n-boot", "100", "--format", "table"], replay_records("detect-llm"))
    assert result.exit_code == 0, result.stderr
    accuracy = next(line for line in result.stdout.splitlines() if line.startswith("accuracy "))
    assert accuracy.split()[2].startswith("[") and accuracy.endswith("]")
    assert "95% percentile bootstrap over questions, 100 resamples, seed 0" in result.stdout


def test_paired_identical_files_differ_by_exactly_zero(tmp_path):
    records = predicted(fixture_records(), shift=1)
    other = write(tmp_path / "b.jsonl", records)
    result = run(["--task", "cbqa", "--paired", other], records)
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["n"] == 30 and report["a"] == "stdin" and report["b"] == other
    for name, m in report["metrics"].items():
        assert m["a"] == m["b"] and m["diff"] == 0 and (m["low"], m["high"]) == (0, 0), name
        assert m["excludes_zero"] is False


def test_paired_detects_a_known_difference(tmp_path):
    records = fixture_records()
    better = write(tmp_path / "gold.jsonl", predicted(records))
    result = run(["--task", "cbqa", "--paired", better, "--n-boot", "500"], predicted(records, shift=1))
    assert result.exit_code == 0, result.stderr
    f1 = json.loads(result.stdout)["metrics"]["f1"]
    assert f1["b"] > 95 and f1["diff"] == pytest.approx(f1["b"] - f1["a"], abs=1e-3)
    assert f1["low"] > 0 and f1["excludes_zero"] is True
    table = run(["--task", "cbqa", "--paired", better, "--n-boot", "500", "--format", "table"],
                predicted(records, shift=1))
    f1_line = next(line for line in table.stdout.splitlines() if line.startswith("f1 "))
    assert f1_line.endswith("*")


def test_paired_refuses_different_ids_unless_intersect(tmp_path):
    records = predicted(fixture_records())
    other = write(tmp_path / "b.jsonl", records[:-2])
    refused = run(["--task", "cbqa", "--paired", other], records)
    assert refused.exit_code == 1 and refused.stdout == ""
    assert len(refused.stderr.strip().splitlines()) == 1
    assert "2 only in stdin (e.g. fx29)" in refused.stderr and "--intersect" in refused.stderr
    kept = run(["--task", "cbqa", "--paired", other, "--intersect"], records)
    assert kept.exit_code == 0, kept.stderr
    report = json.loads(kept.stdout)
    assert report["n"] == 28 and any("--intersect" in note for note in report["notes"])


def test_paired_refuses_duplicate_ids(tmp_path):
    records = predicted(fixture_records())
    other = write(tmp_path / "b.jsonl", records + records[:1])
    result = run(["--task", "cbqa", "--paired", other], records)
    assert result.exit_code == 1 and "scored twice" in result.stderr


def test_clam_resamples_whole_questions_not_expanded_records():
    """`cq oracle --expand` writes one record per intended DQ (<id>#<i>); they are drawn together
    (a cluster bootstrap), so an interval does not treat one question's DQs as independent draws."""
    def rec(rid, ambiguous, answers, intended, said, asked):
        return {"id": rid, "gold": {"ambiguous": ambiguous, "answers": answers, "intended": intended},
                "answers": [{"text": said}], "cq": {"text": "Which?"} if asked else None}

    records = [rec("q1#0", True, [["Paris"], ["Lyon"]], 0, "Paris", True),
               rec("q1#1", True, [["Paris"], ["Lyon"]], 1, "Paris", True),
               rec("q2", False, [["Rome"]], 0, "Rome", False),
               rec("q#3#0", True, [["x"], ["y"]], 0, "y", False)]  # '#' inside an id: only the suffix counts
    result, summary = scored("clam", records)
    assert result.question_ids == ["q1", "q2", "q#3"]
    assert summary["all.accuracy"] == pytest.approx(50.0)  # still per record: 2 of 4 correct
    idx = np.array([0, 0, 1])
    _, direct = scored("clam", [records[0], records[1], records[0], records[1], records[2]])
    for name, value in result.resample(idx).items():
        assert value == pytest.approx(direct[name], abs=1e-9), name


def test_a_paired_difference_on_too_few_questions_is_no_finding(tmp_path):
    """The smoke report's "higher by 4.0 [4.0, 4.0] on 1 shared questions": below MIN_PAIRED_N shared
    questions `cq score --paired` says it cannot tell, in JSON and in the table, however the interval lies."""
    from cqtools.score.settings import MIN_PAIRED_N
    records = fixture_records()[:MIN_PAIRED_N - 1]
    better = write(tmp_path / "gold.jsonl", predicted(records))
    result = run(["--task", "cbqa", "--paired", better, "--n-boot", "200"], predicted(records, shift=1))
    assert result.exit_code == 0, result.stderr
    f1 = json.loads(result.stdout)["metrics"]["f1"]
    assert f1["diff"] > 0 and f1["excludes_zero"] is False
    assert f1["cannot_tell"] == f"cannot tell: {MIN_PAIRED_N - 1} shared questions, fewer than {MIN_PAIRED_N}"
    table = run(["--task", "cbqa", "--paired", better, "--n-boot", "200", "--format", "table"],
                predicted(records, shift=1))
    f1_line = next(line for line in table.stdout.splitlines() if line.startswith("f1 "))
    assert f1_line.endswith("cannot tell: 9 shared questions, fewer than 10") and "*" not in f1_line
