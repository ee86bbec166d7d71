"""The papers' decoding and layouts (issue 48): beam search for cq answer's generative reader, cq disambiguate
--method qd and REFUEL's DQ writer, set by the presets and refused by an API model; REFUEL's QD input; and
which of a preset's rows applied, in each record's meta."""
import pytest

from cqtools.cli import cli

from .conftest import jsonl, parse_jsonl
from .fakes import FakeGenerator


class ApiLike(FakeGenerator):
    """A generator whose generate() takes no num_beams, as an OpenAI-compatible server's."""

    def generate(self, prompts, max_new_tokens=32, chat=None, stop=None, batch_size=None, temperature=0.0,
                 top_p=1.0, seed=None):
        return super().generate(prompts, max_new_tokens, chat, stop, batch_size, temperature, top_p, seed)


def _replies(prompt: str) -> str:
    if prompt.rstrip().endswith("Rewritten question:"):
        answer = [line for line in prompt.splitlines() if line.startswith("Answer: ")][-1][len("Answer: "):]
        return f"Who won in {answer}?"
    return " Ann ; Bob" if prompt.rstrip().endswith("Answers:") else " Ann"


@pytest.fixture
def lm(monkeypatch):
    from cqtools.models import load as loader

    holder = {"gen": FakeGenerator(_replies, name="fake-lm")}
    monkeypatch.setattr(loader, "load_generator", lambda *a, **k: holder["gen"])
    return holder


PASSAGES = [{"id": f"p{n}", "title": f"T{n}", "text": f"Ann and Bob won in year {n}.", "rank": n + 1}
            for n in range(3)]
MULTI = {"id": "m", "question": "Who won?", "answers": [{"text": "Ann"}, {"text": "Bob"}], "passages": PASSAGES}


def run(runner, args, records):
    return runner.invoke(cli, [*args, "-q"], input=jsonl(records))


def beams(gen) -> list:
    return [entry.get("num_beams", 1) for entry in gen.log]


# --- --num-beams ------------------------------------------------------------------------------------------

def test_the_generative_reader_searches_beams_and_an_api_model_refuses_them(runner, lm):
    record = {"id": "r", "question": "Who won?", "passages": PASSAGES}
    for mode in ("single", "multi"):
        result = run(runner, ["answer", "--reader", "generative", "--model", "m", "--mode", mode, "--num-beams", "4",
                              "--grounding", "none"], [record])
        assert result.exit_code == 0, result.stderr
        assert beams(lm["gen"])[-1] == 4
        assert parse_jsonl(result.stdout)[0]["meta"]["answer"]["num_beams"] == 4
    result = run(runner, ["answer", "--reader", "generative", "--model", "m", "--grounding", "none"], [record])
    assert beams(lm["gen"])[-1] == 1 and "num_beams" not in parse_jsonl(result.stdout)[0]["meta"]["answer"]
    lm["gen"] = ApiLike(_replies)
    result = run(runner, ["answer", "--reader", "generative", "--model", "m", "--num-beams", "4"], [record])
    assert result.exit_code == 1 and "cannot search beams (num_beams=4)" in result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert lm["gen"].prompts == []  # refused before any record was read


def test_qd_searches_beams_and_an_api_model_refuses_them(runner, lm):
    result = run(runner, ["disambiguate", "--method", "qd", "--model", "m", "--num-beams", "3"], [MULTI])
    assert result.exit_code == 0, result.stderr
    assert beams(lm["gen"]) == [3, 3] and parse_jsonl(result.stdout)[0]["meta"]["disambiguate"]["num_beams"] == 3
    lm["gen"] = ApiLike(_replies)
    result = run(runner, ["disambiguate", "--method", "qd", "--model", "m", "--num-beams", "3"], [MULTI])
    assert result.exit_code == 1 and "cannot search beams (num_beams=3)" in result.stderr
    assert "Traceback" not in result.stderr and lm["gen"].prompts == []


def test_the_presets_decode_as_the_papers_did():
    from cqtools import presets

    assert presets.values("ambigqa", "answer")["num_beams"] == 4
    assert presets.values("ambigqa", "disambiguate")["num_beams"] == 4
    assert presets.values("askcq", "answer")["num_beams"] == 4
    assert presets.values("refuel", "answer")["qd_num_beams"] == 4
    rows = {(p, r.command, r.option): r for p in ("ambigqa", "askcq", "refuel") for r in presets.get(p).settings}
    for key in (("ambigqa", "answer", "num_beams"), ("ambigqa", "disambiguate", "num_beams"),
                ("askcq", "answer", "num_beams"), ("refuel", "answer", "qd_num_beams")):
        assert rows[key].applies == presets.METHOD and "num_beams=4" in rows[key].source and "@" in rows[key].source
    assert rows[("refuel", "answer", "qd_layout")].applies == presets.LAYOUT


def test_a_preset_decodes_a_local_model_with_beams_and_an_api_model_greedily_saying_so(runner, lm):
    result = run(runner, ["disambiguate", "--preset", "ambigqa", "--model", "m"], [MULTI])
    assert result.exit_code == 0, result.stderr
    assert beams(lm["gen"]) == [4, 4]
    out = parse_jsonl(result.stdout)[0]["meta"]
    assert out["disambiguate"]["num_beams"] == 4 and "num_beams" in out["preset_rows"]["disambiguate"]["applied"]
    # an API model: the preset's beams are not applied (a warning, and the record says so), not an error
    lm["gen"] = ApiLike(_replies)
    result = runner.invoke(cli, ["disambiguate", "--preset", "ambigqa", "--model", "openai:m"], input=jsonl([MULTI]))
    assert result.exit_code == 0, result.stderr
    assert "num_beams=4 not applied: openai:m is served by an API" in result.stderr
    out = parse_jsonl(result.stdout)[0]["meta"]
    assert "num_beams" not in out["disambiguate"] and out["presets"] == {"disambiguate": "ambigqa"}
    assert "served by an API" in out["preset_rows"]["disambiguate"]["not_applied"]["num_beams"]
    assert "layout" in out["preset_rows"]["disambiguate"]["applied"]


# --- REFUEL's QD input --------------------------------------------------------------------------------------

def test_refuels_dq_writer_reads_the_answer_the_question_and_the_passages_only(runner, lm):
    from cqtools.stages.answer.refuel import QDWriter

    gen = FakeGenerator(_replies)
    QDWriter(gen, layout="refuel", num_beams=4)([("Who won?", ["Ann", "Bob"], PASSAGES)])
    assert beams(gen) == [4, 4]
    query = gen.prompts[0].rsplit("\n\n", 1)[1]
    assert query.startswith("Answer: Ann\nQuestion: Who won?\nPassage: T0: ") and "Other answers" not in gen.prompts[0]
    QDWriter(gen)([("Who won?", ["Ann", "Bob"], PASSAGES)])  # the other layout, under its own name: ambigqa's
    assert "Answer: Ann\nQuestion: Who won?\nOther answers: Bob\nPassage: T0: " in gen.prompts[-2]
    # the refuel preset writes its DQs so, with beam 4, and says so in meta.answer
    result = run(runner, ["answer", "--preset", "refuel", "--model", "m", "--verify-threshold", "-1e9",
                          "--max-passage-tokens", "200"],
                 [{"id": "r", "question": "Who won?", "passages": PASSAGES}])
    assert result.exit_code == 0, result.stderr
    dq_prompts = [e for e in lm["gen"].log if e["prompt"].rstrip().endswith("Rewritten question:")]
    assert dq_prompts and all(e.get("num_beams") == 4 and "Other answers" not in e["prompt"] for e in dq_prompts)
    meta = parse_jsonl(result.stdout)[0]["meta"]["answer"]
    assert meta["qd_layout"] == "refuel" and meta["qd_num_beams"] == 4


def test_qd_takes_refuels_layout():
    from cqtools.stages.prompts_disamb import qd_prompt

    text = qd_prompt("Who won?", "Ann", ["Bob"], ["T0: text"], None, "refuel")
    assert text == "Answer: Ann\nQuestion: Who won?\nPassage: T0: text\nRewritten question:"


# --- which rows applied -------------------------------------------------------------------------------------

def test_the_record_says_which_of_the_presets_rows_applied(runner, lm):
    """Another mode than the preset's drops its method rows: meta.preset_rows says which rows applied and why
    the others did not, from the CLI and from Python alike."""
    from cqtools import presets

    record = {"id": "r", "question": "Who won?", "passages": PASSAGES}
    result = run(runner, ["answer", "--preset", "refuel", "--mode", "single", "--model", "m",
                          "--max-passage-tokens", "200"], [record])
    assert result.exit_code == 0, result.stderr
    out = parse_jsonl(result.stdout)[0]["meta"]
    rows = out["preset_rows"]["answer"]
    assert out["presets"] == {"answer": "refuel"}
    assert "round_trip" in rows["not_applied"] and "verify_rule" in rows["not_applied"]
    assert rows["not_applied"]["mode"] == rows["not_applied"]["max_passage_tokens"] == "set explicitly"
    assert {"passage_chars", "grounding", "qd_layout"} <= set(rows["applied"])
    assert not set(rows["applied"]) & set(rows["not_applied"])
    stage = presets.stage("refuel", "answer", mode="single", model="m", max_passage_tokens=200)
    assert stage.cq_preset_rows == rows


# --- training reads what inference reads ----------------------------------------------------------------------

def _askcq_tokenizer_model(tiny_seq2seq, tmp_path):
    import shutil

    from transformers import AutoTokenizer

    model = str(tmp_path / "t5-with-bos-eos")  # AskCQ's layout needs sep, bos and eos tokens (BART has them)
    shutil.copytree(tiny_seq2seq, model)
    tokenizer = AutoTokenizer.from_pretrained(model)
    tokenizer.bos_token, tokenizer.eos_token = "[CLS]", "[SEP]"
    return tokenizer


def test_cq_train_gen_cq_trains_on_the_input_cq_gen_cq_generates_from(tiny_seq2seq, tmp_path):
    """--input-layout askcq with a 1,024-token budget: the training input of a record is, character for character,
    what `cq gen-cq --method seq2seq` gives the model for it (whole passages while they fit, not 3 cut to 60
    words), and the batch encoder cuts inputs at the budget, not at 384 tokens."""
    from types import SimpleNamespace

    from cqtools.stages import evidence, gen_cq as gen_stage
    from cqtools.train.cq_generator import batch_encoder, cq_examples

    tokenizer = _askcq_tokenizer_model(tiny_seq2seq, tmp_path)
    words = " ".join(f"word{i}" for i in range(90))
    record = {"id": "r", "question": "Who won?", "passages": [{"title": f"T{n}", "text": words} for n in range(40)],
              "gold": {"answers": [["Ann"], ["Bob"]], "cq": "Which year: 2001, or 2002?"}}
    reads = SimpleNamespace(tokenizer=tokenizer, name="tiny")
    build = gen_stage.input_builder(reads, "askcq")
    [(source, _, _)], _ = cq_examples([dict(record)], 100, "gold", build_input=build, max_passage_tokens=1024,
                                      count=evidence.token_counter(reads))
    gen = FakeGenerator("Which year: 2001, or 2002?", kind="seq2seq")
    gen.tokenizer = tokenizer
    options = gen_stage.Seq2SeqOptions(model="m", n_passages=100, with_answers="gold", max_passage_tokens=1024,
                                       input_layout="askcq")
    gen_stage.seq2seq_method(gen, options).run([dict(record)])
    assert gen.prompts == [source]
    assert "word89" in source and source.count("word0 ") > 3  # whole passages, more than 3 of them
    ids = batch_encoder(tokenizer, True, tokenizer.eos_token_id, 1024)([(source, "Which year?", record)])["input_ids"]
    assert 384 < ids.shape[1] <= 1024


def test_the_askcq_layout_trains_with_the_releases_settings_unless_set():
    from cqtools.train import GenCQTrainConfig
    from cqtools.train.cq_generator import layout_defaults

    base = {"train": "t.jsonl", "dev": "d.jsonl", "model": "m", "out": "o"}
    askcq = layout_defaults(GenCQTrainConfig(**base, input_layout="askcq"))
    assert (askcq.lr, askcq.batch_size, askcq.passages, askcq.max_passage_tokens) == (1e-5, 10, 100, 1024)
    # batches of 10 summed over 2, dev every 500 batches (250 steps), stopped after 10 without gain (issue 48)
    assert (askcq.grad_accum, askcq.eval_every, askcq.patience) == (2, 250, 10)
    cq = layout_defaults(GenCQTrainConfig(**base))
    assert (cq.lr, cq.batch_size, cq.passages, cq.max_passage_tokens) == (5e-5, 8, 3, None)  # as before
    assert (cq.grad_accum, cq.eval_every, cq.patience) == (1, None, None)
    given = layout_defaults(GenCQTrainConfig(**base, input_layout="askcq", lr=3e-5, passages=5))
    assert (given.lr, given.passages, given.max_passage_tokens) == (3e-5, 5, 1024)


# --- a prompt over the model's input loses whole passages, and the record says so ----------------------------

LONG = [{"id": f"p{n}", "title": f"T{n}", "text": " ".join(f"w{n}x{i}" for i in range(100))} for n in range(6)]


def _short_context(replies, context: int):
    gen = FakeGenerator(replies, name="short")
    gen.context = context  # the model's input limit (tokens counted as 4 characters without a tokenizer)
    return gen


def test_qd_drops_whole_passages_from_a_prompt_over_the_input_and_notes_how_many(runner, lm):
    lm["gen"] = gen = _short_context(_replies, 700)
    record = {**MULTI, "passages": LONG}
    result = run(runner, ["disambiguate", "--method", "qd", "--model", "m", "--passages", "6", "--passage-words",
                          "100"], [record])
    assert result.exit_code == 0, result.stderr
    meta = parse_jsonl(result.stdout)[0]["meta"]
    cut = meta["passages_cut"]["disambiguate"]
    assert len(cut) == 2 and all(0 < c < 6 for c in cut)
    for prompt, c in zip(gen.prompts, cut):
        assert -(-len(prompt) // 4) <= 700 - 40 - 2  # within the input, less the DQ's tokens
        shown = [line for line in prompt.splitlines() if line.startswith("Passage: T")]
        assert len(shown) == 6 - c and all(line.endswith("x99") for line in shown)  # each passage whole
    # a model with room for all: nothing dropped, nothing noted
    lm["gen"] = _short_context(_replies, 100_000)
    result = run(runner, ["disambiguate", "--method", "qd", "--model", "m", "--passages", "6"], [record])
    assert "passages_cut" not in parse_jsonl(result.stdout)[0]["meta"]


def test_the_reader_and_refuels_writer_drop_whole_passages_and_note_them(runner, lm):
    lm["gen"] = gen = _short_context(_replies, 600)
    record = {"id": "r", "question": "Who won?", "passages": LONG}
    result = run(runner, ["answer", "--reader", "generative", "--model", "m", "--passages", "6", "--grounding", "none",
                          "--passage-chars", "0"], [record])
    assert result.exit_code == 0, result.stderr
    cut = parse_jsonl(result.stdout)[0]["meta"]["passages_cut"]["answer"]
    assert 0 < cut < 6 and gen.prompts[-1].count("x99") == 6 - cut
    assert -(-len(gen.prompts[-1]) // 4) <= 600 - 16 - 2
    # REFUEL's round trip: its DQ writer fits passages to its context by their text, and the "Passage: " lines
    # around 100 short passages put the prompt over: the last ones are dropped whole, noted as answer-qd
    lm["gen"] = gen = _short_context(_replies, 2000)
    short = [{"id": f"s{n}", "title": f"S{n}", "text": " ".join(f"v{n}y{i}" for i in range(12))} for n in range(100)]
    result = run(runner, ["answer", "--preset", "refuel", "--model", "m", "--verify-threshold", "-1e9"],
                 [{"id": "r", "question": "Who won?", "passages": short}])
    assert result.exit_code == 0, result.stderr
    assert parse_jsonl(result.stdout)[0]["meta"]["passages_cut"]["answer-qd"] > 0
    dq_prompts = [p for p in gen.prompts if p.rstrip().endswith("Rewritten question:")]
    assert dq_prompts and all(-(-len(p) // 4) <= 2000 - 40 - 2 for p in dq_prompts)


def test_a_stage_where_every_row_of_the_preset_was_dropped_says_none_applied(runner):
    """`cq detect --preset clam --method never`: meta.presets still names clam (the stage ran under it), and
    meta.preset_rows says that none of its rows applied, and why."""
    result = run(runner, ["detect", "--preset", "clam", "--method", "never"], [{"id": "r", "question": "Who won?"}])
    assert result.exit_code == 0, result.stderr
    meta = parse_jsonl(result.stdout)[0]["meta"]
    assert meta["presets"] == {"detect": "clam"}
    assert meta["preset_rows"]["detect"] == {"applied": [], "not_applied": {
        "method": "set explicitly", "threshold": "not an option of the method that runs"}}


# --- README's "Reproduce a paper": the papers' pipelines ----------------------------------------------------

def _pipelines() -> dict:
    from cqtools import presets
    from cqtools.docgen_readme import _pipeline

    return {name: _pipeline(name, presets.get(name)) for name in presets.names()}


def test_the_readme_pipelines_are_the_papers():
    """Each preset's block runs the paper's pipeline: AmbigQA and REFUEL rerank 100 dense hits, ToC draws kNN
    demos (--shots), CLAM evaluates one record per interpretation (oracle --expand), AskCQ's predicted answers
    are AmbigQA's (SpanSeqGen's) reading, DISAMBIG-FIRST names its reader."""
    blocks = _pipelines()
    for name in ("ambigqa", "refuel"):
        assert blocks[name].startswith("cq retrieve --index IDX --method dense --hits 100 < questions.jsonl "
                                       "| cq rerank --top 100")
    assert "cq disambiguate --preset toc --shots ASQA_TRAIN" in blocks["toc"]
    assert blocks["clam"].startswith("cq oracle --expand < questions.jsonl | cq detect --preset clam")
    assert "cq oracle --preset clam" in blocks["clam"] and blocks["clam"].count("cq detect") == 1
    steps = [s.strip() for s in blocks["askcq"].replace("\\\n", "").split("|")]
    assert steps.index("cq answer --preset ambigqa") < steps.index("cq gen-cq --preset askcq --model GENERATOR_DIR")
    assert "cq answer --preset disambig-first --index IDX --reader extractive" in blocks["disambig-first"]


def test_every_command_of_the_readme_pipelines_parses(tmp_path):
    """Every stage of every block is a command cq accepts with those options and values (placeholders filled)."""
    import shlex

    import click

    from cqtools.cli import cli

    shots = tmp_path / "shots.jsonl"
    shots.write_text('{"id": "s", "question": "q?"}\n')
    fill = {"IDX": str(tmp_path), "CLASSIFIER_DIR": str(tmp_path), "GENERATOR_DIR": str(tmp_path),
            "ASQA_TRAIN": str(shots)}
    for name, block in _pipelines().items():
        for step in block.replace("\\\n", "").split("|"):
            words = [fill.get(w, w) for w in shlex.split(step.split("<")[0])]
            assert words[0] == "cq", step
            command = cli.get_command(None, words[1])
            assert command is not None, f"{name}: {step}"
            # parses and checks every option, runs nothing; under cq's own context (its help option names: click
            # keeps a command's help option once made, and docs/cli.md is generated from it)
            parent = click.Context(cli, info_name="cq", **cli.context_settings)
            with command.make_context(words[1], words[2:], parent=parent):
                pass
