"""Stages composed as a user composes them: the contracts between neighbouring stages."""
import pytest

from cqtools.stages.answer import AnswerConfig, AnswerStage, GenerativeReader, answer_batch

from .fakes import FakeGenerator
from .test_answer import _record


def test_cq_mode_answers_the_question_itself_when_no_cq_was_asked():
    """gen-cq writes cq: null for questions it judged unambiguous; answer --mode cq (also with
    --selected, as after cq oracle) then answers the question as asked, tied to no option."""
    gen = FakeGenerator({"Who?": "Somebody"})
    for selected in (False, True):
        cfg = AnswerConfig(mode="cq", selected=selected, grounding="none")
        out = answer_batch([_record(cq=None)], AnswerStage(cfg, GenerativeReader(gen, cfg)), {})[0]
        assert [(a.get("option"), a["text"]) for a in out["answers"]] == [(None, "Somebody")]


def test_asqa_disambig_f1_with_a_generative_reader(monkeypatch, runner, tmp_path):
    """--reader with a generator (no QA head) reads each gold DQ from the long answer through
    cq answer's reader; Disambig-F1 is token F1 against the DQ's short answers."""
    import orjson

    from cqtools.cli import cli
    from cqtools.models import load as loader
    from cqtools.models.resolve import ResolvedModel

    fake = FakeGenerator({"1989": "Jack Nicholson", "2008": "Heath Ledger", "2019": "Tom Hanks"})
    monkeypatch.setattr(loader, "load_generator", lambda name, device="auto", **kw: fake)
    monkeypatch.setattr("cqtools.models.resolve", lambda name, announce=True, config=None: ResolvedModel(name, "/x", "test", "gguf"))
    record = {"id": "a", "question": "Who played the Joker?",
              "long_answer": "Jack Nicholson played him in 1989, Heath Ledger in 2008 and Joaquin Phoenix in 2019.",
              "gold": {"long_answers": ["Jack Nicholson, Heath Ledger and Joaquin Phoenix played the Joker."],
                       "answers": [["Jack Nicholson"], ["Heath Ledger"], ["Joaquin Phoenix"]],
                       "dqs": [{"question": "Who played the Joker in 1989?", "answers": ["Jack Nicholson"]},
                               {"question": "Who played the Joker in 2008?", "answers": ["Heath Ledger"]},
                               {"question": "Who played the Joker in 2019?", "answers": ["Joaquin Phoenix"]}]}}
    rows = tmp_path / "rows.jsonl"
    result = runner.invoke(cli, ["score", "--task", "asqa", "--reader", "fake-llm", "--per-record", str(rows)],
                           input=orjson.dumps(record).decode())
    assert result.exit_code == 0, result.output
    summary = orjson.loads(result.stdout)
    # the reader read each gold DQ (3 prompts, through the fake) against the long answer
    assert [p.rsplit("Question: ", 1)[1].split("\n")[0] for p in fake.prompts] == \
        [dq["question"] for dq in record["gold"]["dqs"]]
    # "Tom Hanks" is no span of the long answer: grounding ties it to one; the first two are exact matches
    # no shared token with "Joaquin Phoenix": Disambig-F1 = (1 + 1 + 0) / 3
    row = orjson.loads(rows.read_text())
    assert row["disambig_f1"] == pytest.approx(2 / 3) and summary["disambig_f1"] == pytest.approx(66.6667, abs=1e-4)
    assert summary["reader"] == "fake-llm"
    assert any("not comparable" in note for note in summary["notes"])
