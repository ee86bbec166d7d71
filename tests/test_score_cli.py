"""`cq score` through the real CLI: summaries, per-record rows, errors, and the acceptance checks
(gold as prediction scores 100, a shuffled prediction clearly less)."""
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cqtools.cli import cli

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
SHARED = ROOT.parent / "shared" / "data"


def run(args, records=None, text=None):
    runner = CliRunner()
    data = text if text is not None else "".join(json.dumps(r) + "\n" for r in records)
    return runner.invoke(cli, args, input=data)


def summary(result):
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1, result.stdout
    return json.loads(lines[0])


def fixture_records():
    return [json.loads(line) for line in (FIXTURES / "questions.jsonl").read_text().splitlines() if line.strip()]


def convert(fmt, path):
    result = CliRunner().invoke(cli, ["convert", fmt, str(path)])
    assert result.exit_code == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def with_gold_predictions(records, source=None):
    """Each record predicts the gold of ``source`` (itself by default): answers, dqs, cq."""
    out = []
    for record, src in zip(records, source or records):
        gold = src["gold"]
        record = dict(record)
        record["answers"] = [{"text": cluster[0]} for cluster in gold["answers"]]
        record["dqs"] = [{"question": d["question"], "answer": d["answers"][0]} for d in gold.get("dqs", [])]
        if gold.get("cq"):
            record["cq"] = {"text": gold["cq"], "category": "", "options": [], "method": "gold"}
        out.append(record)
    return out


def rotated(records):
    return records[1:] + records[:1]


# ---------------------------------------------------------------- acceptance


def test_ambigqa_gold_scores_100_and_shuffled_much_less():
    path = SHARED / "ambignq" / "dev_light.json"
    if not path.exists():
        pytest.skip(f"{path} is absent (the shared AmbigNQ data is only on development machines)")
    records = convert("ambignq", path)
    gold = summary(run(["score", "--task", "ambigqa", "--tokenizer", "simple"], with_gold_predictions(records)))
    assert gold["n"] == len(records) and gold["missing"] == 0
    assert gold["f1_ans"] == pytest.approx(100.0)
    assert gold["f1_ans_multi"] == pytest.approx(100.0)
    assert gold["f1_edit_f1"] > 95
    shuffled = summary(run(["score", "--task", "ambigqa", "--tokenizer", "simple"],
                           with_gold_predictions(records, rotated(records))))
    assert shuffled["f1_ans"] < 10 and shuffled["f1_edit_f1"] < 10


def test_cq_gold_scores_100_and_shuffled_less():
    records = fixture_records()
    gold = summary(run(["score", "--task", "cq", "--no-bertscore"], with_gold_predictions(records)))
    assert (gold["n"], gold["missing"], gold["skipped"]) == (18, 0, 12)
    for key in ("bleu", "options_precision", "options_recall", "options_f1", "category_em", "category_bleu1"):
        assert gold[key] == pytest.approx(100.0), key
    # AskCQ's parser (the default) reads "A or B" as one option; cq's splits it
    assert gold["avg_options"] == gold["avg_gold_options"] == pytest.approx(35 / 18, abs=1e-4)
    assert gold["variant"] == {"cq_parser": "askcq", "matcher": "difflib"}
    own = summary(run(["score", "--task", "cq", "--no-bertscore", "--cq-parser", "cq", "--matcher", "lcs"],
                      with_gold_predictions(records)))
    assert own["avg_options"] == own["avg_gold_options"] == pytest.approx(2.5)
    assert own["options_f1"] == pytest.approx(100.0) and own["variant"] == {"cq_parser": "cq", "matcher": "lcs"}
    ambiguous = [r for r in records if r["gold"].get("cq")]
    shuffled = summary(run(["score", "--task", "cq", "--no-bertscore"],
                           with_gold_predictions(ambiguous, rotated(ambiguous))))
    assert shuffled["n"] == 18 and shuffled["missing"] == 0
    assert shuffled["options_f1"] < 50 and shuffled["bleu"] < 60


def test_cbqa_gold_scores_100_and_shuffled_less():
    records = fixture_records()
    gold = summary(run(["score", "--task", "cbqa"], with_gold_predictions(records)))
    assert gold["f1"] == pytest.approx(100.0) and gold["missing"] == 0
    assert gold["avg_answers"] == gold["avg_unique_answers"] == pytest.approx(57 / 30)  # 45 + 12 clusters
    shuffled = summary(run(["score", "--task", "cbqa"], with_gold_predictions(records, rotated(records))))
    assert shuffled["f1"] < 30


def test_cbqa_em_ties_predictions_to_gold_options():
    records = [r for r in fixture_records() if r["gold"].get("cq")]
    preds = []
    for record in records:
        from cqtools.metrics.cq import parse_cq

        options = parse_cq(record["gold"]["cq"])[1]
        record = dict(record, answers=[{"text": cluster[0], "option": option}
                                       for cluster, option in zip(record["gold"]["answers"], options)])
        preds.append(record)
    result = summary(run(["score", "--task", "cbqa"], preds))
    assert result["em"] == pytest.approx(100.0) and result["em_n"] == 45
    wrong = [dict(r, answers=[dict(a, text="nothing") for a in r["answers"]]) for r in preds]
    assert summary(run(["score", "--task", "cbqa"], wrong))["em"] == 0.0


def test_asqa_gold_long_answer(tmp_path):
    records = convert("asqa", FIXTURES / "asqa.json")
    preds = [dict(r, long_answer=r["gold"]["long_answers"][0]) for r in records]
    out = summary(run(["score", "--task", "asqa", "--per-record", str(tmp_path / "rows.jsonl")], preds))
    assert out["n"] == 6 and out["rouge_l"] == pytest.approx(100.0)
    assert out["disambig_f1"] is None and out["dr"] is None
    assert any("--reader" in note for note in out["notes"])
    rows = [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rows] == [r["id"] for r in records]
    empty = summary(run(["score", "--task", "asqa"], records))
    assert empty["missing"] == 6 and empty["rouge_l"] == 0.0 and empty["str_em"] == 0.0


# ---------------------------------------------------------------- per task through the CLI

DETECT = [
    {"id": "a", "question": "q", "gold": {"ambiguous": True}, "ambiguity": {"label": True, "score": 0.9, "threshold": 0.5}},
    {"id": "b", "question": "q", "gold": {"ambiguous": True}, "ambiguity": {"label": False, "score": 0.4, "threshold": 0.5}},
    {"id": "c", "question": "q", "gold": {"ambiguous": False}, "ambiguity": {"label": True, "score": 0.6, "threshold": 0.5}},
    {"id": "d", "question": "q", "gold": {"ambiguous": False}, "ambiguity": {"label": False, "score": 0.1, "threshold": 0.5}},
]


def test_detect_summary_sweep_per_record_and_plot(tmp_path):
    rows_path, plot_path = tmp_path / "rows.jsonl", tmp_path / "det.png"
    result = run(["score", "--task", "detect", "--sweep", "--per-record", str(rows_path), "--plot", str(plot_path)],
                 DETECT)
    out = summary(result)
    assert out["accuracy"] == out["f1"] == out["tpr"] == out["tnr"] == pytest.approx(50.0)
    assert out["auroc"] == pytest.approx(75.0) and out["threshold"] == 0.5
    # predict ambiguous when score > t, as cq detect does: {0.9, 0.6, 0.4} is > 0.1, {0.9} is > 0.6
    assert out["best_f1_threshold"] == 0.1 and out["best_f1"] == pytest.approx(80.0)
    assert out["best_accuracy_threshold"] == 0.6
    rows = [json.loads(line) for line in rows_path.read_text().splitlines()]
    assert rows[1] == {"id": "b", "gold": True, "label": False, "score": 0.4, "correct": 0}
    assert plot_path.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize("flag", ["--threshold", "-O"])
def test_sweep_threshold_applied_by_cq_detect_reproduces_its_f1(flag):
    """--sweep's best threshold, given to `cq detect` (label = score > t), scores what the sweep
    reported (issue 34: it reported best_f1 100 at 2.0 for these, and detect at 2.0 scored 0)."""
    two, one = [{"text": "Paris"}, {"text": "Lyon"}], [{"text": "Paris"}]
    records = [{"id": "a", "question": "q", "gold": {"ambiguous": True}, "answers": two},
               {"id": "b", "question": "q", "gold": {"ambiguous": True}, "answers": two},
               {"id": "c", "question": "q", "gold": {"ambiguous": False}, "answers": one}]
    detected = run(["detect", "--method", "answers"], records)
    assert detected.exit_code == 0, detected.stderr
    swept = summary(run(["score", "--task", "detect", "--sweep"], text=detected.stdout))
    assert swept["best_f1"] == pytest.approx(100.0) and swept["best_accuracy"] == pytest.approx(100.0)
    t = swept["best_f1_threshold"]
    args = ["--threshold", str(t)] if flag == "--threshold" else ["-O", f"threshold={t}"]
    again = run(["detect", "--method", "answers", *args], records)
    assert again.exit_code == 0, again.stderr
    assert [json.loads(line)["ambiguity"]["label"] for line in again.stdout.splitlines()] == [True, True, False]
    scored = summary(run(["score", "--task", "detect"], text=again.stdout))
    assert scored["f1"] == pytest.approx(swept["best_f1"]) and scored["threshold"] == t
    # cq score --threshold relabels by the same rule
    relabelled = summary(run(["score", "--task", "detect", "--threshold", str(t)], text=detected.stdout))
    assert relabelled["f1"] == pytest.approx(swept["best_f1"])


def test_detect_threshold_option_and_missing_prediction():
    records = DETECT[:3] + [{"id": "e", "question": "q", "gold": {"ambiguous": False}},
                            {"id": "f", "question": "q", "gold": {"ambiguous": None}}]
    out = summary(run(["score", "--task", "detect", "--threshold", "0.3"], records))
    # labels at 0.3: a T, b T, c T (wrong), e missing (wrong); f skipped
    assert (out["n"], out["missing"], out["skipped"]) == (4, 1, 1)
    assert out["accuracy"] == pytest.approx(50.0) and out["threshold"] == 0.3
    assert any("skipped" in note for note in out["notes"])


def test_clam_groups_and_lambda():
    records = [
        {"id": "1", "question": "q", "gold": {"ambiguous": False, "answers": [["Paris"]]}, "cq": {"text": "Which: a, b?"},
         "answers": [{"text": "Paris"}]},
        {"id": "2", "question": "q", "gold": {"ambiguous": False, "answers": [["Rome"]]}, "answers": [{"text": "Rome"}]},
        {"id": "3", "question": "q", "gold": {"ambiguous": True, "answers": [["A"], ["B"]], "intended": 1},
         "cq": {"text": "Which: A, B?"}, "answers": [{"text": "it is B"}]},
        {"id": "4", "question": "q", "gold": {"ambiguous": True, "answers": [["A"], ["B"]]}},
    ]
    out = summary(run(["score", "--task", "clam", "--lambda", "0.5"], records))
    assert out["missing"] == 1 and out["lambda"] == 0.5
    assert out["unambiguous"] == {"accuracy": 100.0, "adjusted_accuracy": 75.0, "clarification_rate": 50.0, "n": 2}
    assert out["ambiguous"] == {"accuracy": 50.0, "adjusted_accuracy": 50.0, "clarification_rate": 50.0, "n": 2}
    assert out["all"]["adjusted_accuracy"] == pytest.approx(62.5)


def test_retrieval_answer_coverage():
    records = [{"id": "1", "question": "q", "gold": {"answers": [["Heath Ledger"], ["Jared Leto"]]},
                "passages": [{"id": "p", "title": "x", "text": "Heath Ledger"}, {"id": "q", "title": "Jared Leto", "text": ""}]},
               {"id": "2", "question": "q", "gold": {"answers": [["Paris"]]}}]
    out = summary(run(["score", "--task", "retrieval", "--k", "1,2"], records))
    # record 1: AC@1 1/2, AC@2 1; record 2 has no passages: 0
    assert out["ac@1"] == pytest.approx(25.0) and out["ac@2"] == pytest.approx(50.0) and out["missing"] == 1


def test_table_format_is_for_people():
    result = run(["score", "--task", "cbqa", "--format", "table"], with_gold_predictions(fixture_records()))
    assert result.exit_code == 0
    assert "f1" in result.stdout and "100.00" in result.stdout and not result.stdout.startswith("{")


# ---------------------------------------------------------------- errors


def test_bad_json_line_is_one_line_error():
    result = run(["score", "--task", "cbqa"], text='{"id": "1", "question": "q"}\nnot json\n')
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1 and "line 2" in result.stderr


def test_plot_for_a_task_without_plot_is_an_error(tmp_path):
    result = run(["score", "--task", "cbqa", "--plot", str(tmp_path / "x.png")], fixture_records()[:2])
    assert result.exit_code == 1 and "--plot" in result.stderr


def test_bad_k_is_a_usage_error():
    result = run(["score", "--task", "retrieval", "--k", "5,x"], [])
    assert result.exit_code == 1 and "--k" in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_empty_input_gives_a_summary_with_zero_records():
    out = summary(run(["score", "--task", "cq", "--no-bertscore"], []))
    assert out["n"] == 0 and out["bleu"] is None


# ---------------------------------------------------------------- slow: JVM and models


@pytest.mark.slow
def test_ambigqa_ptb_tokenizer_matches_on_fixtures():
    records = fixture_records()
    out = summary(run(["score", "--task", "ambigqa"], with_gold_predictions(records)))
    assert out["tokenizer"] == "ptb" and out["f1_ans"] == pytest.approx(100.0) and out["f1_edit_f1"] > 95


@pytest.mark.slow
def test_bertscore_with_the_offline_model():
    records = fixture_records()
    out = summary(run(["score", "--task", "cq", "--bertscore-model", "sentence-transformers/all-MiniLM-L6-v2"],
                      with_gold_predictions(records)))
    assert out["bertscore_f1"] == pytest.approx(100.0, abs=0.01)
    assert out["bertscore_model"].startswith("sentence-transformers/all-MiniLM-L6-v2")


@pytest.mark.slow
def test_reader_without_a_qa_head_reports_null_with_a_note():
    records = convert("asqa", FIXTURES / "asqa.json")
    preds = [dict(r, long_answer=r["gold"]["long_answers"][0]) for r in records]
    out = summary(run(["score", "--task", "asqa", "--reader", "sentence-transformers/all-MiniLM-L6-v2"], preds))
    assert out["disambig_f1"] is None and out["dr"] is None
    assert any("neither an extractive QA model nor a generator" in note for note in out["notes"])


# ---------------------------------------------------------------- issue 10: empty input, paths, variants


def test_empty_input_reports_null_and_says_so():
    out = summary(run(["score", "--task", "detect"], []))
    assert out["n"] == 0 and out["accuracy"] is None and out["f1"] is None
    assert any("no records" in note for note in out["notes"])


def test_per_record_creates_parent_directories(tmp_path):
    path = tmp_path / "new" / "dir" / "rows.jsonl"
    summary(run(["score", "--task", "detect", "--per-record", str(path)], DETECT))
    assert len(path.read_text().splitlines()) == 4


def test_per_record_unwritable_is_one_line_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = run(["score", "--task", "detect", "--per-record", str(blocker / "rows.jsonl")], DETECT)
    assert result.exit_code == 1 and result.stderr.count("\n") == 1 and "--per-record" in result.stderr


def test_retrieval_non_list_passages_is_one_line_error():
    records = [{"id": "1", "question": "q", "gold": {"answers": [["Paris"]]}, "passages": "Paris"}]
    result = run(["score", "--task", "retrieval"], records)
    assert result.exit_code == 1 and result.stderr.count("\n") == 1
    assert "'passages' must be a list" in result.stderr and "line 1" in result.stderr


def test_retrieval_cluster_average():
    records = [{"id": "1", "question": "q", "gold": {"answers": [["Heath Ledger"], ["Jared Leto"], ["Joaquin Phoenix"]]},
                "passages": [{"id": "p", "title": "", "text": "Heath Ledger"}]},
               {"id": "2", "question": "q", "gold": {"answers": [["Paris"]]},
                "passages": [{"id": "p", "title": "", "text": "Paris"}]}]
    per_record = summary(run(["score", "--task", "retrieval", "--k", "1"], records))
    assert per_record["ac@1"] == pytest.approx(100 * (1 / 3 + 1) / 2, abs=1e-4)
    assert per_record["variant"] == {"ac_average": "record"}
    per_cluster = summary(run(["score", "--task", "retrieval", "--k", "1", "--ac-average", "cluster"], records))
    assert per_cluster["ac@1"] == pytest.approx(50.0) and per_cluster["variant"] == {"ac_average": "cluster"}


def test_extractive_reader_without_a_pipeline(tmp_path):
    """A tiny random QA model through AutoModelForQuestionAnswering (transformers 5 has no
    question-answering pipeline): Disambig-F1 and DR are computed, answers are spans."""
    from transformers import BertConfig, BertForQuestionAnswering

    from .conftest import _save_tiny_model

    model = _save_tiny_model(str(tmp_path / "qa"), lambda tok: BertForQuestionAnswering(BertConfig(
        vocab_size=len(tok), hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64)))
    records = convert("asqa", FIXTURES / "asqa.json")
    preds = [dict(r, long_answer=r["gold"]["long_answers"][0]) for r in records]
    rows_path = tmp_path / "rows.jsonl"
    out = summary(run(["score", "--task", "asqa", "--reader", model, "--per-record", str(rows_path)], preds))
    assert out["reader"] == model and out["disambig_f1"] is not None and out["dr"] is not None
    assert all("disambig_f1" in json.loads(line) for line in rows_path.read_text().splitlines())


@pytest.mark.slow
def test_bertscore_with_empty_and_null_cqs():
    records = [{"id": "1", "question": "q", "gold": {"cq": "Which film: A, B?"}, "cq": {"text": ""}},
               {"id": "2", "question": "q", "gold": {"cq": "Which film: A, B?"}, "cq": None},
               {"id": "3", "question": "q", "gold": {"cq": "Which film: A, B?"}, "cq": {"text": "Which film: A, B?"}}]
    out = summary(run(["score", "--task", "cq", "--bertscore-model", "sentence-transformers/all-MiniLM-L6-v2"],
                      records))
    assert out["bertscore_f1"] == pytest.approx(100 / 3, abs=0.01) and out["missing"] == 1
