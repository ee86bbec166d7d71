"""CLAM as its paper runs it (cqtools/stages/clam.py, `--preset clam`): what each stage sends to the
model, in which layout, and what it does with the answer; through a scripted generator and through
the OpenAI-compatible test server (every request it was sent)."""
from __future__ import annotations

import orjson
import pytest

from cqtools.cli import cli
from cqtools.stages import clam, templates
from cqtools.stages.answer.questions import questions_of
from cqtools.stages.detect import detect_batch
from cqtools.stages.gen_cq import gen_cq_batch, primed
from cqtools.stages.oracle import oracle_batch

from .fakes import FakeGenerator
from .conftest import parse_jsonl

TPL = templates.builtin("clam")
PASSAGES = [{"id": "p1", "title": "Joker", "text": "Heath Ledger played the Joker in 2008."}]


def record(rid="q1", question="Who played the Joker?", **extra):
    return {"id": rid, "question": question, "passages": PASSAGES, **extra}


# --- detection ----------------------------------------------------------------------------------

def test_detect_prompt_is_five_shots_in_clams_order_without_instruction_and_scores_log_p_true():
    fake = FakeGenerator(scores={"True": -0.25})
    detector = clam.detector_from(fake, clam.THRESHOLD, TPL)
    out = detect_batch([record()], detector)
    prompts, continuations, prefix = fake.score_calls[0]
    assert continuations == [" True"]  # log p(True) alone: no False continuation is scored
    shots = prefix.split("\n\n")[:-1]
    assert len(shots) == 5 and all(s.startswith("Q: ") for s in shots)  # no instruction line before them
    assert [s.rsplit(": ", 1)[1] for s in shots] == ["True.", "False.", "False.", "False.", "True."]
    assert prompts == ["Q: Who played the Joker?\nThis question is ambiguous:"]
    assert out[0]["ambiguity"] == {"label": True, "score": -0.25, "method": "clam", "threshold": -0.3}
    assert out[0]["meta"]["detect"]["template_digest"] == TPL.digest


@pytest.mark.parametrize("score,label", [(-0.3, False), (-0.2999, True), (-0.3001, False)])
def test_detect_threshold_edge_is_strictly_above_minus_0_3(score, label):
    detector = clam.detector_from(FakeGenerator(scores={"True": score}), clam.THRESHOLD, TPL)
    assert detect_batch([record()], detector)[0]["ambiguity"]["label"] is label


# --- clarifying question --------------------------------------------------------------------------

def test_cq_is_closed_book_zero_shot_and_kept_as_written():
    fake = FakeGenerator("Do you mean the 2008 film or the 2019 film?", on=lambda p: p)
    out = gen_cq_batch([record(ambiguity={"label": True})], clam.cq_writer(fake, 40, TPL), all_records=False)
    (prompt,) = fake.prompts
    assert prompt.startswith("Who played the Joker? ") and prompt.endswith(":")
    assert "Heath" not in prompt and "ambiguous" not in prompt.lower()  # no passages; not told it is ambiguous
    assert prompt.count("\n") == 0 and fake.stops == [["\n"]] and fake.chats == [False]
    assert out[0]["cq"]["text"] == "Do you mean the 2008 film or the 2019 film?"


def test_unambiguous_records_get_no_cq():
    fake = FakeGenerator("x?")
    out = gen_cq_batch([record(ambiguity={"label": False})], clam.cq_writer(fake, 40, TPL), all_records=False)
    assert out[0]["cq"] is None and fake.prompts == []


def test_prompting_baseline_asks_only_when_its_reply_is_a_question():
    fake = FakeGenerator({"Joker": "Which film do you mean?", "capital": "Canberra."}, on=lambda p: p)
    records = [record("a"), record("b", "What is the capital of Australia?")]
    out = gen_cq_batch(records, clam.prompting_writer(fake, 32, TPL), all_records=True)
    assert out[0]["cq"]["text"] == "Which film do you mean?" and out[1]["cq"] is None
    assert all(TPL.text("preamble_prompting") in p for p in fake.prompts)


def test_a_chat_model_repeating_the_primer_does_not_write_which_twice():
    assert primed(" Which film: the 2008 one or the 2019 one?") == "Which film: the 2008 one or the 2019 one?"
    assert primed(" film: A or B?") == "Which film: A or B?"
    assert primed(" Whichever: A or B?") == "Which Whichever: A or B?"


# --- the oracle user --------------------------------------------------------------------------------

def gold_record(**extra):
    return record(gold={"ambiguous": True, "intended": 1,
                        "dqs": [{"question": "Who played the Joker in The Dark Knight?"},
                                {"question": "Who played the Joker in Joker (2019)?"}],
                        "answers": [["Heath Ledger"], ["Joaquin Phoenix"]]}, **extra)


def test_oracle_writes_a_reply_from_the_intended_question_even_when_options_were_parsed():
    fake = FakeGenerator(" The 2019 one.", on=lambda p: p)
    from cqtools.stages.oracle import SimulatedUser
    import functools

    oracle = SimulatedUser("clam", functools.partial(clam.written_replies, generator=fake, tpl=TPL, max_new_tokens=32))
    rec = gold_record(cq={"text": "Which film: The Dark Knight or Joker?", "category": "film",
                          "options": ["The Dark Knight", "Joker"]})
    out = oracle_batch([rec], oracle)[0]
    assert fake.scored == []  # never picks an option by log-probability
    (prompt,) = fake.prompts
    for part in ("Who played the Joker in Joker (2019)?", "Who played the Joker?", "Which film: The Dark Knight or Joker?"):
        assert part in prompt
    assert "Dark Knight?" not in prompt.replace("Which film: The Dark Knight or Joker?", "")  # other DQs unseen
    assert out["clarification_answer"] == "The 2019 one." and out["selected_option"] == "The 2019 one."


# --- the final answer ------------------------------------------------------------------------------

def test_dialogue_answer_shows_question_cq_and_reply_closed_book():
    fake = FakeGenerator(" Joaquin Phoenix.", on=lambda p: p)
    rec = gold_record(cq={"text": "Which film do you mean?"}, clarification_answer="The 2019 one.")
    plain = record("q2", "What is the capital of Australia?", cq=None)
    out = clam.dialogue_batch([rec, plain], fake, TPL, n_passages=0, max_new_tokens=32, preamble="default", info={})
    dialogue, alone = fake.prompts
    assert dialogue.startswith(TPL.text("preamble"))
    assert dialogue.index("Who played the Joker?") < dialogue.index("Which film do you mean?") < \
        dialogue.index("The 2019 one.")
    assert "Heath" not in dialogue and "Which film" not in alone  # closed-book; no turns for the unasked
    assert alone.rstrip().endswith(":") and "capital of Australia" in alone
    assert out[0]["answers"] == [{"text": "Joaquin Phoenix.", "dialogue": True}]
    assert out[1]["answers"][0]["dialogue"] is False


def test_dialogue_answer_open_book_shows_passages_and_needs_the_reply():
    fake = FakeGenerator("x")
    rec = gold_record(cq={"text": "Which film?"}, clarification_answer="2019")
    clam.dialogue_batch([rec], fake, TPL, n_passages=1, max_new_tokens=8, preamble="default", info={})
    assert "Heath Ledger played the Joker" in fake.prompts[0]
    from cqtools.errors import InputError

    with pytest.raises(InputError, match="clarification_answer"):
        clam.dialogue_batch([gold_record(cq={"text": "Which film?"})], fake, TPL, 0, 8, "default", {})


def test_a_free_form_cq_never_becomes_which_invalid_form():
    rec = record(cq={"text": "What do you mean?", "category": "invalid form", "options": ["invalid form"]})
    texts = [q.text for q in questions_of([rec], "cq")]
    assert texts == ["Who played the Joker?"]
    rec["selected_option"] = "the 2019 film"
    (q,) = questions_of([rec], "cq", selected=True)
    assert "invalid" not in q.text and q.text.endswith("Which one: the 2019 film")


# --- templates: --prompt FILE ------------------------------------------------------------------------

def test_prompt_file_replaces_parts_and_is_checked(tmp_path):
    path = tmp_path / "paper.txt"
    path.write_text("[[cq]]\n{question} PAPER SENTENCE:\n")
    tpl = templates.load("clam", str(path))
    assert tpl("cq", question="Q?") == "Q? PAPER SENTENCE:" and tpl.text("preamble") == TPL.text("preamble")
    assert tpl.digest != TPL.digest and tpl.source == str(path)
    from cqtools.errors import InputError

    path.write_text("[[cq]]\n{question} {answer}\n")
    with pytest.raises(InputError, match=r"slot \{answer\}"):
        templates.load("clam", str(path))
    path.write_text("[[cqq]]\nx\n")
    with pytest.raises(InputError, match=r"no part \[\[cqq\]\]"):
        templates.load("clam", str(path))
    path.write_text("[[detect_examples]]\nMaybe | Who?\n")
    with pytest.raises(InputError, match="True | question"):
        clam.detect_examples(templates.load("clam", str(path)))


# --- presets ------------------------------------------------------------------------------------------

def test_presets_are_listed_and_name_their_stages(runner):
    result = runner.invoke(cli, ["presets"])
    assert result.exit_code == 0, result.output
    rows = {r["name"]: r for r in parse_jsonl(result.stdout)}
    assert {"toc", "clam"} <= set(rows)
    assert rows["clam"]["commands"]["detect"] == {"method": "clam", "threshold": -0.3}
    assert rows["clam"]["commands"]["answer"] == {"mode": "dialogue", "n_passages": 0}


def test_an_unknown_preset_is_a_one_line_error(runner):
    result = runner.invoke(cli, ["detect", "--preset", "clamm"], input="")
    assert result.exit_code != 0
    assert "unknown preset 'clamm'; did you mean 'clam'?" in result.stderr and "Traceback" not in result.stderr


def test_preset_values_fill_unset_options_and_explicit_flags_win(runner, tmp_path, monkeypatch):
    """Through the CLI with a stand-in generator: the preset's method and threshold reach the
    records; --threshold on the command line wins; the run record and meta name the preset."""
    fake = FakeGenerator(scores={"True": -0.2})
    monkeypatch.setattr(clam, "_generator", lambda model, config: fake)
    line = orjson.dumps(record()).decode() + "\n"
    out = tmp_path / "out.jsonl"
    result = runner.invoke(cli, ["detect", "--preset", "clam", "--resume", str(out)], input=line)
    assert result.exit_code == 0, result.stderr
    (rec,) = parse_jsonl(out.read_text())
    assert rec["ambiguity"]["method"] == "clam" and rec["ambiguity"]["threshold"] == -0.3
    assert rec["ambiguity"]["label"] is True and rec["meta"]["presets"] == {"detect": "clam"}
    run_record = orjson.loads((tmp_path / "out.jsonl.cq.json").read_bytes())
    assert run_record["params"]["preset"] == "clam" and run_record["params"]["threshold"] == -0.3
    result = runner.invoke(cli, ["detect", "--preset", "clam", "--threshold", "0.5"], input=line)
    assert result.exit_code == 0, result.stderr
    (rec,) = parse_jsonl(result.stdout)
    assert rec["ambiguity"]["threshold"] == 0.5 and rec["ambiguity"]["label"] is False
    result = runner.invoke(cli, ["detect", "--preset", "clam", "--method", "always"], input=line)
    assert result.exit_code == 0, result.stderr  # the preset's clam-only options do not reach "always"
    assert parse_jsonl(result.stdout)[0]["ambiguity"]["method"] == "always"


def test_every_preset_setting_is_an_option_of_its_command():
    """A preset only sets values of the commands' own flags and the methods' schemas."""
    import importlib

    from cqtools import presets
    from cqtools.cli import COMMANDS

    import click

    for name in presets.names():
        for s in presets.get(name).settings:
            group, _, trainer = s.command.partition(" ")  # "train fid": a trainer's recipe, a subcommand of cq train
            command = importlib.import_module(f"cqtools.cli.{COMMANDS[group]}").cli
            if trainer:
                command = command.get_command(click.Context(command), trainer)
            assert s.option in {p.name for p in command.params}, (name, s)
            assert s.source, (name, s)


# --- through an OpenAI-compatible server ---------------------------------------------------------------

def test_the_clam_pipeline_through_an_openai_server(runner, server, tmp_path, monkeypatch):
    """Every request of detect -> gen-cq -> oracle -> answer under --preset clam, as the server saw it."""
    from cqtools.models import openai_backend

    monkeypatch.setenv("CQ_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("CQ_API_KEY", "sk-test")
    openai_backend._GENERATORS.clear()
    server.control(reset=True, reply=" Which film do you mean?\nmore")
    api = ["--model", "openai:fake", "--api-base", server.url]
    gold = gold_record(id="g1")
    text = orjson.dumps(gold).decode() + "\n"

    def run(args, stdin):
        result = runner.invoke(cli, args + api, input=stdin, catch_exceptions=False)
        assert result.exit_code == 0, result.stderr
        return result.stdout

    detected = run(["detect", "--preset", "clam"], text)
    sent = server.requests()
    scoring = [r["body"] for r in sent if r["body"].get("echo")]
    assert len(scoring) == 1 and scoring[0]["prompt"].startswith("Q: ")  # shots first: no instruction
    assert scoring[0]["prompt"].endswith("Q: Who played the Joker?\nThis question is ambiguous: True")
    server.control(reset=True, reply=" Which film do you mean?\nmore")
    asked = run(["gen-cq", "--preset", "clam", "--all"], detected)
    (body,) = [r["body"] for r in server.requests()]
    assert body["prompt"].startswith("Who played the Joker? ") and "Heath" not in body["prompt"]
    assert body["stop"] == ["\n"] and body["max_tokens"] == 40 and body["temperature"] == 0
    assert parse_jsonl(asked)[0]["cq"]["text"] == "Which film do you mean?"
    server.control(reset=True, reply=" The one from 2019.\nmore")
    replied = run(["oracle", "--preset", "clam"], asked)
    (body,) = [r["body"] for r in server.requests()]
    assert "Who played the Joker in Joker (2019)?" in body["prompt"] and "Which film do you mean?" in body["prompt"]
    server.control(reset=True, reply=" Joaquin Phoenix\nUser: thanks")
    answered = parse_jsonl(run(["answer", "--preset", "clam"], replied))
    (body,) = [r["body"] for r in server.requests()]
    assert body["prompt"].endswith("User: The one from 2019.\nAssistant:") and "Heath" not in body["prompt"]
    assert answered[0]["answers"][0]["text"] == "Joaquin Phoenix"
    assert answered[0]["meta"]["presets"] == {"detect": "clam", "gen-cq": "clam", "oracle": "clam", "answer": "clam"}
    openai_backend._GENERATORS.clear()


def test_every_preset_value_is_valid_for_the_method_it_configures():
    """Each method/mode/task value is registered and each option value passes that method's schema."""
    from cqtools import presets
    from cqtools.registry import ANSWER_MODES, CQ_METHODS, DETECTORS, DISAMBIGUATORS, ORACLES, SCORE_TASKS

    registries = {"detect": DETECTORS, "gen-cq": CQ_METHODS, "oracle": ORACLES, "answer": ANSWER_MODES,
                  "disambiguate": DISAMBIGUATORS, "score": SCORE_TASKS}
    chooser = {"answer": "mode", "score": "task"}
    for name in presets.names():
        preset = presets.get(name)
        for command in preset.commands():
            values = preset.values(command)
            registry = registries.get(command)
            if registry is None:
                continue
            method = registry.get(values.get(chooser.get(command, "method")))
            for key, value in values.items():
                if key == chooser.get(command, "method") or (command == "score"):
                    continue
                if command == "answer" and key == "reader_name":  # --reader: a registered reader
                    from cqtools.registry import READERS

                    assert value in READERS.names(), (name, value)
                    continue
                option = method.option(key)
                if option is None and command == "answer":  # cq answer also takes its readers' options
                    from cqtools.registry import READERS

                    option = next((r.option(key) for r in READERS.methods() if r.option(key)), None)
                row = next(s for s in preset.settings if s.command == command and s.option == key)
                if option is None and row.applies == "layout":  # the paper's input layout: any method declaring it
                    option = next((m.option(key) for m in registry.methods() if m.option(key)), None)
                if option is None and row.applies == "command":  # the command's own (cq retrieve --hits)
                    option = presets.command_settings(command).get(key)
                assert option is not None, (name, command, key)
                assert option.convert(value, "preset") == value
