"""`cq score --task judge` (issue 59, item 3): an LM judge with a metric card, and its agreement with the human
judgements of `cq view --study clam-turns` (Spearman's rho, Cohen's kappa, bootstrap intervals). A scripted judge
that agrees with the people gets rho = kappa = 1; one that is wrong on some items gets less."""
from __future__ import annotations

import json
import re

import pytest

from cqtools.cli import cli

from .conftest import jsonl
from .fakes import FakeGenerator
from .test_openai_backend import llama_server  # noqa: F401 (the llama.cpp server fixture, skipped without it)

N = 12


def _dialogues() -> list[dict]:
    out = []
    for i in range(N):
        right = i % 3 != 0
        out.append({"id": f"d{i}", "question": f"Who won race {i}?", "cq": {"text": "Which year?"} if i % 2 else None,
                    "clarification_answer": "1999" if i % 2 else None,
                    "answers": [{"text": f"Runner {i}" if right else "Nobody"}],
                    "gold": {"ambiguous": bool(i % 2), "answers": [[f"Runner {i}"]], "dqs": []}})
    return out


def _people(path, dialogues) -> str:
    """Two annotators: the answer is right when it is the gold one; asking was right on the ambiguous questions;
    the reply was right whenever there was one (the second annotator disagrees on d1's reply)."""
    lines = []
    for who in ("ann", "bob"):
        for d in dialogues:
            right = d["answers"][0]["text"] == d["gold"]["answers"][0][0]
            lines.append({"id": f"{d['id']}@{who}", "item": d["id"], "question": d["question"], "annotator": who,
                          "study": "clam-turns", "judgements": {"cq_right": d["gold"]["ambiguous"] == bool(d["cq"]),
                                                                "user_right": bool(d["cq"]) and not (who == "bob" and d["id"] == "d1"),
                                                                "answer_right": right}})
    path.write_text(jsonl(lines))
    return str(path)


def _field(prompt: str, name: str) -> str:
    return re.search(rf"{name}: (.*)", prompt).group(1)


def scripted_judge(wrong: set[str] = frozenset()):
    """Judges as the people do; on the questions of ``wrong`` (their numbers) it says the opposite of the answer."""
    def reply(prompt: str) -> str:
        number = re.search(r"race (\d+)", prompt).group(1)
        if "final answer right" in prompt:
            yes = _field(prompt, "Final answer") == _field(prompt, "Correct answers")
            yes = yes != (number in wrong)
        elif "user's reply" in prompt:
            yes = _field(prompt, "User's reply") != "(none)"
        else:
            yes = (_field(prompt, "Clarifying question asked") != "(none)") == (int(number) % 2 == 1)
        return " Yes." if yes else " no"
    return FakeGenerator(reply, name="scripted-judge", info={"model": "scripted-judge"})


def _judge(runner, monkeypatch, judge, *args) -> dict:
    import cqtools.models.load as models

    monkeypatch.setattr(models, "load_generator", lambda *a, **k: judge)
    result = runner.invoke(cli, ["score", "--task", "judge", "--format", "json", *args], input=jsonl(_dialogues()))
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_the_metric_card(runner, monkeypatch):
    judge = scripted_judge()
    summary = _judge(runner, monkeypatch, judge)
    card = summary["card"]
    assert card["model"] == "scripted-judge" and card["temperature"] == 0 and card["runs"] == 3
    assert card["prompt"]["name"] and len(card["prompt"]["sha256"]) == 64
    assert card["spread"]["answer_right"] == {"per_run": [pytest.approx(66.6667, abs=1e-3)] * 3, "range": 0.0}
    assert len(judge.prompts) == 3 * 3 * N  # three turn questions, three runs
    assert all(entry.get("temperature") in (None, 0, 0.0) for entry in judge.log)  # greedy
    assert round(summary["answer_right_yes"], 2) == 66.67 and summary["judge_runs"] == 3
    assert any("not how good a system is" in note for note in summary["notes"])


def test_agreement_falls_when_the_judge_is_wrong(runner, monkeypatch, tmp_path):
    people = _people(tmp_path / "judgements.jsonl", _dialogues())
    right = _judge(runner, monkeypatch, scripted_judge(), "--against", people)["agreement"]
    wrong = _judge(runner, monkeypatch, scripted_judge({"0", "1", "2", "4"}), "--against", people)["agreement"]
    assert right["items_shared"] == N
    assert right["answer_right"]["spearman_rho"] == pytest.approx(1.0)
    assert right["answer_right"]["cohen_kappa"] == pytest.approx(1.0)
    assert wrong["answer_right"]["cohen_kappa"] < 0.5 and wrong["answer_right"]["spearman_rho"] < 0.5
    low, high = wrong["answer_right"]["cohen_kappa_95"]
    assert low <= wrong["answer_right"]["cohen_kappa"] <= high < 1.0
    assert right["user_right"]["spearman_rho"] > 0.9  # the people's split on d1 (a share of 0.5) is ranked too


def test_runs_that_differ_show_a_spread(runner, monkeypatch):
    calls = {"n": 0}
    steady = scripted_judge()

    def drifting(prompt: str) -> str:
        calls["n"] += 1
        return " yes" if calls["n"] > 3 * N * 2 and "final answer" in prompt else steady.reply_to(prompt)

    card = _judge(runner, monkeypatch, FakeGenerator(drifting, info={"model": "drifting"}))["card"]
    assert card["spread"]["answer_right"]["range"] == pytest.approx(100 - 66.6667, abs=1e-3)


def test_a_bad_judgements_file_is_one_line(runner, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"study": "pairwise", "item": "d1"}\n')
    result = runner.invoke(cli, ["score", "--task", "judge", "--against", str(bad)], input=jsonl(_dialogues()))
    assert result.exit_code == 1 and len(result.stderr.strip().splitlines()) == 1
    assert "line 1" in result.stderr and "clam-turns" in result.stderr


def test_a_judge_served_over_the_openai_api(runner, server, tmp_path, monkeypatch):
    """The judge through the OpenAI-compatible backend (tests/openai_server.py answers "yes" to everything): every
    run's prompts reach the server, the card names the served model, and a judge that always says yes agrees with
    people no better than chance (kappa 0) and has no rank correlation (rho undefined: a constant)."""
    server.control(reset=True, reply=" yes")
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    monkeypatch.setenv("CQ_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("CQ_API_CACHE", "0")
    people = _people(tmp_path / "judgements.jsonl", _dialogues())
    result = runner.invoke(cli, ["score", "--task", "judge", "--judge-model", "openai:fake", "--against", people,
                                 "--format", "json"], input=jsonl(_dialogues()))
    assert result.exit_code == 0, result.stderr
    summary = json.loads(result.stdout)
    assert "fake" in summary["card"]["model"] and summary["answer_right_yes"] == 100.0
    assert len(server.requests()) == 3 * 3 * N
    agreement = summary["agreement"]["answer_right"]
    assert agreement["items"] == N and agreement["cohen_kappa"] == 0.0 and agreement["spearman_rho"] is None
    assert agreement["rho_undefined"] == "the judge gave every item the same verdict"
    assert any(n.startswith("answer_right: no Spearman's rho, the judge gave every item the same verdict")
               for n in summary["notes"])


# --- slow: a served judge (llama-cpp-python's server with the offline SmolLM2 GGUF) --------------------------

@pytest.mark.slow
def test_a_served_judge_gives_rho_and_kappa(runner, tmp_path, llama_server, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", llama_server)
    people = _people(tmp_path / "judgements.jsonl", _dialogues())
    result = runner.invoke(cli, ["score", "--task", "judge", "--judge-model", "openai:smollm2", "--against", people,
                                 "--format", "json"], input=jsonl(_dialogues()))
    assert result.exit_code == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["card"]["runs"] == 3 and summary["agreement"]["items_shared"] == N
    for key in ("cq_right", "user_right", "answer_right"):
        assert set(summary["agreement"][key]) >= {"spearman_rho", "cohen_kappa", "spearman_rho_95", "cohen_kappa_95"}
    print(f"\nllama.cpp judge (SmolLM2-135M, says nothing about quality): {summary['agreement']}")
