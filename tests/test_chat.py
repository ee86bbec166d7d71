"""`cq chat` in a real terminal (tmux: send-keys, capture-pane) and `cq score --task study`.

The terminal tests run the installed `cq` against a BM25 index of the fixture corpus (built once per
module) with the tiny local causal LM as every LM; an ambiguous question is typed as a JSON record
carrying its gold DQs so that `--gen-cq from-dqs` has options to offer. They skip without tmux."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from cqtools import chat
from cqtools.metrics.cq import INVALID
from cqtools.score import ScoreOptions, score_records
from cqtools.score.study import wilson

from .conftest import FIXTURES, parse_jsonl

CQ = str(Path(sys.executable).with_name("cq"))
needs_tmux = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


def fixture_record(n: int) -> dict:
    """The n-th fixture question with only what a typed record needs (id, question, gold)."""
    record = parse_jsonl((FIXTURES / "questions.jsonl").read_text())[n]
    gold = record["gold"]
    return {"id": record["id"], "question": record["question"],
            "gold": {"ambiguous": gold["ambiguous"], "answers": gold["answers"], "dqs": gold["dqs"]}}


JOKER = fixture_record(0)  # ambiguous: three gold DQs (The Dark Knight, Joker, Suicide Squad)


@pytest.fixture(scope="module")
def bm25_index(tmp_path_factory) -> str:
    out = tmp_path_factory.mktemp("chat-index") / "bm25"
    subprocess.run([CQ, "index", "--corpus", str(FIXTURES / "corpus.jsonl"), "--out", str(out), "--threads", "2"],
                   check=True, capture_output=True)
    return str(out)


class Tmux:
    """One cq command in a detached tmux session on a private server (its own socket)."""

    def __init__(self, tmp_path: Path, command: list[str], site: str | None = None):
        self.socket = f"cqtest-{os.getpid()}-{tmp_path.name}"
        script = tmp_path / "run.sh"
        quoted = " ".join(f"'{c}'" for c in command)
        path = f"export PYTHONPATH='{site}'${{PYTHONPATH:+:$PYTHONPATH}}\n" if site else ""
        script.write_text(f"export HF_HUB_OFFLINE=1 NO_COLOR=1 CQ_DEVICE=cpu\n{path}{quoted}\necho EXIT:$?\nsleep 600\n")
        self.tmux("new-session", "-d", "-s", "chat", "-x", "220", "-y", "60", f"bash {script}")

    def tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.socket, *args], check=True, capture_output=True,
                              text=True).stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-J", "-S", "-3000", "-t", "chat")

    def wait_for(self, text: str, count: int = 1, timeout: float = 120.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.screen()
            if screen.count(text) >= count:
                return screen
            time.sleep(0.2)
        raise AssertionError(f"{text!r} (x{count}) did not appear within {timeout:.0f} s; screen:\n{self.screen()}")

    def type(self, text: str) -> None:
        self.tmux("send-keys", "-t", "chat", "-l", text)
        self.tmux("send-keys", "-t", "chat", "Enter")

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "chat", *keys)

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True)


@pytest.fixture
def term(tmp_path, request):
    sessions = []

    def start(*args: str, site: str | None = None) -> Tmux:
        session = Tmux(tmp_path, [CQ, "chat", *args], site)
        sessions.append(session)
        return session

    yield start
    for session in sessions:
        session.close()


SLOW_PLUGIN = """
import logging, time

from cqtools.plugins import hookimpl
from cqtools.registry import Option
from cqtools.stages.detect import ScoredDetector


def score(records):
    for record in records:
        if "slowly" in record["question"]:
            logging.getLogger("cqtools").warning("slow detector: still thinking")
            time.sleep(120)
    return [0.0] * len(records)


@hookimpl
def register_detectors(register):
    register("slow", lambda threshold=0.5: ScoredDetector("slow", score, threshold, {"method": "slow"}),
             help="never ambiguous; a question with 'slowly' in it logs a line and takes two minutes",
             options=[Option("threshold", float, 0.5, "label = score > threshold")])
"""


@pytest.fixture(scope="module")
def slow_site(tmp_path_factory) -> str:
    """A plugin (an installed distribution, as pip would leave it) adding the detector ``slow``."""
    site = tmp_path_factory.mktemp("slow-site")
    (site / "cq_slow_detector.py").write_text(SLOW_PLUGIN)
    dist = site / "cq_slow_detector-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: cq-slow-detector\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[cqtools.plugins]\nslow = cq_slow_detector\n")
    return str(site)


def base(index: str, model: str, log: Path, *more: str) -> list[str]:
    return ["--index", index, "--retrieve", "bm25", "--rerank-top", "0", "--model", model, "--log", str(log), *more]


def from_dqs_options(record: dict) -> list[str]:
    from cqtools.stages import gen_cq

    return chat.options_of(gen_cq.build("from-dqs", all_records=True)([dict(record)])[0])


@needs_tmux
def test_ambiguous_pick_then_other_then_ctrl_d(term, bm25_index, tiny_causal, tmp_path):
    log = tmp_path / "log.jsonl"
    options = from_dqs_options(JOKER)
    t = term(*base(bm25_index, tiny_causal, log, "--detect", "always", "--gen-cq", "from-dqs"))
    t.wait_for("question>")
    t.type(orjson.dumps(JOKER).decode())
    screen = t.wait_for("pick>")
    for n, option in enumerate([*options, chat.OTHER, chat.SHOW_ALL], start=1):
        assert f"  {n}) {option}" in screen
    t.type("2")
    screen = t.wait_for("question>", count=2)
    assert f"answer ({options[1]}): " in screen
    assert 'from "' in screen  # the passage: title and sentence
    t.type(orjson.dumps(JOKER).decode())
    t.wait_for("pick>", count=2)
    t.type(str(len(options) + 1))
    t.wait_for("your interpretation>")
    t.type("the animated series")
    t.wait_for("question>", count=3)
    t.keys("C-d")
    t.wait_for("EXIT:0")

    first, second = parse_jsonl(log.read_text())
    assert (first["selected_option"], first["meta"]["chat"]["choice"]) == (options[1], "option")
    assert [a["option"] for a in first["answers"]] == [options[1]]
    assert first["cq"]["options"] == options and first["ambiguity"]["label"] is True
    assert [p["id"] for p in first["passages"]] and first["gold"] == JOKER["gold"]
    assert second["selected_option"] == second["clarification_answer"] == "the animated series"
    assert second["meta"]["chat"]["choice"] == "other"
    assert [a["option"] for a in second["answers"]] == ["the animated series"]
    # the log is in the pipeline's schema: cq score reads it
    out = subprocess.run([CQ, "score", "--task", "detect"], input=log.read_bytes(), capture_output=True, check=True)
    assert orjson.loads(out.stdout)["n"] == 2


@needs_tmux
def test_unambiguous_answered_directly_then_ctrl_c(term, bm25_index, tiny_causal, tmp_path):
    log = tmp_path / "log.jsonl"
    t = term(*base(bm25_index, tiny_causal, log, "--detect", "never"))
    t.wait_for("question>")
    t.type("Who wrote The Lord of the Rings?")
    screen = t.wait_for("question>", count=2)
    assert "answer: " in screen and "pick>" not in screen and 'from "' in screen
    t.keys("C-c")
    t.wait_for("EXIT:130")
    (record,) = parse_jsonl(log.read_text())
    assert record["cq"] is None and record["selected_option"] is None
    assert record["meta"]["chat"]["choice"] == "direct" and len(record["answers"]) == 1
    assert "option" not in record["answers"][0]


@needs_tmux
def test_ctrl_c_cancels_the_turn_then_ends_the_session(term, bm25_index, tiny_causal, tmp_path, slow_site):
    log = tmp_path / "log.jsonl"
    t = term(*base(bm25_index, tiny_causal, log, "--detect", "slow"), site=slow_site)
    t.wait_for("question>")
    t.type("Who wrote The Lord of the Rings?")
    t.wait_for("question>", count=2)
    t.type("Who wrote The Lord of the Rings, slowly?")
    t.wait_for("slow detector: still thinking")
    t.keys("C-c")  # the turn in flight: cancelled, back at the prompt
    screen = t.wait_for("question>", count=3)
    assert "(cancelled)" in screen and "EXIT:" not in screen
    assert "cq: slow detector: still thinking" in screen.splitlines()  # a whole line, not over the spinner
    t.type("Who wrote The Hobbit?")  # the session goes on
    t.wait_for("question>", count=4)
    t.keys("C-c")  # at the prompt: the session ends
    screen = t.wait_for("EXIT:130")
    assert "2 turn(s) in" in screen
    records = parse_jsonl(log.read_text())
    assert [r["question"] for r in records] == ["Who wrote The Lord of the Rings?", "Who wrote The Hobbit?"]


WORLD_CUP = fixture_record(2)  # "Who won the World Cup in 2019?": cricket, rugby, women's football


@needs_tmux
def test_a_typed_interpretation_is_retrieved_for(term, bm25_index, tiny_causal, tmp_path):
    """"the 2018 FIFA World Cup" is none of the CQ's options and the question as asked does not
    retrieve its passage: the typed reading is retrieved for, and that passage is the one read."""
    assert WORLD_CUP["question"] == "Who won the World Cup in 2019?"
    log = tmp_path / "log.jsonl"
    t = term(*base(bm25_index, tiny_causal, log, "--detect", "always", "--gen-cq", "from-dqs", "--hits", "1",
                   "--passages", "1"))
    t.wait_for("question>")
    for n in (1, 2):
        t.type(orjson.dumps(WORLD_CUP).decode())
        t.wait_for("pick>", count=n)
        t.type("1" if n == 1 else str(len(from_dqs_options(WORLD_CUP)) + 1))
        if n == 1:
            t.wait_for("question>", count=2)
    t.wait_for("your interpretation>")
    t.type("the 2018 FIFA World Cup")
    screen = t.wait_for("question>", count=3)
    assert '"2018 FIFA World Cup" [p0014]' in screen, screen  # the passage the answer was read from
    t.keys("C-d")
    t.wait_for("EXIT:0")
    asked, typed = parse_jsonl(log.read_text())
    assert [p["id"] for p in asked["passages"]] != ["p0014"]
    assert [p["id"] for p in typed["passages"]] == ["p0014"]
    assert typed["answers"][0]["question"].endswith(": the 2018 FIFA World Cup")


@needs_tmux
def test_replay(term, bm25_index, tiny_causal, tmp_path):
    options = from_dqs_options(JOKER)
    old = tmp_path / "old.jsonl"
    old.write_text("".join(orjson.dumps({**JOKER, "selected_option": selected, "meta": {"chat": {"choice": choice}}})
                           .decode() + "\n" for choice, selected in [("option", options[2]), ("other", "a cartoon"),
                                                                     ("all", None)]))
    log = tmp_path / "new.jsonl"
    t = term(*base(bm25_index, tiny_causal, log, "--detect", "always", "--gen-cq", "from-dqs", "--replay", str(old)))
    screen = t.wait_for("EXIT:0")
    assert f"pick> {options[2]}" in screen and "pick> other: a cartoon" in screen
    records = parse_jsonl(log.read_text())
    assert [r["meta"]["chat"]["choice"] for r in records] == ["option", "other", "all"]
    assert [r["selected_option"] for r in records] == [options[2], "a cartoon", None]
    assert [a["option"] for a in records[2]["answers"]] == options


@needs_tmux
def test_study(term, bm25_index, tiny_causal, tmp_path):
    questions = tmp_path / "questions.jsonl"
    questions.write_text(orjson.dumps(JOKER).decode() + "\n" + orjson.dumps(fixture_record(1)).decode() + "\n")
    log = tmp_path / "study.jsonl"
    t = term(*base(bm25_index, tiny_causal, log, "--detect", "always", "--gen-cq", "from-dqs", "--study",
                   "--questions", str(questions), "--seed", "3"))
    screen = t.wait_for("pick>")
    assert "presentation A" in screen and chat.SHOW_ALL not in screen
    t.type("1")
    screen = t.wait_for("prefer>")
    assert "presentation B" in screen
    t.type("2")  # the second presentation
    screen = t.wait_for("EXIT:0")
    assert "skipped" in screen  # the unambiguous fixture question has no gold DQs, so no CQ options
    study, skipped = parse_jsonl(log.read_text())
    assert sorted(study["study"]["order"]) == ["answers", "cq"]
    assert study["study"]["preferred"] == study["study"]["order"][1]
    assert study["selected_option"] == from_dqs_options(JOKER)[0]
    assert skipped["study"]["skipped"]
    out = subprocess.run([CQ, "score", "--task", "study"], input=log.read_bytes(), capture_output=True, check=True)
    summary = orjson.loads(out.stdout)
    assert summary["n"] == 1 and summary["skipped"] == 1
    assert summary[f"prefer_{study['study']['preferred']}"] == 100.0


# --- without a terminal ------------------------------------------------------------------------------

class FakeTerminal:
    def __init__(self, inputs):
        self.inputs, self.lines = list(inputs), []

    def read(self, prompt):
        if not self.inputs:
            raise EOFError
        return self.inputs.pop(0)

    def write(self, line=""):
        self.lines.append(line)

    def mark(self, text):
        return f"[{text}]"


class FakeSession:
    opts = chat.ChatOptions(index_dir="idx")

    def __init__(self):
        self.calls = []

    def answer(self, record, choice, selected=None):
        self.calls.append((choice, selected))
        record["answers"] = [{"text": "Heath Ledger", "grounding": "exact"}]
        return record


PASSAGES = [{"id": "p1", "title": "The Dark Knight (film)",
             "text": "The Dark Knight is a 2008 film. Heath Ledger played the Joker. He died in 2008."}]


def test_cq_without_options_answers_directly():
    session, term = FakeSession(), FakeTerminal([])
    record = {"id": "q", "question": "Who played the Joker?", "passages": PASSAGES,
              "cq": {"text": "Huh?", "category": INVALID, "options": [INVALID]}}
    chat.clarify_and_answer(session, term, record)
    assert session.calls == [("direct", None)]
    assert any("no clarifying question with options" in line for line in term.lines)
    assert '  from "The Dark Knight (film)" [p1]: [Heath Ledger] played the Joker.' in term.lines


def test_the_from_line_shows_terminal_escapes_of_a_passage_instead_of_running_them(capsys, monkeypatch):
    """The "from ..." line under an answer prints a passage's title, id and sentence from the corpus (untrusted):
    through cq chat's console their OSC 52 (clipboard), OSC 8 (link), CSI 2J and CR are shown, not run; the
    bold cq adds to the answer span stays."""
    import click

    from cqtools.cli.chat import Console

    monkeypatch.setattr(click.utils, "should_strip_ansi", lambda *a, **k: False)  # as a terminal gets it
    passage = {"id": "p1\x1b[2J", "title": "The Dark Knight\x1b]52;c;aGk=\x07\r",
               "text": "\x1b]8;;http://evil.example/\x1b\\Heath Ledger played the Joker.\x1b]8;;\x1b\\"}
    record = {"id": "q", "question": "Who played the Joker?", "passages": [passage],
              "cq": {"text": "Huh?", "category": INVALID, "options": [INVALID]}}
    chat.clarify_and_answer(FakeSession(), Console(color=True), record)
    out = capsys.readouterr().out
    line = next(line for line in out.splitlines() if line.startswith("  from "))
    assert line == ('  from "The Dark Knight\\x1b]52;c;aGk=\\x07\\r" [p1\\x1b[2J]: \\x1b]8;;http://evil.example/'
                    '\\x1b\\\x1b[1m\x1b[7mHeath Ledger\x1b[0m played the Joker.\\x1b]8;;\\x1b\\'), line
    assert "\x07" not in out and "\r" not in out and "\x1b]" not in out and "\x1b[2J" not in out


def test_spinner_writes_log_lines_above_itself(tmp_path):
    """Anything written to stderr while the spinner runs (a logger, C code on fd 2) clears the
    spinner's line first and is written whole; the spinner then redraws below it."""
    import logging

    from cqtools.cli.chat import Spinner

    logger = logging.getLogger("cqtest.spinner")
    handler = logging.StreamHandler(open(2, "w", closefd=False, buffering=1))  # whatever fd 2 is then
    logger.addHandler(handler)
    logger.propagate = False
    saved, out = os.dup(2), tmp_path / "stderr"
    try:
        with open(out, "wb") as fh:
            os.dup2(fh.fileno(), 2)
        with Spinner(enabled=True)("loading models"):
            time.sleep(0.25)
            logger.warning("model loaded: tiny")
            os.write(2, b"a line from C code\n")
            time.sleep(0.25)
        logger.warning("after the spinner")
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        logger.removeHandler(handler)
    text = out.read_bytes().decode()
    assert "\r| loading models..." in text
    assert terminal_lines(text) == ["model loaded: tiny", "a line from C code", "after the spinner", ""]


def terminal_lines(text: str) -> list[str]:
    """The lines a terminal shows for ``text``: \\r goes back to the line's start, ESC[K clears the rest."""
    lines, line, col = [], [], 0
    for part in re.split(r"(\r|\n|\x1b\[K)", text):
        if part == "\n":
            lines.append("".join(line))
            line, col = [], 0
        elif part == "\r":
            col = 0
        elif part == "\x1b[K":
            del line[col:]
        else:
            line[col:col + len(part)] = part
            col += len(part)
    return [*lines, "".join(line)]


def test_an_answer_no_passage_holds_is_not_given_as_one():
    """"Who painted the Sistine Chapel?" over a passage about the Joker: the reader's generation was
    unusable and a span was picked by likelihood (grounding "score"), or an extractive reader found
    "no answer" likelier (score < 0): the turn says no passage answers it, the guess only as such."""
    record = {"id": "q", "question": "Who painted the Sistine Chapel?", "passages": PASSAGES}
    unsure = [{"text": "Heath Ledger", "grounding": "score", "generated": "Michelangelo"},
              {"text": "Heath Ledger", "grounding": "span", "score": -2.5}, {"text": "x", "grounding": "none"}]
    for answer in unsure:
        lines = chat.render_answers({**record, "answers": [answer]}, lambda t: f"[{t}]")
        assert lines[0] == f"answer: {chat.NO_ANSWER} (the reader's best guess: {answer['text']})"
        assert all(line.startswith("  best guess from ") for line in lines[1:])
    sure = [{"text": "Heath Ledger", "grounding": "exact"}, {"text": "Heath Ledger", "grounding": "span", "score": 3.1},
            {"text": "Heath Ledger"}]
    for answer in sure:
        lines = chat.render_answers({**record, "answers": [answer]}, lambda t: f"[{t}]")
        assert lines == ["answer: Heath Ledger", '  from "The Dark Knight (film)" [p1]: [Heath Ledger] played the Joker.']


def test_pick_by_number_text_other_and_retry():
    options = ["The Dark Knight", "Joker"]
    assert chat.pick(FakeTerminal(["9", "joker"]), options) == ("option", "Joker")
    assert chat.pick(FakeTerminal(["3", "", "the cartoon"]), options) == ("other", "the cartoon")
    assert chat.pick(FakeTerminal(["4"]), options) == ("all", None)
    with pytest.raises(EOFError):
        chat.pick(FakeTerminal(["4"]), options, show_all=False)


def test_turn_log_flushes_each_turn(tmp_path):
    log = chat.TurnLog(str(tmp_path / "log.jsonl"))
    log.write({"id": "a", "question": "q"})
    assert parse_jsonl((tmp_path / "log.jsonl").read_text()) == [{"id": "a", "question": "q"}]  # before close
    log.close()
    assert list(chat.replay_inputs(chat.read_log(str(tmp_path / "log.jsonl")))) == [
        ({"id": "a", "question": "q"}, "direct", None)]


def study_record(i: int, preferred) -> dict:
    return {"id": f"s{i}", "question": "q", "study": {"order": ["cq", "answers"], "preferred": preferred}}


def test_score_study_counts_intervals_and_resample():
    records = [study_record(i, p) for i, p in enumerate(["cq", "cq", "cq", "answers", "same", None])]
    records.append({"id": "x", "question": "q", "study": {"skipped": "no CQ options"}})
    task = score_records(enumerate(records, 1), ScoreOptions(task="study", keep_questions=True))
    summary = task.summary()
    assert (summary["n"], summary["missing"], summary["skipped"]) == (6, 1, 1)
    assert summary["prefer_cq"] == pytest.approx(50.0) and summary["cq_win_rate"] == pytest.approx(75.0)
    assert summary["counts"] == {"cq": 3, "answers": 1, "same": 1}
    assert summary["wilson_95"]["prefer_cq"] == pytest.approx(wilson(3, 6))
    low, high = wilson(3, 6)
    assert low < 50.0 < high and wilson(0, 0) is None
    import numpy as np

    again = task.resample(np.arange(6))
    assert {k: again[k] for k in again} == {k: summary[k] for k in again}


def test_score_study_cli_ci(runner):
    from cqtools.cli import cli

    records = [study_record(i, p) for i, p in enumerate(["cq", "answers", "cq", "cq"])]
    result = runner.invoke(cli, ["score", "--task", "study", "--ci", "--n-boot", "200"],
                           input="".join(orjson.dumps(r).decode() + "\n" for r in records))
    assert result.exit_code == 0, result.output
    summary = orjson.loads(result.stdout)
    assert summary["prefer_cq"] == 75.0 and set(summary["ci"]["intervals"]) >= {"prefer_cq", "cq_win_rate"}


def test_replay_shows_terminal_escapes_from_records_instead_of_running_them(bm25_index, tiny_causal, tmp_path):
    """Every line cq chat prints goes through one escaping helper: a logged question and pick carrying
    OSC 52 (clipboard), OSC 8 (disguised link), CSI 2J and CR are printed as visible escapes."""
    old = tmp_path / "old.jsonl"
    record = {**JOKER, "question": JOKER["question"] + "\x1b]52;c;aGk=\x07\x1b[2J\r",
              "selected_option": "\x1b]8;;http://evil.example/\x1b\\a cartoon\x1b]8;;\x1b\\",
              "meta": {"chat": {"choice": "other"}}}
    old.write_bytes(orjson.dumps(record) + b"\n")
    done = subprocess.run([CQ, "chat", *base(bm25_index, tiny_causal, tmp_path / "new.jsonl", "--detect", "always",
                                             "--gen-cq", "from-dqs", "--replay", str(old), "-q")],
                          capture_output=True, timeout=300, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr.decode()
    out = done.stdout.decode()
    assert "\x1b" not in out and "\r" not in out and "\x07" not in out
    assert "\\x1b]52;c;aGk=\\x07\\x1b[2J\\r" in out and "pick> other: \\x1b]8;;http://evil.example/" in out


def test_a_scripted_turn_that_fails_ends_the_session_non_zero(bm25_index, tiny_causal, tmp_path):
    """--script: the lines after a turn were written for that turn (a pick), so a failed turn stops the
    session with a one-line error naming the script line, instead of asking the pick as a question."""
    script = tmp_path / "inputs.txt"
    script.write_text('{"id": "bad", "question": 5}\n1\n')
    log = tmp_path / "log.jsonl"
    done = subprocess.run([CQ, "chat", *base(bm25_index, tiny_causal, log, "--detect", "never", "--script",
                                             str(script), "-q")],
                          capture_output=True, timeout=300, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    stderr = done.stderr.decode()
    assert done.returncode == 1, (done.stdout.decode(), stderr)
    assert f"--script {script} line 1:" in stderr.strip().splitlines()[-1] and "Traceback" not in stderr
    assert "question> 1" not in done.stdout.decode() and not (log.exists() and log.read_text())
