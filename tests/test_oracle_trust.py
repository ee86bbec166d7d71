"""Issue 46 item 5: can the simulated user be trusted? `cq score --task oracle` (agreement with the option of
the intended gold DQ) and the spread of a score across runs answered by different oracles."""
from __future__ import annotations

import copy
import math

import orjson
import pytest

from cqtools.cli import cli

from .conftest import jsonl, parse_jsonl

JOKER = {"question": "Who played the joker in batman?",
         "dqs": [{"question": "Who played the joker in the 1989 film batman?"},
                 {"question": "Who played the joker in the 2008 film batman?"}],
         "answers": [["Jack Nicholson"], ["Heath Ledger"]]}
ROME = {"question": "When did rome fall?",
        "dqs": [{"question": "When did the western roman empire fall?"},
                {"question": "When did the eastern roman empire fall?"},
                {"question": "When did the roman republic fall?"}],
        "answers": [["476"], ["1453"], ["27 BC"]]}
ROME_OPTIONS = ["western roman empire", "eastern roman empire", "roman republic"]  # as from-dqs builds them


def turn(base: dict, intended: int, options: list[str], selected: str | None, rid: str | None = None,
         answer: str | None = None) -> dict:
    """A hand-written record of `cq oracle --expand | cq gen-cq | cq oracle` (and `cq answer`)."""
    record = {"id": rid or f"{base['question'][:8]}#{intended}", "question": base["question"],
              "gold": {"ambiguous": True, "dqs": copy.deepcopy(base["dqs"]), "answers": base["answers"],
                       "intended": intended},
              "cq": {"text": "Which one: " + ", or ".join(options) + "?", "options": options}}
    if selected is not None:
        record["selected_option"] = record["clarification_answer"] = selected
    if answer is not None:
        record["answers"] = [{"text": answer}]
    return record


def score(runner, args, records) -> dict:
    result = runner.invoke(cli, ["score", "--task", "oracle", "--format", "json", *args], input=jsonl(records))
    assert result.exit_code == 0, result.stderr
    return orjson.loads(result.stdout)


def test_agreement_is_the_share_picking_the_intended_dqs_option(runner):
    records = [
        turn(JOKER, 0, ["1989", "2008"], "1989", "j#0"),                      # right
        turn(JOKER, 1, ["1989", "2008"], "1989", "j#1"),                      # wrong: meant the 2008 film
        turn(ROME, 1, ROME_OPTIONS, "Eastern Roman Empire.", "r#1"),  # right (normalised)
        turn(ROME, 2, ROME_OPTIONS, None, "r#2"),  # no reply: scores 0
        turn(ROME, 0, ROME_OPTIONS[1:], "eastern roman empire", "r#0"),  # skipped: its option is not offered
        {**turn(JOKER, 0, ["1989", "2008"], "1989", "u"), "gold": {"ambiguous": False, "dqs": [],
                                                                   "answers": [["x"]]}},  # skipped: unambiguous
        {**turn(JOKER, 0, ["1989"], "1989", "f#0"), "cq": None},               # skipped: no CQ asked
    ]
    summary = score(runner, [], records)
    assert (summary["n"], summary["missing"], summary["skipped"]) == (4, 1, 3)
    assert summary["agreement"] == 50.0
    assert summary["chance"] == pytest.approx(100 * (1 / 2 + 1 / 2 + 1 / 3 + 1 / 3) / 4, abs=1e-3)
    z, p, n = 1.959963984540054, 0.5, 4  # Wilson's interval of 2 of 4, by hand
    centre, half = (p + z * z / (2 * n)) / (1 + z * z / n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (
        1 + z * z / n)
    assert summary["wilson_95"] == pytest.approx([100 * (centre - half), 100 * (centre + half)], abs=1e-3)
    assert summary["metric"]["name"] == "cq.oracle"
    notes = " ".join(summary["notes"])
    assert "not offered" not in notes and "no option of the CQ is the one built from the intended gold DQ" in notes


def test_agreement_ci_resamples_questions_not_records(runner):
    """The records expanded from one question are one resampling unit: a question whose records all agree or
    all disagree keeps the interval's ends at 0/100 only when every drawn question does."""
    records = [turn(JOKER, i, ["1989", "2008"], ["1989", "2008"][i], f"j#{i}") for i in (0, 1)]
    records += [turn(ROME, i, ROME_OPTIONS, "roman republic", f"r#{i}") for i in (0, 1)]
    summary = score(runner, ["--ci", "--n-boot", "200"], records)
    low, high = summary["ci"]["intervals"]["agreement"]
    assert summary["agreement"] == 50.0
    assert (low, high) == (0.0, 100.0)  # two units: a resample draws j twice (100), r twice (0) or both (50)


def test_overlap_oracle_agrees_and_a_first_option_user_is_at_chance(runner, questions_text):
    steps = (["oracle", "--expand", "-q"], ["gen-cq", "--method", "from-dqs", "-q"], ["oracle", "-q"])
    text = questions_text
    for args in steps:
        result = runner.invoke(cli, args, input=text)
        assert result.exit_code == 0, result.stderr
        text = result.stdout
    records = parse_jsonl(text)
    overlap = score(runner, [], records)
    assert overlap["n"] > 10 and overlap["agreement"] == 100.0
    first = copy.deepcopy(records)
    for record in first:
        if record.get("cq") and record["cq"].get("options"):
            record["selected_option"] = record["cq"]["options"][0]
    # each question's expanded records mean each option once: picking the first is right once per question
    assert score(runner, [], first)["agreement"] == pytest.approx(score(runner, [], first)["chance"])


def test_bad_intended_is_a_one_line_error(runner):
    record = turn(JOKER, 0, ["1989", "2008"], "1989", "j#0")
    record["gold"]["intended"] = 5
    result = runner.invoke(cli, ["score", "--task", "oracle"], input=jsonl([turn(ROME, 0, ["a", "b"], "a"), record]))
    assert result.exit_code != 0 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "line 2" in lines[0] and "j#0" in lines[0] and "cq oracle --expand" in lines[0]


def clam_run(replies: dict) -> list[dict]:
    """One dialogue (the same questions and CQs) answered after the oracle's reply: right when the
    oracle picked the intended option, else the other interpretation's answer."""
    out = []
    for i, base, options in ((0, JOKER, ["1989", "2008"]), (1, JOKER, ["1989", "2008"]),
                             (0, ROME, ROME_OPTIONS), (2, ROME, ROME_OPTIONS)):
        rid = f"{base['question'][:4]}#{i}"
        picked = replies.get(rid, i)
        out.append(turn(base, i, options, options[picked], rid, answer=base["answers"][picked][0]))
    return out


def test_spread_of_clam_accuracy_across_oracles(runner, tmp_path):
    runs = {"a": clam_run({}), "b": clam_run({"Who #1": 0}), "c": clam_run({"Who #1": 0, "When#0": 1})}
    paths = []
    for name, records in runs.items():
        path = tmp_path / f"{name}.jsonl"
        path.write_text(jsonl(records))
        paths.append(str(path))
    result = runner.invoke(cli, ["score", "--task", "clam", "--format", "json", "--n-boot", "200", *paths])
    assert result.exit_code == 0, result.stderr
    spread = orjson.loads(result.stdout)["spread"]
    assert spread["n"] == 2 and spread["runs"] == paths  # two questions (units), paired
    accuracy = spread["metrics"]["all.accuracy"]
    assert accuracy["values"] == [100.0, 75.0, 50.0]
    assert (accuracy["min"], accuracy["max"], accuracy["range"]) == (50.0, 100.0, 50.0)
    assert 0.0 <= accuracy["low"] <= accuracy["range"] <= accuracy["high"] <= 100.0
    assert spread["metrics"]["all.clarification_rate"]["range"] == 0.0
    table = runner.invoke(cli, ["score", "--task", "clam", "--format", "md", "--n-boot", "200", *paths])
    assert table.exit_code == 0, table.stderr
    assert "| spread (max - min) |" in table.stdout and "50.00 [" in table.stdout


def test_spread_with_intersect_names_what_it_left_out(runner, tmp_path):
    full = clam_run({})
    paths = []
    for name, records in (("a", full), ("b", full[:2]), ("c", full[:3])):
        path = tmp_path / f"{name}.jsonl"
        path.write_text(jsonl(records))
        paths.append(str(path))
    result = runner.invoke(cli, ["score", "--task", "clam", "--format", "json", "--n-boot", "50", "--intersect",
                                 *paths])
    assert result.exit_code == 0, result.stderr
    spread = orjson.loads(result.stdout)["spread"]
    assert spread["n"] == 1
    assert any("left out" in note for note in spread["notes"])


def test_summaries_name_the_oracle_that_replied(runner):
    """What to report with a CLAM number: the oracle (meta.oracle, free_form left out) is in the summary."""
    llm = {"method": "llm", "model": "fake-lm", "template": "terse.txt", "template_digest": "abc",
           "max_new_tokens": 16}
    records = clam_run({})
    for record in records:
        record["meta"] = {"oracle": {**llm, "free_form": False}, "answer": {"mode": "cq"}}
    clam = runner.invoke(cli, ["score", "--task", "clam", "--format", "json"], input=jsonl(records))
    assert clam.exit_code == 0, clam.stderr
    assert orjson.loads(clam.stdout)["oracle"] == llm
    table = runner.invoke(cli, ["score", "--task", "clam", "--format", "csv"], input=jsonl(records))
    assert "oracle" not in table.stdout  # an identity, not a metric row
    assert score(runner, [], records)["oracle"] == llm
    records[0]["meta"]["oracle"]["model"] = "other-lm"  # two oracles in one file: both are named
    assert score(runner, [], records)["oracle"] == [{**llm, "model": "other-lm"}, llm]
    plain = runner.invoke(cli, ["score", "--task", "clam", "--format", "json"], input=jsonl(clam_run({})))
    assert "oracle" not in orjson.loads(plain.stdout)  # no oracle answered: nothing claimed


def test_a_written_reply_is_read_as_the_option_it_overlaps(runner):
    """CLAM's oracle writes replies instead of picking: each is read as the option it shares most tokens with."""
    records = [turn(JOKER, 1, ["1989", "2008"], "I meant the 2008 one", "j#1"),        # read as 2008: right
               turn(ROME, 0, ROME_OPTIONS, "the one in the east, eastern empire", "r#0"),  # read as eastern: wrong
               turn(ROME, 2, ROME_OPTIONS, "the empire", "r#2"),                           # western and eastern tie
               turn(ROME, 1, ROME_OPTIONS, "pizza", "r#1")]                                # no overlap: no pick
    summary = score(runner, [], records)
    assert summary["agreement"] == 25.0 and summary["missing"] == 0
    assert any(note.startswith("4 reply(ies) not one of the options") for note in summary["notes"])
