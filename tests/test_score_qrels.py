"""`cq score --task retrieval --qrels`: nDCG@10, MRR and R@k through ir_measures, against values
worked out by hand for a tiny case."""
import json
import math

import numpy as np
import pytest
from click.testing import CliRunner

from cqtools.cli import cli
from cqtools.score import ScoreOptions, score_records

QRELS = """\
q1 0 d1 1
q1 0 d3 2
q1 0 d9 1
q2 0 d2 1
q3 0 d5 0
q4 0 d7 1
q9 0 d1 1
"""


def record(qid, passages):
    return {"id": qid, "question": f"question {qid}", "gold": {"answers": [["Paris"]]},
            "passages": None if passages is None else
            [{"title": "Paris" if i == 0 else "", "text": "", "score": 1.0, **({"id": d} if d else {})}
             for i, d in enumerate(passages)]}


RECORDS = [
    record("q1", ["d2", "d1", "d3"]),   # equal scores: trec_eval's docid tie-break would reorder them
    record("q2", [None, "d4", "d2"]),   # a passage without id keeps its rank
    record("q3", ["d5"]),               # judged, but no relevant document: left out
    record("q4", None),                 # judged, nothing retrieved: scores 0, counted missing
    record("q5", ["d1"]),               # not in the qrels: left out
]

# By hand (gain = relevance, discount log2(rank + 1); recall over all relevant documents):
# q1: relevant d1 (1, rank 2), d3 (2, rank 3), d9 (1, never retrieved)
#     DCG = 1/log2(3) + 2/log2(4); ideal 2/log2(2) + 1/log2(3) + 1/log2(4); RR = 1/2; R@1 0, R@2 1/3, R@5 2/3
# q2: relevant d2 at rank 3: DCG = 1/log2(4) = 1/2 = nDCG; RR = 1/3; R@1 0, R@2 0, R@5 1
# q4: every measure 0
Q1_NDCG = (1 / math.log2(3) + 2 / 2) / (2 + 1 / math.log2(3) + 1 / 2)
EXPECTED = {"ndcg@10": (Q1_NDCG + 0.5 + 0) / 3, "mrr": (1 / 2 + 1 / 3 + 0) / 3, "r@1": 0.0,
            "r@2": (1 / 3 + 0 + 0) / 3, "r@5": (2 / 3 + 1 + 0) / 3}


@pytest.fixture
def qrels(tmp_path):
    path = tmp_path / "qrels.txt"
    path.write_text(QRELS)
    return str(path)


def cq_score(args, records=RECORDS):
    return CliRunner().invoke(cli, ["score", "--task", "retrieval", *args],
                              input="".join(json.dumps(r) + "\n" for r in records))


def test_ir_measures_equal_the_hand_computed_values(qrels):
    result = cq_score(["--qrels", qrels, "--k", "1,2,5"])
    assert result.exit_code == 0, result.stderr
    summary = json.loads(result.stdout)
    assert (summary["n"], summary["missing"], summary["judged"]) == (5, 1, 3)
    for name, value in EXPECTED.items():
        assert summary[name] == pytest.approx(100 * value, abs=1e-4), name
    assert summary["ac@1"] == pytest.approx(80.0)  # alongside answer coverage: 4 of 5 retrieved "Paris" first
    assert list(summary)[-8:] == ["ac@5", "ndcg@10", "mrr", "r@1", "r@2", "r@5", "judged", "notes"]
    assert any("2 record(s) left out" in note for note in summary["notes"])
    assert any("1 query id(s) absent from the input" in note for note in summary["notes"])


def test_per_record_rows_carry_the_measures(qrels, tmp_path):
    rows_path = tmp_path / "rows.jsonl"
    result = cq_score(["--qrels", qrels, "--k", "1,2,5", "--per-record", str(rows_path)])
    assert result.exit_code == 0, result.stderr
    rows = {row["id"]: row for row in map(json.loads, rows_path.read_text().splitlines())}
    assert rows["q1"]["ndcg@10"] == pytest.approx(Q1_NDCG) and rows["q1"]["mrr"] == 0.5
    assert rows["q2"]["r@5"] == 1.0 and rows["q4"]["mrr"] == 0.0
    assert "mrr" not in rows["q3"] and "mrr" not in rows["q5"]


def test_without_qrels_the_summary_has_no_ir_measures():
    summary = json.loads(cq_score(["--k", "1,2,5"]).stdout)
    assert "ndcg@10" not in summary and "judged" not in summary


def test_ci_covers_the_ir_measures_and_resamples_only_judged_records(qrels):
    opts = ScoreOptions(task="retrieval", keep_questions=True)
    task = score_records(enumerate(RECORDS, start=1), opts, ks="1,2,5", qrels=str(qrels))
    summary = task.summary()
    point = task.resample(np.arange(5))
    for name in EXPECTED:
        assert point[name] == pytest.approx(summary[name])
    only_q2 = task.resample(np.array([1, 1, 4]))  # q2 twice and an unjudged record
    assert only_q2["mrr"] == pytest.approx(100 / 3) and only_q2["ac@1"] == 100.0
    assert task.resample(np.array([2, 4]))["mrr"] is None  # no judged record drawn
    result = cq_score(["--qrels", qrels, "--k", "1,2,5", "--ci", "--n-boot", "200"])
    intervals = json.loads(result.stdout)["ci"]["intervals"]
    assert set(intervals) == {"ac@1", "ac@2", "ac@5", *EXPECTED}


@pytest.mark.parametrize("text,message", [
    ("q1 0 d1\n", "line 1: expected 'qid 0 docid relevance'"),
    ("q1 0 d1 1\nq1 0 d2 yes\n", "line 2: expected"),
])
def test_malformed_qrels_name_the_line(tmp_path, text, message):
    path = tmp_path / "bad.qrels"
    path.write_text(text)
    result = cq_score(["--qrels", str(path)])
    assert result.exit_code == 1 and message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
