"""Issue 45: dev evaluation with best-checkpoint selection for `cq train gen-cq | spanseqgen | qd | fid`. With --dev
the weights are scored every --eval-every steps as the stage reads them and the best kept (cq_train.json names
its step); a later, worse evaluation is not the one kept; a resumed run keeps the best found before it stopped;
evaluating does not change the training. The dev metric is scripted here (the real scorer runs on the saved
weights, then its score is replaced by the test's), so which step is best is known. Tiny random models, CPU."""
import json
import os
import shutil

import pytest

from cqtools.cli import cli

from .test_train_paper_models import tiny_bart, with_passages  # noqa: F401  (fixtures)
from .test_train_resume import QUESTIONS, Killed, assert_equal_weights, reader_case, report  # noqa: F401

# the trainer, where its dev scorer is looked up at training time, its metric, its run (6 steps, eval every 2)
CASES = {
    "spanseqgen": ("cqtools.train.spanseqgen.dev_scores", "f1_ans",
                   ["--max-input-tokens", "256", "--max-answer-tokens", "8", "--num-beams", "1"]),
    "qd": ("cqtools.train.qd.dev_edit_f1", "edit_f1",
           ["--max-input-tokens", "256", "--max-question-tokens", "8", "--num-beams", "1"]),
    "fid": ("cqtools.train.fid.dev_scores", "f1_ans", ["--passages", "2", "--max-answer-tokens", "8", "--num-beams",
                                                       "1"]),
    "gen-cq": ("cqtools.train.cq_generator.dev_cq_scores", "cq_bleu", []),
}
SCRIPT = [0.3, 0.8, 0.1]  # the dev scores of the 1st, 2nd and 3rd evaluation of a run: the 2nd (step 4) is best


def _args(kind: str, model: str, records: str, out: str) -> list[str]:
    return ["train", kind, "--model", model, "--train", records, "--dev", records, "--dev-limit", "2", "--batch-size",
            "3", "--max-steps", "6", "--eval-every", "2", "--seed", "5", "--lr", "1e-3", "--out", out, "-q",
            *CASES[kind][2]]


def scripted(monkeypatch, kind: str, copies: str) -> list:
    """Replace ``kind``'s dev scorer by one that runs the real one on the saved weights, keeps a copy of them
    (``copies``/eval-N) and reports :data:`SCRIPT`'s next score as the metric; returns the scores given."""
    import importlib

    for other, _, _ in CASES.values():  # each imported before any is patched (fid's imports spanseqgen's scorer)
        importlib.import_module(other.rsplit(".", 1)[0])
    where, metric, _ = CASES[kind]
    module_name, name = where.rsplit(".", 1)
    module = importlib.import_module(module_name)
    real, given = getattr(module, name), []
    real = getattr(real, "real", real)  # a scorer scripted earlier in the same test: the real one under it

    def score(cfg, *rest):
        scores = real(cfg, *rest)
        shutil.copy(os.path.join(cfg.out, "model.safetensors"), os.path.join(copies, f"eval-{len(given) + 1}"))
        given.append(SCRIPT[len(given)])
        return {**scores, metric: given[-1]}

    score.real = real
    monkeypatch.setattr(module, name, score)
    os.makedirs(copies, exist_ok=True)
    return given


def _same_file_weights(a: str, b: str) -> bool:
    import torch
    from safetensors.torch import load_file

    first, second = load_file(a), load_file(b)
    return first.keys() == second.keys() and all(torch.equal(first[k], second[k]) for k in first)


@pytest.mark.parametrize("kind", list(CASES))
def test_the_best_dev_checkpoint_is_kept_not_a_later_worse_one(runner, tmp_path, monkeypatch, kind, request):
    """Evaluations at steps 2, 4, 6 scoring 0.3, 0.8, 0.1: the weights saved are step 4's (not the last step's),
    and cq_train.json names step 4, its score and the metric; the report's dev is step 4's scores."""
    model = request.getfixturevalue("tiny_seq2seq" if kind == "gen-cq" else "tiny_bart")
    records = QUESTIONS if kind == "gen-cq" else request.getfixturevalue("with_passages")
    out, copies = str(tmp_path / "out"), str(tmp_path / "copies")
    given = scripted(monkeypatch, kind, copies)
    done = runner.invoke(cli, _args(kind, model, records, out))
    assert done.exit_code == 0, done.stderr
    metric = CASES[kind][1]
    saved = report(out)
    assert given == SCRIPT and [h["step"] for h in saved["history"]] == [2, 4, 6]
    assert saved["selected_on"] == metric and saved["best"]["step"] == 4 and saved["best"][metric] == 0.8
    assert saved["dev"][metric] == 0.8 and saved["steps"] == 6
    kept = os.path.join(out, "model.safetensors")
    assert _same_file_weights(kept, os.path.join(copies, "eval-2"))
    assert not _same_file_weights(kept, os.path.join(copies, "eval-3"))


def test_gen_cq_stops_after_patience_evaluations_without_a_better_one(runner, tmp_path, monkeypatch, tiny_seq2seq):
    """Issue 48: AskCQ's CQ generator trains until 10 dev evaluations bring no better BLEU (--wait_step 10,
    run_cq_training.sh); `cq train gen-cq --patience N` stops so (the askcq layout's default: 10). Evaluations at
    steps 2, 4, 6 score 0.3, 0.8, 0.1: with --patience 1 the run ends at step 6 of 8, keeping step 4's weights."""
    out = str(tmp_path / "out")
    given = scripted(monkeypatch, "gen-cq", str(tmp_path / "copies"))
    args = _args("gen-cq", tiny_seq2seq, QUESTIONS, out)
    args[args.index("--max-steps") + 1] = "8"
    done = runner.invoke(cli, [*args, "--patience", "1"])
    assert done.exit_code == 0, done.stderr
    saved = report(out)
    assert given == SCRIPT and saved["steps"] == 6 and saved["stopped"] == "early stop"
    assert saved["best"]["step"] == 4 and saved["config"]["patience"] == 1


def test_evaluating_on_dev_does_not_change_the_training(runner, tmp_path, tiny_bart, with_passages):  # noqa: F811
    """One evaluation, at the last step (--eval-every beyond the budget): the weights kept equal a run without
    --dev, tensor for tensor (scoring the saved weights leaves the RNGs and the model as they were)."""
    plain, scored = str(tmp_path / "plain"), str(tmp_path / "scored")
    args = _args("spanseqgen", tiny_bart, with_passages, plain)
    no_dev = [a for i, a in enumerate(args) if a != "--dev" and (i == 0 or args[i - 1] != "--dev")]
    assert runner.invoke(cli, no_dev).exit_code == 0
    assert "best" not in report(plain) and "history" not in report(plain)
    done = runner.invoke(cli, [*_args("spanseqgen", tiny_bart, with_passages, scored), "--eval-every", "100"])
    assert done.exit_code == 0, done.stderr
    assert [h["step"] for h in report(scored)["history"]] == [6]
    assert_equal_weights(plain, scored)


def test_a_resumed_run_keeps_the_best_found_before_it_stopped(runner, tmp_path, monkeypatch, tiny_bart,  # noqa: F811
                                                              with_passages):
    """Killed before step 6 (checkpoints at 2 and 4, after evaluations scoring 0.3 and 0.8), resumed: its one
    evaluation (step 6) scores 0.3, below step 4's, so step 4's weights are kept and the history holds all three,
    as in the run never stopped."""
    from cqtools.train import loop

    whole, parted = str(tmp_path / "whole"), str(tmp_path / "parted")
    scripted(monkeypatch, "spanseqgen", str(tmp_path / "c1"))
    assert runner.invoke(cli, _args("spanseqgen", tiny_bart, with_passages, whole)).exit_code == 0
    why = loop.Budget.why

    def killed_before_the_last_step(budget, step):
        if step == 5:
            raise Killed("killed before step 6")
        return why(budget, step)

    scripted(monkeypatch, "spanseqgen", str(tmp_path / "c2"))
    monkeypatch.setattr(loop.Budget, "why", killed_before_the_last_step)
    first = runner.invoke(cli, [*_args("spanseqgen", tiny_bart, with_passages, parted), "--save-every", "2"])
    assert isinstance(first.exception, Killed)
    monkeypatch.setattr(loop.Budget, "why", why)
    scripted(monkeypatch, "spanseqgen", str(tmp_path / "c3"))  # a new process: its first evaluation scores 0.3
    again = runner.invoke(cli, [*_args("spanseqgen", tiny_bart, with_passages, parted), "--save-every", "2",
                                "--resume"])
    assert again.exit_code == 0, again.stderr
    resumed = report(parted)
    assert resumed["best"]["step"] == 4 and [h["step"] for h in resumed["history"]] == [2, 4, 6]
    assert [h["f1_ans"] for h in resumed["history"]] == [0.3, 0.8, 0.3]
    assert resumed["best"] == report(whole)["best"]
    assert_equal_weights(whole, parted)
    with open(os.path.join(parted, "cq_train.json")) as fh:
        assert json.load(fh)["dev"]["f1_ans"] == 0.8


def test_reader_keep_best_keeps_the_best_validation_not_the_last(runner, tmp_path, monkeypatch, reader_case):
    """`cq train reader --keep best`: validations at steps 2, 4, 6 scoring EM 30, 80, 10 keep step 4's weights
    (captured from the model as it was scored) and name step 4 in cq_train.json; --keep last (the default) keeps
    the last step's."""
    import torch
    from safetensors.torch import load_file

    from cqtools.train import span_reader

    model, records = reader_case
    real, seen = span_reader.validation_scores, []

    def scripted_em(reader, dev, n_passages):
        scores = real(reader, dev, n_passages)
        seen.append({k: v.detach().clone() for k, v in reader.model.state_dict().items()})
        return {**scores, "em": [30.0, 80.0, 10.0, 5.0][len(seen) - 1]}

    monkeypatch.setattr(span_reader, "validation_scores", scripted_em)
    args = ["train", "reader", "--model", model, "--train", records, "--holdout", "5", "--batch-size", "4",
            "--max-steps", "6", "--eval-every", "2", "--seed", "5", "-q"]
    best = str(tmp_path / "best")
    done = runner.invoke(cli, [*args, "--keep", "best", "--out", best])
    assert done.exit_code == 0, done.stderr
    saved = report(best)
    assert [h["step"] for h in saved["history"]] == [2, 4, 6] and saved["best"]["step"] == 4
    assert saved["validation"]["em"] == 80.0
    kept = load_file(os.path.join(best, "model.safetensors"))
    assert all(torch.equal(kept[k], seen[1][k]) for k in kept)
    assert not all(torch.equal(kept[k], seen[2][k]) for k in kept)
    seen.clear()
    last = str(tmp_path / "last")
    assert runner.invoke(cli, [*args, "--out", last]).exit_code == 0
    assert "best" not in report(last) and [h["step"] for h in report(last)["history"]] == [2, 4]
    kept = load_file(os.path.join(last, "model.safetensors"))
    assert all(torch.equal(kept[k], seen[-1][k]) for k in kept)  # the final validation: the last step's weights


def test_resuming_with_other_dev_evaluations_is_a_one_line_error(runner, tmp_path, tiny_bart,  # noqa: F811
                                                                  with_passages):
    """A checkpoint carries its run's best-so-far: continuing it with another --eval-every or without --dev is
    refused in one line (the best would be of other evaluations), not a traceback."""
    out = str(tmp_path / "m")
    args = _args("spanseqgen", tiny_bart, with_passages, out)
    assert runner.invoke(cli, [*args, "--save-every", "2", "--max-steps", "2"]).exit_code == 0
    step2 = os.path.join(out, "checkpoints", "step-2")
    other = _args("spanseqgen", tiny_bart, with_passages, str(tmp_path / "o"))
    at = other.index("--dev")
    for changed in ([*other, "--eval-every", "3"], other[:at] + other[at + 2:]):
        done = runner.invoke(cli, [*changed, "--max-steps", "2", "--resume-from", step2])
        assert done.exit_code == 1 and "other settings" in done.stderr and "Traceback" not in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
