"""`cq oracle --persona`: simulated users of four kinds (issue 59, item 1), with the rule-based oracle and an LM
oracle (a scripted model), the audit of `cq score --task oracle` per persona, and a persona a plugin adds."""
from __future__ import annotations

import pytest

from cqtools.cli import cli
from cqtools.registry import PERSONAS
from cqtools.stages.personas import UNCOOPERATIVE, names_an_option

from .conftest import jsonl, parse_jsonl
from .fakes import FakeGenerator

NAMES = ("cooperative", "terse", "vague", "uncooperative")


@pytest.fixture(scope="module")
def with_cqs(questions_text) -> list[dict]:
    from click.testing import CliRunner

    expanded = CliRunner().invoke(cli, ["oracle", "--expand", "-q"], input=questions_text)
    result = CliRunner().invoke(cli, ["gen-cq", "--method", "from-dqs", "-q"], input=expanded.stdout)
    assert result.exit_code == 0, result.stderr
    return [r for r in parse_jsonl(result.stdout) if r.get("cq")]


def _oracle(runner, records, *args) -> list[dict]:
    result = runner.invoke(cli, ["oracle", "-q", *args], input=jsonl(records))
    assert result.exit_code == 0, result.stderr
    return parse_jsonl(result.stdout)


def _turn(record):
    from cqtools.stages.oracle import cq_turn

    return cq_turn(record)


def test_help_lists_the_personas(runner):
    result = runner.invoke(cli, ["oracle", "--help"])
    assert result.exit_code == 0
    for name in NAMES:
        assert name in result.stdout
    assert set(NAMES) <= set(PERSONAS.names())


def test_cooperative_is_the_oracle_as_before(runner, with_cqs):
    assert _oracle(runner, with_cqs, "--persona", "cooperative") == _oracle(runner, with_cqs)


def test_each_rule_based_persona_says_it_its_own_way(runner, with_cqs):
    cooperative = {r["id"]: r for r in _oracle(runner, with_cqs)}
    out = {name: _oracle(runner, with_cqs, "--persona", name) for name in NAMES[1:]}
    for name, records in out.items():
        assert all(r["meta"]["oracle"]["persona"] == name for r in records)
        assert all(r["selected_option"] == r["clarification_answer"] for r in records)
    shortened = 0
    for r in out["terse"]:  # the option's name only: two of its words (all of it when no word tells it apart)
        meant = cooperative[r["id"]]["selected_option"]
        said = r["selected_option"]
        assert said == meant or 0 < len(said.split()) <= 2 and set(said.split()) <= set(meant.split())
        shortened += said != meant
    assert shortened >= 10  # 11 of the 45 fixture replies: the others are one or two words already
    for r in out["vague"]:
        assert not names_an_option(_turn(r), r["selected_option"]), r["selected_option"]
    for r in out["uncooperative"]:
        assert r["selected_option"] in UNCOOPERATIVE
    assert {r["selected_option"] for r in out["uncooperative"]} == set(UNCOOPERATIVE)  # both phrases occur
    assert _oracle(runner, with_cqs, "--persona", "uncooperative") == out["uncooperative"]  # deterministic


def test_unknown_persona_is_a_usage_error(runner, with_cqs):
    result = runner.invoke(cli, ["oracle", "--persona", "rude"], input=jsonl(with_cqs[:1]))
    assert result.exit_code == 2 and "rude" in result.stderr and result.stdout == ""


def test_lm_oracle_writes_the_persona_reply_and_a_broken_one_is_replaced(runner, with_cqs, monkeypatch):
    """With an LM oracle the model writes the reply from the persona's instruction; a reply that breaks the persona
    (a vague one naming an option) is replaced by the rule's and meta.oracle.persona_rule says so."""
    import cqtools.models.load as models

    def reply(prompt: str) -> str:
        if "one or two words" in prompt:
            return " Knight"
        choice = prompt.split("Your choice: ", 1)[1].split("\n", 1)[0]
        return " the one in " + choice if "Knight" in choice else " the one I had in mind"

    lms = []
    monkeypatch.setattr(models, "load_generator", lambda *a, **k: lms.append(
        FakeGenerator(reply, lambda p, c: -1.0, name="fake-lm", info={"model": "fake-lm"})) or lms[-1])
    terse = _oracle(runner, with_cqs, "--method", "llm", "--persona", "terse")
    assert {r["selected_option"] for r in terse} == {"Knight"} and any("one or two words" in p for p in lms[-1].prompts)
    vague = _oracle(runner, with_cqs, "--method", "llm", "--persona", "vague")
    replaced = [r for r in vague if r["meta"]["oracle"].get("persona_rule")]
    kept = [r for r in vague if not r["meta"]["oracle"].get("persona_rule")]
    assert replaced and kept
    assert all(r["selected_option"] == "the one I had in mind" for r in kept)
    assert all(not names_an_option(_turn(r), r["selected_option"]) for r in vague)
    unco = _oracle(runner, with_cqs, "--method", "llm", "--persona", "uncooperative")
    assert {r["selected_option"] for r in unco} <= set(UNCOOPERATIVE)


def test_the_audit_per_persona_and_the_spread(runner, with_cqs, tmp_path):
    """`cq score --task oracle` on one run per persona: the share of replies that name the gold interpretation
    (checked against the gold DQs' options), per persona, and the spread across them with an interval."""
    import json

    paths = []
    for name in NAMES:
        path = tmp_path / f"{name}.jsonl"
        path.write_text(jsonl(_oracle(runner, with_cqs, "--persona", name)))
        paths.append(str(path))
    result = runner.invoke(cli, ["score", "--task", "oracle", "--format", "json", *paths])
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    agreement = {run["oracle"].get("persona", "cooperative"): run["agreement"] for run in report["runs"]}
    assert agreement["cooperative"] == agreement["terse"] == 100.0
    assert agreement["vague"] == agreement["uncooperative"] == 0.0
    spread = report["spread"]["metrics"]["agreement"]
    assert spread["range"] == 100.0 and spread["low"] is not None and spread["high"] is not None
    table = runner.invoke(cli, ["score", "--task", "oracle", "--format", "table", *paths]).stdout
    assert "(persona vague)" in table and "spread (max - min)" in table


def test_a_plugin_adds_a_persona(runner, with_cqs):
    from cqtools.stages.personas import Persona

    PERSONAS.register("echo-dq", lambda config=None: Persona("echo-dq", lambda turn, option, reply, key: turn.dq),
                      help="replies with the DQ it meant", options=[])
    try:
        from cqtools.stages import oracle

        records = oracle.build("overlap", persona="echo-dq")([dict(r) for r in with_cqs[:2]])
        assert [r["selected_option"] for r in records] == [_turn(r).dq for r in records]
        assert records[0]["meta"]["oracle"]["persona"] == "echo-dq"
    finally:
        PERSONAS._methods.pop("echo-dq")


def test_clam_scores_per_persona_and_their_spread(runner, with_cqs, tmp_path):
    """A CLAM run per persona (a system that answers with the interpretation the user's reply names, a wrong
    answer when it names none): `cq score --task clam` gives every persona's scores and the spread across them."""
    import json

    from cqtools.score.oracle import intended_option, reply_option

    paths = []
    for name in NAMES:
        records = _oracle(runner, with_cqs, "--persona", name)
        for r in records:
            options, _, _ = intended_option(r)
            picked, _ = reply_option(r["selected_option"], options)
            answers = r["gold"]["answers"]
            r["answers"] = [{"text": answers[picked][0] if picked is not None and picked < len(answers) else "?"}]
        path = tmp_path / f"{name}.jsonl"
        path.write_text(jsonl(records))
        paths.append(str(path))
    result = runner.invoke(cli, ["score", "--task", "clam", "--format", "json", *paths])
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    accuracy = {run["oracle"].get("persona", "cooperative"): run["ambiguous"]["accuracy"] for run in report["runs"]}
    assert accuracy["cooperative"] == accuracy["terse"] > 50 and accuracy["vague"] == accuracy["uncooperative"] < 10
    spread = report["spread"]["metrics"]["ambiguous.accuracy"]
    assert spread["range"] == accuracy["cooperative"] - accuracy["vague"]
    assert spread["low"] <= spread["range"] <= spread["high"]
