"""`cq convert` refuses a file that gives one id twice (issue 57 item 4: ambigdocs, condambigqa, alce-asqa and
ambignq-cq passed them without a word) and a file of no record (0 records, rc 0, no message on 6fba24f)."""
import json

import pytest

from cqtools.cli import cli

ENTRY = {
    "ambigdocs": {"qid": "q1", "question": "Who?", "ambiguous_entity": "X",
                  "documents": [{"title": "X (a)", "text": "t", "answer": "a"}]},
    "condambigqa": {"id": "q1", "question": "Who?", "properties": [{"condition": "c", "groundtruth": "a"}],
                    "ctxs": [{"title": "T", "text": "t"}]},
    "alce-asqa": {"sample_id": "q1", "question": "Who?", "qa_pairs": [{"question": "Who a?", "short_answers": ["a"]}],
                  "annotations": [{"long_answer": "A is a."}], "docs": [{"title": "T", "text": "t"}]},
    "ambignq": {"id": "q1", "question": "Who?", "annotations": [{"type": "singleAnswer", "answer": ["a"]}]},
}


def write(tmp_path, fmt: str, count: int) -> str:
    if fmt == "ambignq-cq":
        path = tmp_path / "dev.csv"
        path.write_text("id,clarifying_question\n" + "q1,Which one?\n" * count)
    else:
        path = tmp_path / f"{fmt}.json"
        path.write_text(json.dumps([ENTRY[fmt]] * count))
    return str(path)


@pytest.mark.parametrize("fmt", ["ambigdocs", "condambigqa", "alce-asqa", "ambignq-cq", "ambignq"])
def test_one_id_given_twice_is_refused_in_one_line(runner, tmp_path, fmt):
    once = runner.invoke(cli, ["convert", fmt, write(tmp_path, fmt, 1)])
    assert once.exit_code == 0 and len(once.stdout.splitlines()) == 1, once.stderr
    result = runner.invoke(cli, ["convert", fmt, write(tmp_path, fmt, 2)])
    assert result.exit_code == 1 and "id 'q1' is given twice (records 1 and 2" in result.stderr, result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


@pytest.mark.parametrize("fmt", ["ambigdocs", "condambigqa", "alce-asqa", "ambignq-cq", "ambignq", "clamber"])
def test_an_empty_file_is_an_error_not_zero_records(runner, tmp_path, fmt):
    path = tmp_path / "empty"
    path.write_text("" if fmt != "ambignq-cq" else "id,clarifying_question\n")
    result = runner.invoke(cli, ["convert", fmt, str(path)])
    assert result.exit_code == 1 and f"no {fmt} record in it" in result.stderr and result.stderr.count("\n") == 1, \
        result.stderr


def test_ids_that_keep_nothing_say_so(runner, tmp_path):
    ids = tmp_path / "ids.txt"
    ids.write_text("other\n")
    result = runner.invoke(cli, ["convert", "ambignq", write(tmp_path, "ambignq", 1), "--ids", str(ids)])
    assert result.exit_code == 0 and result.stdout == "" and "none of the 1 records" in result.stderr
