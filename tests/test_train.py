"""`cq train detect|gen-cq`: test-sized runs whose saved models load back via --model."""
import json
import os

import orjson
import pytest

from cqtools.cli import cli

from .conftest import FIXTURES, jsonl, parse_jsonl

QUESTIONS = str(FIXTURES / "questions.jsonl")


@pytest.fixture(scope="module")
def detect_model(tmp_path_factory):
    """MiniLM-L6 + a 2-label head, 2 steps on 16 fixture records (about 10 s on 2 cores)."""
    from click.testing import CliRunner

    out = str(tmp_path_factory.mktemp("detect") / "model")
    result = CliRunner().invoke(cli, ["train", "detect", "--train", QUESTIONS, "--dev", QUESTIONS, "--out", out,
                                      "--limit", "16", "--dev-limit", "8", "--max-steps", "2", "--batch-size", "8",
                                      "--eval-every", "1", "--seed", "1"])
    assert result.exit_code == 0, result.stderr
    return out, result


def test_train_detect_writes_a_model_and_report(detect_model):
    out, result = detect_model
    summary = orjson.loads(result.stdout)
    assert summary["out"] == out and summary["steps"] == 2 and summary["train_records"] == 16
    assert {"accuracy", "f1", "auroc", "step"} <= set(summary["best"])
    assert {"config.json", "model.safetensors", "cq_train.json"} <= set(os.listdir(out))
    with open(os.path.join(out, "cq_train.json")) as fh:
        report = json.load(fh)
    assert len(report["history"]) == 2 and report["config"]["seed"] == 1
    assert "max_length" in report["config"] and not {"two_options", "targets"} & set(report["config"])
    assert report["config"]["input_layout"] == "pair"  # detect's own layout (issue 55: AskCQ's is "joined")


def test_trained_model_loads_in_detect(runner, detect_model, questions):
    out, _ = detect_model
    records = [dict(q, passages=[{"id": "p1", "title": "T", "text": "a passage"}]) if i % 2 else q
               for i, q in enumerate(questions[:6])]  # with and without passages
    result = runner.invoke(cli, ["detect", "--method", "classifier", "--model", out], input=jsonl(records))
    assert result.exit_code == 0, result.stderr
    got = parse_jsonl(result.stdout)
    assert [r["id"] for r in got] == [r["id"] for r in records]
    for r in got:
        assert 0.0 <= r["ambiguity"]["score"] <= 1.0 and r["ambiguity"]["threshold"] == 0.5
        assert r["meta"]["detect"]["model"] == out


def test_classifier_bad_passages_is_a_one_line_error(runner, detect_model):
    out, _ = detect_model
    result = runner.invoke(cli, ["detect", "--method", "classifier", "--model", out],
                           input=jsonl([{"id": "b1", "question": "q", "passages": ["just a string"]}]))
    assert result.exit_code == 1 and result.stdout == ""
    assert "'passages' must be a list" in result.stderr and "b1" in result.stderr
    assert "Traceback" not in result.stderr


def test_train_detect_holdout_and_max_length(runner, tmp_path):
    """--holdout takes the early-stopping records out of --train; --max-length travels with the model."""
    out = str(tmp_path / "held")
    result = runner.invoke(cli, ["train", "detect", "--train", QUESTIONS, "--holdout", "4", "--limit", "12",
                                 "--max-steps", "0", "--max-length", "16", "--select", "auroc", "--out", out])
    assert result.exit_code == 0, result.stderr
    summary = orjson.loads(result.stdout)
    assert summary["dev_source"] == "holdout" and summary["dev_records"] == 4 and summary["train_records"] == 8
    assert "holdout_ids" not in summary
    with open(os.path.join(out, "cq_train.json")) as fh:
        report = json.load(fh)
    first12 = [orjson.loads(line)["id"] for line in open(QUESTIONS)][:12]
    assert len(report["holdout_ids"]) == 4 and set(report["holdout_ids"]) <= set(first12)
    assert report["config"]["max_length"] == 16 and report["config"]["select"] == "auroc"
    result = runner.invoke(cli, ["detect", "--method", "classifier", "--model", out, "--passages", "0"],
                           input=(FIXTURES / "questions.jsonl").read_text().splitlines()[0] + "\n")
    assert result.exit_code == 0, result.stderr
    assert parse_jsonl(result.stdout)[0]["meta"]["detect"]["max_length"] == 16


@pytest.mark.parametrize("args", [[], ["--dev", QUESTIONS, "--holdout", "2"]])
def test_train_detect_needs_dev_or_holdout(runner, tmp_path, args):
    result = runner.invoke(cli, ["train", "detect", "--train", QUESTIONS, "--out", str(tmp_path / "m"), *args])
    assert result.exit_code == 1 and "--holdout" in result.stderr and "Traceback" not in result.stderr


def test_train_detect_holdout_too_large(runner, tmp_path):
    result = runner.invoke(cli, ["train", "detect", "--train", QUESTIONS, "--limit", "5", "--holdout", "5",
                                 "--out", str(tmp_path / "m")])
    assert result.exit_code == 1 and "leaves no training records" in result.stderr


def test_train_gen_cq_tiny_seq2seq(runner, tmp_path, tiny_seq2seq):
    out = str(tmp_path / "gencq")
    result = runner.invoke(cli, ["train", "gen-cq", "--model", tiny_seq2seq, "--train", QUESTIONS, "--dev", QUESTIONS,
                                 "--out", out, "--max-steps", "2", "--batch-size", "4", "--dev-limit", "6"])
    assert result.exit_code == 0, result.stderr
    summary = orjson.loads(result.stdout)
    assert summary["kind"] == "seq2seq" and summary["steps"] == 2 and summary["train_examples"] == 18
    assert set(summary["dev"]) >= {"options_f1", "category_em", "valid"}
    result = runner.invoke(cli, ["gen-cq", "--method", "seq2seq", "--model", out, "--max-new-tokens", "6"],
                           input=(FIXTURES / "questions.jsonl").read_text().splitlines()[0] + "\n")
    assert result.exit_code == 0, result.stderr
    assert parse_jsonl(result.stdout)[0]["cq"]["method"] == "seq2seq"
    with open(os.path.join(out, "cq_train.json")) as fh:
        config = json.load(fh)["config"]
    # each trainer's report holds its own settings only (one TrainConfig held both trainers' before, issue 34)
    assert {"two_options", "input_layout", "targets"} <= set(config)
    assert not {"holdout", "select", "max_length"} & set(config)


def test_train_missing_file(runner, tmp_path):
    result = runner.invoke(cli, ["train", "detect", "--train", str(tmp_path / "none.jsonl"), "--dev", QUESTIONS,
                                 "--out", str(tmp_path / "m")])
    assert result.exit_code == 1 and "file not found" in result.stderr and "cq convert ambignq" in result.stderr


def test_train_needs_gold_labels(runner, tmp_path):
    path = tmp_path / "nogold.jsonl"
    path.write_text(jsonl([{"id": "n1", "question": "q"}]))
    result = runner.invoke(cli, ["train", "detect", "--train", str(path), "--dev", str(path), "--out", str(tmp_path / "m")])
    assert result.exit_code == 1 and "gold.ambiguous" in result.stderr and "Traceback" not in result.stderr


def test_train_gen_cq_tiny_causal(runner, tmp_path, tiny_causal):
    out = str(tmp_path / "gencq-causal")
    result = runner.invoke(cli, ["train", "gen-cq", "--model", tiny_causal, "--train", QUESTIONS, "--dev", QUESTIONS,
                                 "--out", out, "--max-steps", "2", "--batch-size", "4", "--dev-limit", "6"])
    assert result.exit_code == 0, result.stderr
    summary = orjson.loads(result.stdout)
    assert summary["kind"] == "causal" and summary["steps"] == 2 and summary["dev"]["n"] == 4


def test_one_training_loop_serves_every_trainer():
    """Issue 22: detect, gen-cq and reader train through cqtools/train/loop.py:train_loop; no module
    but the loop steps an optimizer or draws batches itself."""
    import ast

    from .conftest import ROOT

    steppers = set()
    for path in sorted((ROOT / "cqtools").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("optimizer_step", "batches",
                                                                                "make_optimizer"):
                steppers.add(str(path.relative_to(ROOT)))
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "train_loop":
                steppers.add("uses:" + path.name)
    # spanseqgen.py's fine_tune is the loop's one caller for spanseqgen, qd and fid
    assert steppers == {"cqtools/train/loop.py", "uses:detector.py", "uses:cq_generator.py", "uses:span_reader.py", "uses:rerank.py",
                        "uses:spanseqgen.py"}


def test_a_time_limit_is_a_cap_that_says_where_it_stopped_and_steps_are_reproducible(runner, tmp_path, tiny_seq2seq):
    """Budgets in steps give the same model twice; --max-seconds only caps, warns and says so in the card."""
    def train(name, *budget):
        out = str(tmp_path / name)
        result = runner.invoke(cli, ["train", "gen-cq", "--model", tiny_seq2seq, "--train", QUESTIONS, "--out", out, "--dev", QUESTIONS, "--dev-limit", "2",
                                     "--batch-size", "4", "--seed", "3", *budget])
        assert result.exit_code == 0, result.stderr
        with open(os.path.join(out, "cq_train.json")) as fh:
            return out, json.load(fh), result.stderr

    first, card, _ = train("a", "--max-steps", "3")
    second, _, _ = train("b", "--max-steps", "3")
    assert card["steps"] == 3 and card["stopped"] == "max steps"
    with open(os.path.join(first, "model.safetensors"), "rb") as a, open(os.path.join(second, "model.safetensors"), "rb") as b:
        assert a.read() == b.read()
    _, capped, stderr = train("c", "--max-seconds", "0")
    assert capped["steps"] == 0 and capped["stopped"] == "time limit: stopped early at step 0"
    assert "stopped early at step 0" in stderr and "--max-steps" in stderr


# --- compact weights (the shipped models' format) and the training bar ---------------------------------------

def test_a_compact_model_is_a_quarter_of_the_size_and_scores_like_its_float_model(detect_model, tmp_path, runner,
                                                                                    questions):
    from cqtools.models import compact

    out, _ = detect_model
    small = str(tmp_path / "compact")
    result = runner.invoke(cli, ["train", "compact", out, "--out", small])
    assert result.exit_code == 0, result.stderr
    summary = orjson.loads(result.stdout)
    assert compact.is_compact(small) and not os.path.exists(os.path.join(small, "model.safetensors"))
    assert summary["bytes"] < 0.3 * summary["source_bytes"] and summary["max_abs_weight_error"] < 0.05
    scores = {}
    for name, model in (("float", out), ("compact", small)):
        done = runner.invoke(cli, ["detect", "--method", "classifier", "--model", model, "-q"], input=jsonl(questions))
        assert done.exit_code == 0, done.stderr
        scores[name] = [r["ambiguity"]["score"] for r in parse_jsonl(done.stdout)]
    assert scores["float"] != scores["compact"]  # the weights did change ...
    assert max(abs(a - b) for a, b in zip(scores["float"], scores["compact"])) < 0.02  # ... by a rounding
    again = runner.invoke(cli, ["train", "compact", out, "--out", small])
    assert again.exit_code != 0 and "pass --overwrite" in again.stderr
    assert runner.invoke(cli, ["train", "compact", out, "--out", small, "--overwrite"]).exit_code == 0
    assert compact.is_compact(small)
    mine = tmp_path / "my-files"  # --overwrite replaces a model, never a folder of other files
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    refused = runner.invoke(cli, ["train", "compact", out, "--out", str(mine), "--overwrite"])
    assert refused.exit_code != 0 and "not a `cq train` model directory" in refused.stderr
    assert (mine / "notes.txt").read_text() == "keep me"
    empty = tmp_path / "empty"
    empty.mkdir()
    bad = runner.invoke(cli, ["train", "compact", str(empty), "--out", str(tmp_path / "x")])
    assert bad.exit_code != 0 and "has no model.safetensors" in bad.stderr and "Traceback" not in bad.stderr


def test_training_draws_a_step_bar_on_a_terminal_and_none_under_quiet(tmp_path):
    import sys

    from .conftest import on_a_terminal

    cmd = [sys.executable, "-m", "cqtools", "train", "detect", "--train", QUESTIONS, "--dev", QUESTIONS, "--limit", "16",
           "--dev-limit", "4", "--max-steps", "3", "--batch-size", "8", "--out", str(tmp_path / "m")]
    env = {**os.environ, "CQ_OFFLINE": "1"}
    code, shown = on_a_terminal(cmd, env)
    assert code == 0, shown[-2000:]
    assert b"3/3" in shown and b"step" in shown and b"loss=" in shown
    code, quiet = on_a_terminal([*cmd, "-q", "--overwrite"], env)
    assert code == 0 and b"3/3" not in quiet


@pytest.mark.parametrize("task", ["detect", "reader"])
def test_a_gguf_llm_as_the_base_is_a_one_line_error(runner, tmp_path, task):
    """The offline SmolLM2 is a GGUF file for llama.cpp: a trainer asked to start from it says so in one line (it
    raised a tokenizer ValueError traceback before) and writes no model."""
    from cqtools.models.resolve import resolve

    llm = "HuggingFaceTB/SmolLM2-135M-Instruct"
    if resolve(llm).fmt != "gguf":
        pytest.skip(f"{llm} resolves to {resolve(llm).source}, not the offline GGUF copy")
    records = tmp_path / "records.jsonl"
    with open(QUESTIONS) as src:
        rows = [json.loads(line) for line in src][:4]
    records.write_text(jsonl([{**r, "passages": [{"id": "p", "title": "T", "text": "x"}]} for r in rows]))
    out = tmp_path / "model"
    result = runner.invoke(cli, ["train", task, "--model", llm, "--train", str(records), "--holdout", "1",
                                 "--max-steps", "1", "--out", str(out), "-q"], env={"CQ_OFFLINE": "1"})
    assert result.exit_code == 1 and "GGUF" in result.stderr and "Traceback" not in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and not out.exists()
