"""`cq oracle`: evaluation records (--expand) and the simulated user (overlap, llm with a fake model)."""
from __future__ import annotations

import copy

import pytest

from cqtools.cli import cli

from .conftest import jsonl, parse_jsonl
from .fakes import FakeGenerator


@pytest.fixture(scope="module")
def expanded(questions_text) -> list[dict]:
    from click.testing import CliRunner

    result = CliRunner().invoke(cli, ["oracle", "--expand", "-q"], input=questions_text)
    assert result.exit_code == 0, result.stderr
    return parse_jsonl(result.stdout)


@pytest.fixture(scope="module")
def with_cqs(expanded) -> list[dict]:
    """Expanded records with silver CQs from the gold DQs (cq gen-cq --method from-dqs)."""
    from click.testing import CliRunner

    result = CliRunner().invoke(cli, ["gen-cq", "--method", "from-dqs", "-q"], input=jsonl(expanded))
    assert result.exit_code == 0, result.stderr
    return parse_jsonl(result.stdout)


def test_expand_one_record_per_gold_dq(questions, expanded):
    by_id = {r["id"]: r for r in expanded}
    expected = 0
    for q in questions:
        gold = q["gold"]
        if gold["ambiguous"] and gold["dqs"]:
            for i in range(len(gold["dqs"])):
                record = by_id[f"{q['id']}#{i}"]
                assert record["gold"]["intended"] == i
                assert record["gold"]["answers"] == gold["answers"]
                assert record["question"] == q["question"]
                expected += 1
        else:
            assert by_id[q["id"]] == q  # kept as it is
            expected += 1
    assert len(expanded) == expected > len(questions)


def test_expand_needs_gold(runner):
    result = runner.invoke(cli, ["oracle", "--expand"], input=jsonl([{"id": "z", "question": "Who?"}]))
    assert result.exit_code == 1 and result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1
    assert "line 1" in result.stderr and "no 'gold'" in result.stderr and "cq convert" in result.stderr


def test_overlap_picks_the_intended_option(runner, with_cqs):
    result = runner.invoke(cli, ["oracle", "-q"], input=jsonl(with_cqs))
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
    out = parse_jsonl(result.stdout)
    asked = [r for r in out if r.get("cq")]
    assert asked
    for record in asked:
        intended = record["gold"].get("intended", 0)
        assert record["selected_option"] == record["cq"]["options"][intended], record["id"]
        assert record["clarification_answer"] == record["selected_option"]
        assert record["meta"]["oracle"] == {"method": "overlap", "free_form": False}


def test_records_without_a_cq_pass_through_unchanged(runner, with_cqs):
    plain = [r for r in with_cqs if r.get("cq") is None]
    no_key = [{k: v for k, v in r.items() if k != "cq"} for r in plain]
    assert plain
    text = jsonl(plain + no_key)
    result = runner.invoke(cli, ["oracle", "-q"], input=text)
    assert result.exit_code == 0, result.stderr
    assert parse_jsonl(result.stdout) == parse_jsonl(text)


def _isolated(record: dict) -> dict:
    """What the user may see: the question, the CQ and the intended gold DQ; nothing else."""
    gold = record["gold"]
    keep = {"dqs": [{"question": d["question"]} for d in gold.get("dqs") or []]}
    if "intended" in gold:
        keep["intended"] = gold["intended"]
    return {"id": record["id"], "question": record["question"], "cq": record["cq"], "gold": keep}


def _tampered(record: dict) -> dict:
    """Everything else changed: answers swapped, ambiguity flipped, passages and predictions added."""
    r = copy.deepcopy(record)
    gold = r["gold"]
    gold["answers"] = list(reversed(gold.get("answers") or []))
    gold["ambiguous"] = not gold.get("ambiguous")
    gold["cq"] = "Which thing: wrong, options?"
    gold.pop("annotations", None)
    r["passages"] = [{"id": "p", "title": "Decoy", "text": "Decoy passage naming every option."}]
    r["answers"] = [{"text": "decoy"}]
    return r


def meaning_lm() -> FakeGenerator:
    """Its outputs depend on the prompt only (equal prompts, equal replies): it replies with the last
    word of the "What you meant:" line and scores an option high when that line contains it."""
    def meant(p: str) -> str:
        return p.split("What you meant: ", 1)[1].split("\n", 1)[0]

    return FakeGenerator(lambda p: " the one in " + meant(p).split()[-1],
                         lambda p, c: -1.0 if c.strip().lower() in meant(p).lower() else -5.0 - len(c),
                         name="fake-lm", info={"model": "fake-lm"})


@pytest.mark.parametrize("method", ["overlap", "llm"])
def test_oracle_reads_only_the_gold_dq_and_the_cq(runner, with_cqs, monkeypatch, method):
    from cqtools.models import load as loader

    lms = []

    def load_generator(name, device="auto", dtype="auto", kind="auto", config=None):
        lms.append(meaning_lm())
        return lms[-1]

    monkeypatch.setattr(loader, "load_generator", load_generator)
    asked = [r for r in with_cqs if r.get("cq")]
    free = copy.deepcopy(asked[0])
    free["id"] = "free-form"
    free["cq"] = {"text": "What do you mean?", "category": "invalid form", "options": ["invalid form"],
                  "method": "llm-zero-shot", "valid": False}
    asked.append(free)
    outputs = []
    for variant in (asked, [_isolated(r) for r in asked], [_tampered(r) for r in asked]):
        result = runner.invoke(cli, ["oracle", "--method", method, "-q"], input=jsonl(variant))
        assert result.exit_code == 0, result.stderr
        outputs.append([(r["id"], r["selected_option"], r["clarification_answer"])
                        for r in parse_jsonl(result.stdout)])
    assert outputs[0] == outputs[1] == outputs[2]
    if method == "llm":
        seen = [(lm.prompts, lm.scored) for lm in lms]
        assert seen[0][0] or seen[0][1]
        assert seen[0] == seen[1] == seen[2]  # the model saw exactly the same text
    # a free-form CQ: the reply stands in as the selected option
    (_, selected, reply), = [o for o in outputs[0] if o[0] == "free-form"]
    assert reply and selected == reply
    if method == "overlap":
        assert reply == "The Dark Knight (2008)"  # what the intended DQ adds to the question


def test_llm_oracle_with_fake_model_picks_the_meant_option(runner, with_cqs, monkeypatch):
    from cqtools.models import load as loader

    monkeypatch.setattr(loader, "load_generator", lambda *a, **k: meaning_lm())
    asked = [r for r in with_cqs if r.get("cq")]
    result = runner.invoke(cli, ["oracle", "--method", "llm", "-q"], input=jsonl(asked))
    assert result.exit_code == 0, result.stderr
    out = parse_jsonl(result.stdout)
    right = sum(r["selected_option"] == r["cq"]["options"][r["gold"].get("intended", 0)] for r in out)
    assert right / len(out) > 0.8
    assert out[0]["meta"]["oracle"]["model"] == "fake-lm"


def test_cq_without_gold_is_a_clear_error(runner):
    record = {"id": "q9", "question": "Who?", "cq": {"text": "Which one: A or B?", "options": ["A", "B"]}}
    result = runner.invoke(cli, ["oracle"], input=jsonl([record]))
    assert result.exit_code == 1 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "q9" in lines[0] and "no 'gold'" in lines[0]


def test_unambiguous_question_with_a_cq(runner):
    """No gold DQ: the user means the question as asked; the option closest to it is chosen."""
    record = {"id": "u", "question": "Who wrote The Lord of the Rings novel?", "gold": {"dqs": []},
              "cq": {"text": "Which one: the film or the novel?", "options": ["the film", "the novel"]}}
    result = runner.invoke(cli, ["oracle", "-q"], input=jsonl([record]))
    assert result.exit_code == 0, result.stderr
    assert parse_jsonl(result.stdout)[0]["selected_option"] == "the novel"
