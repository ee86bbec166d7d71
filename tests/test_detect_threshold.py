"""Issue 56 item 2: the classifier's default threshold is chosen on held-out visible dev questions
(bench/detect_threshold.py) and stored with the model (cq_threshold.json); --threshold still wins."""
import json
import shutil
from pathlib import Path

import pytest

from cqtools.cli import cli
from cqtools.stages.detect import FALLBACK_THRESHOLD, THRESHOLD_FILE, stored_threshold

from .conftest import parse_jsonl

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "cqtools" / "shipped" / "detect"
RECORDS = '{"id": "a", "question": "Who played Joker?"}\n{"id": "b", "question": "What is 2 + 2?"}\n'


@pytest.fixture
def classifier_dir(tiny_classifier, tmp_path) -> Path:
    out = tmp_path / "clf"
    shutil.copytree(tiny_classifier, out)
    return out


def detect(runner, model: Path, *extra: str) -> list[dict]:
    result = runner.invoke(cli, ["detect", "--method", "classifier", "--model", str(model), "-q", *extra],
                           input=RECORDS)
    assert result.exit_code == 0, result.output
    return parse_jsonl(result.stdout)


def test_the_stored_threshold_is_the_default_and_the_flag_wins(runner, classifier_dir):
    assert {r["ambiguity"]["threshold"] for r in detect(runner, classifier_dir)} == {FALLBACK_THRESHOLD}
    (classifier_dir / THRESHOLD_FILE).write_text(json.dumps({"threshold": 0.15}))
    out = detect(runner, classifier_dir)
    assert {r["ambiguity"]["threshold"] for r in out} == {0.15}
    assert all(r["ambiguity"]["label"] == (r["ambiguity"]["score"] > 0.15) for r in out)
    assert out[0]["meta"]["detect"]["threshold_from"] == THRESHOLD_FILE
    flagged = detect(runner, classifier_dir, "--threshold", "0.9")
    assert {r["ambiguity"]["threshold"] for r in flagged} == {0.9}
    assert flagged[0]["meta"]["detect"]["threshold_from"] == "--threshold"


@pytest.mark.parametrize("text", ['{"threshold": "low"}', "{}", "not json"])
def test_a_broken_threshold_file_is_a_one_line_error(runner, classifier_dir, text):
    (classifier_dir / THRESHOLD_FILE).write_text(text)
    result = runner.invoke(cli, ["detect", "--method", "classifier", "--model", str(classifier_dir), "-q"],
                           input=RECORDS)
    assert result.exit_code != 0
    assert THRESHOLD_FILE in result.output and "Traceback" not in result.output


def test_the_shipped_classifier_carries_its_held_out_threshold():
    """The shipped file says what it was chosen on; its value beats 0.5 there, and compacting keeps it."""
    from cqtools.models.compact import COPIED

    stored = json.loads((SHIPPED / THRESHOLD_FILE).read_text())
    assert stored_threshold(str(SHIPPED)) == (stored["threshold"], THRESHOLD_FILE)
    assert stored["f1"] >= stored["sweep"]["0.5"] and stored["f1"] > stored["always_f1"]
    assert "uncovered" in stored["chosen_on"] and stored["questions"] >= 300
    assert THRESHOLD_FILE in COPIED


def test_choose_takes_the_best_f1_and_the_lowest_cut_on_ties():
    import sys

    sys.path.insert(0, str(ROOT))
    from bench.detect_threshold import choose

    labels = [True, True, False, False]
    chosen = choose(labels, [0.9, 0.6, 0.4, 0.1])
    assert chosen["threshold"] == 0.4 and chosen["f1"] == 1.0 and chosen["always_f1"] == round(2 / 3, 4)


def test_the_fit_set_is_rebuilt_from_the_data_and_ships_with_the_models():
    """`make calibrate-detect` rebuilds the shipped threshold's fit set (its ids' sha256 matches) before
    ship-models compacts the classifier."""
    import hashlib
    import sys

    sys.path.insert(0, str(ROOT))
    from bench import detect_threshold as dt

    makefile = (ROOT / "Makefile").read_text()
    assert "bench/detect_threshold.py --data" in makefile.split("\ncalibrate-detect:")[1].split("\n\n")[0]
    ship = makefile.split("\nship-models:")[1].split("\n")[0]
    assert ship.index("train-detect") < ship.index("calibrate-detect")
    data = ROOT.parent / "shared" / "data"
    if not (data / "corpus" / "passages.jsonl").is_file():
        pytest.skip("../shared/data is absent")
    stored = json.loads((SHIPPED / THRESHOLD_FILE).read_text())
    assert hashlib.sha256("\n".join(dt.fit_ids(data)).encode()).hexdigest() == stored["ids_sha256"]
