"""The models cq ships (cqtools/shipped/, issue 25): compact, carded, and what a fresh install's cq uses
where nothing was trained here (the tests' CQ_MODELS is an empty directory, as on a fresh clone)."""
import json
import os

import pytest

from cqtools.config import RunConfig

from cqtools.cli import cli
from cqtools.errors import ResourceError
from cqtools.models import compact
from cqtools.models.roles import SHIPPED_DIR, installed_classifier, installed_reader, role

from .conftest import jsonl, parse_jsonl
from .conftest_models import bm25_index  # noqa: F401

NAMES = ("detect", "reader")


@pytest.mark.parametrize("name", NAMES)
def test_each_shipped_model_is_compact_small_and_has_a_card(name):
    folder = os.path.join(SHIPPED_DIR, name)
    assert compact.is_compact(folder)
    # issue 25 asked "at most ~30 MB" each; the reader is the 12-layer ms-marco MiniLM at int8 (33.7 MB, issue 56
    # item 1: it won on held-out questions), so the bound is 35 MB: a larger model still fails here
    assert os.path.getsize(os.path.join(folder, compact.WEIGHTS)) <= 35e6
    card = open(os.path.join(folder, "README.md")).read()
    for needed in ("**Data**", "**Command**", "seed 0", "**Validation**", "[", "**Rebuild**", "sha256"):
        assert needed in card, needed
    report = json.load(open(os.path.join(folder, "cq_train.json")))
    assert report["stopped"] != "" and "time limit" not in report["stopped"]  # a step budget, not the clock


def test_a_fresh_install_uses_the_shipped_classifier_and_reader(tmp_path, monkeypatch):
    assert installed_classifier(RunConfig.from_env()) == os.path.join(SHIPPED_DIR, "detect")
    assert installed_reader(RunConfig.from_env()) == os.path.join(SHIPPED_DIR, "reader")
    assert role("classifier").model(RunConfig.from_env()) == os.path.join(SHIPPED_DIR, "detect")
    # a model trained here (CQ_MODELS) wins over the shipped one; a folder that is not a model is an error,
    # never silently passed over for the shipped one (issue 36, item 3)
    trained = tmp_path / "detect"
    trained.mkdir()
    (trained / "config.json").write_text(json.dumps({"architectures": ["BertForSequenceClassification"]}))
    monkeypatch.setenv("CQ_MODELS", str(tmp_path))
    assert installed_classifier(RunConfig.from_env()) == str(trained)
    (trained / "config.json").write_text(json.dumps({"architectures": ["BertForMaskedLM"]}))
    with pytest.raises(ResourceError, match="is not a `cq train detect` model"):
        installed_classifier(RunConfig.from_env())


def test_cq_detect_defaults_to_the_shipped_classifier_as_it_was_trained(runner, questions):
    result = runner.invoke(cli, ["detect", "-q"], input=jsonl(questions[:4]))
    assert result.exit_code == 0, result.stderr
    for record in parse_jsonl(result.stdout):
        meta = record["meta"]["detect"]
        assert record["ambiguity"]["method"] == "classifier" and 0.0 <= record["ambiguity"]["score"] <= 1.0
        assert meta["model"] == os.path.join(SHIPPED_DIR, "detect")
        assert meta["passages"] == 0 and meta["max_length"] == 48  # as cq_train.json says it was trained


def test_the_shipped_reader_reads_a_span_of_the_passage_it_is_given(runner, questions):
    """The shipped reader loads from its compact weights and reads answers off the passages: issue 25's fixture
    targets (the capital of Australia from the Canberra passage, of Georgia from the Tbilisi passage; the reader
    shipped before answered "Sydney" and "Kura River") and two more. docs/benchmarks/shipped.md has its F1."""
    from cqtools.records import PASSAGES

    corpus = {p["title"]: p for p in map(json.loads, open(os.path.join(os.path.dirname(__file__), "..", "fixtures",
                                                                      "corpus.jsonl")))}
    wanted = {"fx02": ("The Lord of the Rings", "J. R. R. Tolkien"),
              "fx05": ("Canberra", "Canberra"), "fx06": ("Tbilisi", "Tbilisi"),
              "fx08": ("Hallelujah (Leonard Cohen song)", "Leonard Cohen")}
    records = [{**r, PASSAGES: [{**corpus[wanted[r["id"]][0]], "score": 1.0}]} for r in questions if r["id"] in wanted]
    result = runner.invoke(cli, ["answer", "--mode", "single", "-q"], input=jsonl(records))
    assert result.exit_code == 0, result.stderr
    got = parse_jsonl(result.stdout)
    assert len(got) == len(wanted)
    for record in got:
        assert record["meta"]["answer"]["model"] == os.path.join(SHIPPED_DIR, "reader")
        assert record["answers"][0]["text"] == wanted[record["id"]][1], record["id"]


def test_an_options_reading_may_answer_with_the_options_own_words(runner, questions):
    """cq mode reads "Who sang Hallelujah?, Which one: Hallelujah (Leonard Cohen song)": the option's words are
    not the question's own, so "Leonard Cohen" stays an answer (skipped as the question's words before, and the
    reader then answered "Leonard Cohen and first released on his 1984 album Various")."""
    from cqtools.records import PASSAGES

    corpus = {p["title"]: p for p in map(json.loads, open(os.path.join(os.path.dirname(__file__), "..", "fixtures",
                                                                      "corpus.jsonl")))}
    [record] = [r for r in questions if r["id"] == "fx08"]
    titles = ["Hallelujah (Leonard Cohen song)", "Grace (Jeff Buckley album)"]
    passages = [{**corpus[t], "score": 1.0} for t in titles]
    record = {**record, PASSAGES: passages,
              "cq": {"question": "Which one?", "options": titles, "option_passages": [[p["id"]] for p in passages]}}
    result = runner.invoke(cli, ["answer", "--mode", "cq", "-q"], input=jsonl([record]))
    assert result.exit_code == 0, result.stderr
    [got] = parse_jsonl(result.stdout)
    assert [(a["option"], a["text"]) for a in got["answers"]] == [(titles[0], "Leonard Cohen"),
                                                                  (titles[1], "Jeff Buckley")]


def test_cq_chat_with_the_shipped_reader_answers_what_the_corpus_holds_and_says_when_it_does_not(
        runner, bm25_index, tmp_path):
    """End to end (issue 25, item 12): a typed session over the fixture corpus with cq chat's default reader.
    The corpus has no passage on mercury: the turn says the answer is not a sure one."""
    from cqtools.chat import NO_ANSWER
    from cqtools.records import LOW_NOTE

    script = tmp_path / "turns.txt"
    script.write_text("What is the boiling point of mercury?\nWho sang Hallelujah?\n")
    log = tmp_path / "log.jsonl"
    result = runner.invoke(cli, ["chat", "--index", bm25_index, "--retrieve", "bm25", "--detect", "never",
                                 "--script", str(script), "--log", str(log), "-q"])
    assert result.exit_code == 0, result.stderr
    shown = result.stdout
    first, second = shown.split("question> Who sang")
    # issue 56 item 3: a span of the question's first passage under "no answer" is labelled low confidence, not
    # "no passage answers this"; either way the turn must not present it as a sure answer
    # (the 12-layer reader scores "100" of the water passage over "no answer"; no passage it read mentions mercury,
    # so the answer is a low-confidence reading all the same: extractive.unmatched_words)
    assert (f"answer: {NO_ANSWER} (the reader's best guess:" in first or f"({LOW_NOTE})" in first
            or "(low confidence: no passage it read mentions 'mercury')" in first)
    assert "answer: Leonard Cohen" in second and NO_ANSWER not in second
    turns = parse_jsonl(log.read_text())
    assert [t["meta"]["answer"]["reader"] for t in turns] == ["extractive", "extractive"]
