"""`cq gen-cq` as AskCQ runs it (issue 24): answers in every CQ method's input, AskCQ's input layout
against the released CQDataset.py (fixtures/released/askcq_cq/), passages up to a token budget, beam
search, the "A, or B" form, CQ heads other than "Which", and `cq train gen-cq` on gold CQs."""
import json
from types import SimpleNamespace

import pytest

from cqtools.cli import cli
from cqtools.stages.gen_cq.form import canonical_cq, in_form, repair

from .conftest import FIXTURES, jsonl, parse_jsonl
from .fakes import FakeGenerator

CASES = json.loads((FIXTURES / "released" / "askcq_cq" / "cqg_inputs.json").read_text())["cases"]


class WordTokenizer:
    """BART's special tokens over whitespace words (the stand-in the released code was run with):
    a callable counting tokens, like a Hugging Face tokenizer."""

    sep_token, bos_token, eos_token = "</s>", "<s>", "</s>"

    def tokens(self, text: str) -> list[str]:
        for special in ("<s>", "</s>"):
            text = text.replace(special, f" {special} ")
        return text.split()

    def __call__(self, text, add_special_tokens=True, verbose=False):
        return SimpleNamespace(input_ids=self.tokens(text))


def fake_model(monkeypatch, fake):
    from cqtools.models import load as loader

    monkeypatch.setattr(loader, "load_generator", lambda name, device="auto", dtype="auto", kind="auto", config=None: fake)
    return fake


def gen(runner, records, *args):
    return runner.invoke(cli, ["gen-cq", *args], input=jsonl(records))


def cq_record(case: dict) -> dict:
    """The case's AskCQ record in cq's schema: passages without titles, gold answers, predicted answers."""
    askcq = case["askcq_record"]
    record = {"id": case["id"], "question": askcq["question"],
              "passages": [{"id": f"p{i}", "title": "", "text": t} for i, t in enumerate(case["passages"])],
              "gold": {"ambiguous": True, "answers": askcq["clarification_answers"]}}
    if case["pred_answers"]:
        record["answers"] = [{"text": a} for a in case["pred_answers"].split("<SEP>")]
    return record


WITH = {"with_groundtruth_answers": ["--with-answers", "gold"], "with_predicted_answers": ["--with-answers", "pred"],
        "without_answers": []}


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_seq2seq_askcq_layout_is_the_released_cqdataset_input(runner, monkeypatch, case):
    tok = WordTokenizer()
    fake = fake_model(monkeypatch, FakeGenerator("Which film: A, or B?", kind="seq2seq"))
    fake.tokenizer = tok
    result = gen(runner, [cq_record(case)], "--method", "seq2seq", "--model", "m", "--input-layout", "askcq",
                 "--max-passage-tokens", "1024", "--passages", "100", *WITH[case["MA_type"]])
    assert result.exit_code == 0, result.stderr
    # the tokenizer adds "<s>" before the text and "</s>" after it, as BART's does
    assert tok.tokens("<s>" + fake.prompts[0] + "</s>") == case["released_input_tokens"]
    out = parse_jsonl(result.stdout)[0]
    assert out["meta"]["passages_read"]["gen-cq"] == len(case["passages"])
    assert out["meta"]["gen_cq"]["input_layout"] == "askcq" and out["meta"]["gen_cq"]["max_passage_tokens"] == 1024


def test_askcq_layout_needs_a_tokenizer_with_separators(runner, monkeypatch):
    fake_model(monkeypatch, FakeGenerator("x", kind="seq2seq"))
    result = gen(runner, [cq_record(CASES[2])], "--method", "seq2seq", "--model", "m", "--input-layout", "askcq")
    assert result.exit_code == 1 and "--input-layout cq" in result.stderr and "Traceback" not in result.stderr


def budget_record():
    words = lambda n, w: " ".join([w] * n)  # noqa: E731
    return {"id": "b1", "question": "one two three", "answers": [{"text": "alpha"}, {"text": "beta"}],
            "passages": [{"id": "a", "title": "", "text": words(4, "first")},
                         {"id": "b", "title": "", "text": words(4, "second")},
                         {"id": "c", "title": "", "text": words(4, "third")}]}


@pytest.mark.parametrize("budget,read", [(22, 2), (21, 1), (28, 3), (3, 1)])
def test_passages_fill_the_budget_in_order_after_question_and_answers(runner, monkeypatch, budget, read):
    """Question (3 tokens) and answers (2), a separator after each and <s>...</s> around the input take 10
    tokens; each passage takes 4 and its <s>...</s> 2; the first is always read."""
    fake = fake_model(monkeypatch, FakeGenerator("Which one: alpha, or beta?", kind="seq2seq"))
    fake.tokenizer = WordTokenizer()
    result = gen(runner, [budget_record()], "--method", "seq2seq", "--model", "m", "--with-answers", "pred",
                 "--max-passage-tokens", str(budget), "--passages", "10")
    assert result.exit_code == 0, result.stderr
    shown = ["first first first first", "second second second second", "third third third third"][:read]
    assert fake.prompts == ["one two three [SEP] alpha | beta [SEP] " + " ".join(shown)]
    assert parse_jsonl(result.stdout)[0]["meta"]["passages_read"]["gen-cq"] == read


def test_llm_prompt_shows_pred_and_gold_answers_after_the_question(runner, monkeypatch):
    fake = fake_model(monkeypatch, FakeGenerator(" year: 2024, or 2023?", on=lambda p: p))
    record = {"id": "r1", "question": "Who won the Tour?", "answers": [{"text": "Pogacar"}, {"text": "Vingegaard"}],
              "gold": {"answers": [["Tadej Pogacar", "Pogacar"], ["Jonas Vingegaard"]]},
              "passages": [{"id": "p", "title": "T", "text": "some text"}]}
    for source, line in (("pred", "Answers: Pogacar; Vingegaard\n"), ("gold", "Answers: Tadej Pogacar; Jonas Vingegaard\n")):
        result = gen(runner, [record], "--method", "llm", "--model", "m", "--with-answers", source)
        assert result.exit_code == 0, result.stderr
        assert fake.prompts[-1].endswith("Question: Who won the Tour?\n" + line + "Passage: T: some text\n"
                                         "Clarifying question: Which")
        assert "Answers: Tadej Pogacar; Jonas Vingegaard\nPassage: Tadej Pogacar won" in fake.prompts[-1]  # the shots
        assert parse_jsonl(result.stdout)[0]["meta"]["gen_cq"]["with_answers"] == source
    result = gen(runner, [record], "--method", "llm", "--model", "m", "--zero-shot", "--with-answers", "pred")
    assert result.exit_code == 0, result.stderr
    assert "Question: Who won the Tour?\nAnswers: Pogacar; Vingegaard\nThis question is ambiguous" in fake.prompts[-1]


def test_num_beams_reach_the_generator_and_an_api_model_refuses_them(runner, monkeypatch):
    fake = fake_model(monkeypatch, FakeGenerator("Which one: a, or b?", kind="seq2seq"))
    record = {"id": "r", "question": "q?"}
    result = gen(runner, [record], "--method", "seq2seq", "--model", "m", "--num-beams", "4", "--max-new-tokens", "32")
    assert result.exit_code == 0, result.stderr
    assert fake.log[-1]["num_beams"] == 4 and fake.log[-1]["max_new_tokens"] == 32
    assert parse_jsonl(result.stdout)[0]["meta"]["gen_cq"]["num_beams"] == 4
    result = gen(runner, [record], "--method", "llm", "--model", "m", "--num-beams", "2")
    assert result.exit_code == 0 and fake.log[-1]["num_beams"] == 2

    class ApiLike(FakeGenerator):
        def generate(self, prompts, max_new_tokens=32, chat=None, stop=None, batch_size=None, temperature=0.0,
                     top_p=1.0, seed=None):
            return super().generate(prompts, max_new_tokens, chat, stop, batch_size, temperature, top_p, seed)

    fake_model(monkeypatch, ApiLike("x"))
    result = gen(runner, [record], "--method", "llm", "--model", "m", "--num-beams", "4")
    assert result.exit_code == 1 and "cannot search beams" in result.stderr and "Traceback" not in result.stderr


def test_local_generator_passes_num_beams(monkeypatch):
    """LocalGenerator.generate hands num_beams to Hugging Face's generate (1, greedy, by default)."""
    from cqtools.models import generator as gen_module

    seen = []

    class Model:
        def generate(self, **kwargs):
            import torch

            seen.append(kwargs["num_beams"])
            return torch.tensor([[5]])

    class Tok:
        def __call__(self, text, add_special_tokens=True, verbose=False):
            return SimpleNamespace(input_ids=[1, 2])

        def decode(self, row, skip_special_tokens=True):
            return "Which one: a or b?"

    local = gen_module.LocalGenerator.__new__(gen_module.LocalGenerator)
    local.__dict__.update(tokenizer=Tok(), model=Model(), kind="seq2seq", has_chat=False, context=512, input_cap=None,
                          padded=False, cache=None, batch_size=1, device="cpu", pad_id=0, name="m")
    monkeypatch.setattr(gen_module, "_stop_criteria", lambda *a: None)
    local.generate(["p"], max_new_tokens=4)
    local.generate(["p"], max_new_tokens=4, num_beams=4)
    assert seen == [1, 4]


def test_two_options_in_the_askcq_form():
    cq = canonical_cq("Which film", ["The Dark Knight", "Joker"], "llm")
    assert cq["text"] == "Which film: The Dark Knight or Joker?"
    assert in_form(cq, "comma")["text"] == "Which film: The Dark Knight, or Joker?"
    three = canonical_cq("Which film", ["A", "B", "C"], "llm")
    assert in_form(three, "comma") == three
    free = {"text": "Do you mean A or B?", "category": "one", "options": ["A", "B"], "method": "llm-zero-shot",
            "valid": False}
    assert in_form(free, "comma") == free


def test_from_dqs_and_llm_write_two_options_in_the_askcq_form(runner, monkeypatch):
    record = {"id": "g", "question": "What is the capital of Georgia?",
              "gold": {"ambiguous": True, "dqs": [{"question": "What is the capital of the country Georgia?"},
                                                  {"question": "What is the capital of the US state of Georgia?"}]}}
    result = gen(runner, [record], "--method", "from-dqs", "--all", "--two-options", "comma")
    assert result.exit_code == 0, result.stderr
    assert parse_jsonl(result.stdout)[0]["cq"]["text"].endswith(", or US state?")
    fake_model(monkeypatch, FakeGenerator(" one: the country or the US state?"))
    result = gen(runner, [record], "--method", "llm", "--model", "m", "--two-options", "comma")
    assert parse_jsonl(result.stdout)[0]["cq"]["text"] == "Which one: the country, or the US state?"


@pytest.mark.parametrize("raw,text,category", [
    ("In which context: in the regular seasons, or including the playoffs as well?",
     "In which context: in the regular seasons or including the playoffs as well?", "In which context"),
    ("In terms of what: time, or the number of games?", "In terms of what: time or the number of games?",
     "In terms of what"),
    ("For which type of questions: a typical question, or a final question?",
     "For which type of questions: a typical question or a final question?", "For which type of questions"),
    ("Are you referring to: the film, or the book?", "Are you referring to: the film or the book?",
     "Are you referring to"),
])
def test_heads_other_than_which_are_kept(raw, text, category):
    cq = repair(raw, "seq2seq")
    assert (cq["text"], cq["category"], cq["valid"]) == (text, category, True)


def test_no_primer_lets_the_model_write_any_head(runner, monkeypatch):
    fake = fake_model(monkeypatch, FakeGenerator(" In terms of what: time, or the number of games?"))
    record = {"id": "m", "question": "Who is the longest serving manager?"}
    result = gen(runner, [record], "--method", "llm", "--model", "m", "--no-primer", "--two-options", "comma")
    assert result.exit_code == 0, result.stderr
    assert fake.prompts[-1].endswith("Clarifying question:")
    out = parse_jsonl(result.stdout)[0]
    assert out["cq"]["text"] == "In terms of what: time, or the number of games?" and out["cq"]["valid"]
    assert out["meta"]["gen_cq"]["primer"] is False


# --- cq train gen-cq: gold CQs where the records have them ----------------------------------------

def training_records(questions):
    """Two records with a gold CQ (CAmbigNQ's) and one with gold DQs only."""
    from cqtools.data.formats import cambignq

    gold = list(cambignq(str(FIXTURES / "cambignq.json")))[:2]
    silver = next(q for q in questions if len((q.get("gold") or {}).get("dqs") or []) >= 2 or q["gold"].get("annotations"))
    silver = {**silver, "gold": {k: v for k, v in silver["gold"].items() if k != "cq"}}
    return gold, silver


def test_train_examples_use_gold_cqs_where_present(questions):
    from cqtools.train.cq_generator import cq_examples

    gold, silver = training_records(questions)
    examples, counts = cq_examples([*gold, silver], 0, None)
    assert counts == {"gold_cq": 2, "silver_cq": 1}
    assert [t for _, t, _ in examples[:2]] == [r["gold"]["cq"] for r in gold]
    assert examples[2][1].startswith("Which ") and examples[2][1] != silver["gold"].get("cq")
    examples, counts = cq_examples([*gold, silver], 0, None, "silver")
    assert counts["gold_cq"] == 0 and [t for _, t, _ in examples[:2]] != [r["gold"]["cq"] for r in gold]


@pytest.mark.heavy(reason="trains a tiny seq2seq")
def test_train_gen_cq_reports_gold_and_silver_targets(runner, tmp_path, tiny_seq2seq, questions):
    gold, silver = training_records(questions)
    path = tmp_path / "train.jsonl"
    path.write_text(jsonl([*gold, silver]))
    out = str(tmp_path / "gencq")
    result = runner.invoke(cli, ["train", "gen-cq", "--model", tiny_seq2seq, "--train", str(path), "--dev", str(path),
                                 "--out", out, "--max-steps", "1", "--batch-size", "3", "--passages", "0"])
    assert result.exit_code == 0, result.stderr
    card = json.loads((tmp_path / "gencq" / "cq_train.json").read_text())
    assert card["targets"]["train"] == {"gold_cq": 2, "silver_cq": 1} and card["config"]["targets"] == "auto"


@pytest.mark.heavy(reason="trains a tiny seq2seq")
def test_train_gen_cq_in_askcq_layout_and_gen_cq_reads_it_from_the_model(runner, tmp_path, tiny_seq2seq, questions):
    """`cq train gen-cq --input-layout askcq --two-options comma` (issue 24): the inputs it trains on are the ones
    `cq gen-cq --input-layout askcq` writes, its silver targets use "A, or B", and cq gen-cq reads the layout
    from the model's cq_train.json."""
    from types import SimpleNamespace

    from transformers import AutoTokenizer

    from cqtools.stages import gen_cq as gen_stage
    from cqtools.train.cq_generator import cq_examples

    import shutil

    model = str(tmp_path / "t5-with-bos-eos")  # AskCQ's layout needs sep, bos and eos tokens (BART has them)
    shutil.copytree(tiny_seq2seq, model)
    tokenizer = AutoTokenizer.from_pretrained(model)
    tokenizer.bos_token, tokenizer.eos_token = "[CLS]", "[SEP]"
    tokenizer.save_pretrained(model)
    gold, silver = training_records(questions)
    two = {**silver, "gold": {**silver["gold"], "dqs": silver["gold"]["dqs"][:2]}} if silver["gold"].get("dqs") else silver
    build = gen_stage.input_builder(SimpleNamespace(tokenizer=tokenizer, name="tiny"), "askcq")
    examples, _ = cq_examples([two], 0, None, build_input=build, two_options="comma")
    assert examples[0][0] == gen_stage.askcq_input(two["question"], [], None, gen_stage.special_tokens(
        SimpleNamespace(tokenizer=tokenizer)))
    if len(gen_stage.gold_dq_questions(two)) == 2:
        assert ", or " in examples[0][1]
    path = tmp_path / "train.jsonl"
    path.write_text(jsonl([*gold, silver]))
    out = str(tmp_path / "gencq")
    result = runner.invoke(cli, ["train", "gen-cq", "--model", model, "--train", str(path), "--dev", str(path),
                                 "--out", out, "--max-steps", "1", "--batch-size", "3", "--passages", "0",
                                 "--input-layout", "askcq", "--two-options", "comma"])
    assert result.exit_code == 0, result.stderr
    card = json.loads((tmp_path / "gencq" / "cq_train.json").read_text())
    assert (card["config"]["input_layout"], card["config"]["two_options"]) == ("askcq", "comma")
    generated = runner.invoke(cli, ["gen-cq", "--method", "seq2seq", "--model", out, "--all", "--passages", "0",
                                    "--max-new-tokens", "4", "-q"], input=jsonl([silver]))
    assert generated.exit_code == 0, generated.stderr
    assert parse_jsonl(generated.stdout)[0]["meta"]["gen_cq"]["input_layout"] == "askcq"


def test_every_cq_train_command_a_preset_names_parses(tmp_path):
    """docs/methods.md says how to train what a preset needs (issue 35 item 4: one consistent account of the
    AskCQ generator): every `cq train ...` command written in a preset's rows or departures is one that
    `cq train` accepts, options and values (an option the trainer lacks, or a bad choice, fails here)."""
    import re

    import click

    from cqtools import presets

    train = tmp_path / "train.jsonl"
    train.write_text("")
    found = 0
    for name in presets.names():
        preset = presets.get(name)
        texts = [*preset.departures, *(s.differs for s in preset.settings), *(s.source for s in preset.settings)]
        for text in texts:
            for sub, args in re.findall(r"`cq train ([a-z-]+)((?: --?[a-z-]+(?: [^\s`-]+)?)*)`", text):
                group = cli.get_command(click.Context(cli), "train")
                command = group.get_command(click.Context(group), sub)
                argv = [*args.split(), "--train", str(train), "--out", str(tmp_path / "out")]
                try:
                    command.make_context(f"cq train {sub}", argv)
                except click.UsageError as err:
                    pytest.fail(f"preset {name}: `cq train {sub}{args}` does not parse: {err}")
                found += 1
    assert found, "no `cq train ...` command with options found in the presets"
