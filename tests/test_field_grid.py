"""Issue 46 item 6: the grid's cells for the field's other benchmarks (experiments.mk's exp-field, exp-oracle) and the
results page's sections for breakdowns (--by), the LM cost of clarifying and oracle agreement (bench/grid/report.py)."""
import re
import subprocess

from .conftest import ROOT
from .test_grid_report import report, summary


def make(*args) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "--no-print-directory", "CHECK_CHECKOUT=0", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)


def test_a_field_cell_per_reachable_data_set_and_one_line_for_each_absent_one(tmp_path):
    where = (f"WORK={tmp_path}/w", f"CQ_MODELS={tmp_path}/m", "N=5", f"FIELD_DATA={tmp_path}/data")
    absent = make("-n", "exp-field", *where)
    assert absent.returncode == 0, absent.stderr[-2000:]
    assert "cq convert clamber" not in absent.stdout and "cq convert condambigqa" not in absent.stdout
    assert f"get it: cq data get clamber --dir {tmp_path}/data" in absent.stdout
    assert f"get it: cq data get condambigqa --dir {tmp_path}/data" in absent.stdout
    assert "AmbigDocs, ALCE-ASQA: on the Hugging Face hub, not reachable here" in absent.stdout
    for name, path in (("clamber", "clamber/clamber_benchmark.jsonl"), ("condambigqa", "condambigqa/mcaqa.json")):
        (tmp_path / "data" / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "data" / path).write_text("")
    present = make("-n", "exp-field", *where)
    assert present.returncode == 0, present.stderr[-2000:]
    plan = present.stdout
    assert "skip  CLAMBER" not in plan and "skip  CondAmbigQA" not in plan
    assert re.search(r"cq convert clamber \S+/clamber_benchmark.jsonl -o \S+field.clamber.jsonl.all && awk -v n=5 ",
                     plan)
    assert re.search(r"cq detect --preset clam --model \S+ --device \S+ --resume \S+field.clamber.det.clam.jsonl",
                     plan)
    assert re.search(r"cq score --task detect --ci --n-boot \d+ --seed 0 --by gold.category (--per-record \S+ )?< \S+field.clamber"
                     r".det.clam.jsonl", plan)
    assert re.search(r"cq answer --mode multi --model \S+ --device \S+ --resume \S+field.condambigqa.multi.jsonl",
                     plan)
    assert re.search(r"cq score --task cbqa --ci .*< \S+field.condambigqa.multi.jsonl", plan)
    assert "CQ_USAGE=1 .venv/bin/cq detect" in plan  # every stage notes its LM cost (USAGE=1, the default)


def test_the_spread_sample_takes_every_kth_record(tmp_path):
    """N_FIELD=3 of 10 records: k = 3, records 1, 4, 7 (CLAMBER's file is sorted by category)."""
    src = tmp_path / "all.jsonl"
    src.write_text("".join(f"{i}\n" for i in range(1, 11)))
    show = f"show: ; @$(call spread_sample,{src})"
    done = make(f"--eval={show}", "show", "N_FIELD=3", f"WORK={tmp_path}/w")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1", "4", "7"]


def test_the_oracle_cells_score_three_oracles_and_their_spread(tmp_path):
    plan = make("-n", "exp-oracle", f"WORK={tmp_path}/w", f"CQ_MODELS={tmp_path}/m", "N=5")
    assert plan.returncode == 0, plan.stderr[-2000:]
    out = plan.stdout
    assert "cq oracle --method llm --prompt bench/grid/oracle_terse.txt" in out
    for name in ("clam", "llm", "terse"):
        assert re.search(rf"cq score --task oracle --ci .*> \S+scores/oracle.{name}.json.part", out), name
    assert re.search(r"cq score --task oracle \S+clam.oracle.fromdqs.jsonl \S+clam.oracle.fromdqs.llm.jsonl "
                     r"\S+clam.oracle.fromdqs.terse.jsonl --format json", out)


def test_the_results_page_has_breakdowns_field_tables_and_oracle_agreement(tmp_path):
    det = summary("detect", n=6, accuracy=[50.0, 20.0, 80.0], f1=[40.0, 10.0, 70.0])
    det.update(by="gold.category", groups={
        "FD": {"n": 2, "accuracy": 100.0, "f1": 100.0, "ci": {"intervals": {"accuracy": [100.0, 100.0]}}},
        "LA": {"n": 4, "accuracy": 25.0, "f1": None}})
    cbqa = summary("cbqa", n=5, precision=[10.0], recall=[20.0], f1=[13.3], avg_answers=[1.4])
    oracle = summary("oracle", n=9, agreement=[33.3, 10.0, 60.0], chance=[26.8])
    oracle.update(skipped=3, wilson_95=[12.1, 64.6], oracle={"method": "llm", "template": "oracle_terse.txt"})
    spread = {"runs": [{"run": "a.jsonl", "task": "oracle"}, {"run": "b.jsonl", "task": "oracle"}],
              "spread": {"n": 9, "runs": ["/x/a.jsonl", "/x/b.jsonl"],
                         "metrics": {"agreement": {"values": [33.3, 19.5], "range": 13.8, "low": 6.1, "high": 23.0}}}}
    text = report(tmp_path, {"field.clamber.det.clam": det, "field.condambigqa.multi": cbqa, "oracle.terse": oracle,
                             "oracle.spread": spread})
    assert "## CLAMBER: when to clarify (detection; issue 46)" in text
    assert "| [field.clamber.det.clam](#cmd-field-clamber-det-clam) | cq | 6 | 50.0 [20.0, 80.0] |" in text
    assert "## CondAmbigQA: every answer from the given passages (issue 46)" in text
    assert "| [field.condambigqa.multi](#cmd-field-condambigqa-multi) | cq | 5 | 10.0 | 20.0 | 13.3 | 1.4 |" in text
    assert "## Breakdowns" in text and "**[field.clamber.det.clam](#cmd-field-clamber-det-clam)** by `gold.category`:" \
        in text
    assert "| FD | 2 | 100.0 [100.0, 100.0] | – | – | 100.0 | – |" in text
    assert "| LA | 4 | 25.0 | – | – | – | – |" in text
    assert "## Oracle agreement" in text
    assert ("| [oracle.terse](#cmd-oracle-terse) | llm oracle_terse.txt | 9 | 3 | 33.3 [10.0, 60.0] | 26.8 | "
            "[12.1, 64.6] |") in text
    assert "Spread of agreement across 2 oracles ([oracle.spread](#cmd-oracle-spread), on the 9 questions all score): " \
           "13.8 [6.1, 23.0]" in text and "per oracle: a.jsonl 33.3, b.jsonl 19.5." in text
    assert '<a id="cmd-oracle-spread"></a>' in text and '<a id="cmd-oracle-terse"></a>' in text


def test_the_cost_section_shows_lm_usage_per_answered_question(tmp_path):
    clam = {"task": "clam", "n": 4, "all": {}, "curves": {"lambda": [{"lambda": 0.8, "adjusted_accuracy": 70.0}],
                                                           "threshold": []},
            "cost": {"answered": 4, "with_usage": 4, "per_answered_question": {
                "calls": 4.5, "prompt_tokens": 612.0, "generated_tokens": 40.0, "seconds": 1.234}}}
    text = report(tmp_path, {"clam.always": clam})
    assert "| LM calls/q | prompt tok/q | gen. tok/q | LM s/q |" in text
    assert "| 4.5 | 612.0 | 40.0 | 1.23 |" in text
