"""`cq convert chat-log`: a `cq chat --log` file in CAmbigNQ's layout, read back by `cq convert cambignq`."""
import json

import orjson

from cqtools.cli import cli

from .view_helpers import steps


def test_chat_log_becomes_cambignq_and_reads_back(tmp_path, runner):
    turns = steps()["answer-cq"][:4]  # three picked options of fx01, then fx03's first
    direct = dict(turns[0], id="d1", cq=None, selected_option=None)  # nothing asked: no pick to keep
    log = tmp_path / "session.jsonl"
    log.write_text("".join(json.dumps(t) + "\n" for t in [*turns, direct]))
    result = runner.invoke(cli, ["convert", "chat-log", str(log)])
    assert result.exit_code == 0, result.stderr
    items = [orjson.loads(line) for line in result.stdout.splitlines()]
    kept = [t for t in turns if t.get("cq") and t.get("selected_option")]
    assert [i["id"] for i in items] == [t["id"] for t in kept] and kept
    assert f"{len(turns) + 1 - len(kept)} turn(s) left out" in result.stderr
    first, turn = items[0], kept[0]
    picked = next(a["text"] for a in turn["answers"] if a.get("option") == turn["selected_option"])
    assert first["clarification_question"] == turn["cq"]["text"]
    assert first["dqs"] == [f"{turn['question']}, Which one: {turn['selected_option']}"]
    assert first["clarification_answers"] == [[picked]] and first["answer"] == picked
    assert [p["id"] for p in first["passages"]] == [p["id"] for p in turn["passages"]]
    out = tmp_path / "cq_chat.jsonl"
    out.write_text(result.stdout)
    back = runner.invoke(cli, ["convert", "cambignq", str(out)])
    assert back.exit_code == 0, back.stderr
    record = orjson.loads(back.stdout.splitlines()[0])
    assert record["gold"]["cq"] == turn["cq"]["text"] and record["gold"]["answers"] == [[picked]]


def test_chat_log_refuses_what_would_mix_layouts(tmp_path, runner):
    log = tmp_path / "session.jsonl"
    log.write_text(json.dumps(steps()["answer-cq"][0]) + "\n")
    result = runner.invoke(cli, ["convert", "chat-log", str(log), "--silver-cq"])
    assert result.exit_code == 1 and "CAmbigNQ's layout" in result.stderr and result.stderr.count("\n") == 1
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x", "question": "q", "cq": 5, "selected_option": "a"}\n')
    result = runner.invoke(cli, ["convert", "chat-log", str(bad)])
    assert result.exit_code == 1 and "turn 1" in result.stderr and result.stderr.count("\n") == 1
