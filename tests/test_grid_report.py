"""Issue 48, "Honest reports": docs/results.md (bench/grid/report.py) states a paired difference only on enough
shared questions, marks the cells that read gold as upper bounds, and says why a number is at the floor."""
import json
import subprocess
import sys

from .conftest import ROOT


def summary(task, n=20, notes=(), **metrics):
    """A `cq score --ci` summary: metric=[value, low, high] (or [None] for an undefined one)."""
    return {"task": task, "n": n, **{k: v[0] for k, v in metrics.items()},
            "ci": {"level": 0.95, "method": "percentile", "n_boot": 50, "seed": 0,
                   "intervals": {k: v[1:] for k, v in metrics.items() if len(v) == 3}}, "notes": list(notes)}


def report(tmp_path, scores: dict, pairs: dict | None = None, records: dict | None = None, *args) -> str:
    """Writes the score summaries (and each cell's records, EXP/NAME.jsonl) and runs report.py results."""
    exp = tmp_path / "exp"
    (exp / "scores").mkdir(parents=True, exist_ok=True)
    (exp / "pairs").mkdir(exist_ok=True)
    for name, body in scores.items():
        (exp / "scores" / f"{name}.json").write_text(json.dumps(body))
    for name, body in (pairs or {}).items():
        (exp / "pairs" / f"{name}.json").write_text(json.dumps(body))
    for name, rows in (records or {}).items():
        (exp / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "results.md"
    run = subprocess.run([sys.executable, str(ROOT / "bench" / "grid" / "report.py"), "results", "--scores",
                          str(exp / "scores"), "--pairs", str(exp / "pairs"), "--out", str(out), *args],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    return out.read_text()


def pair(n, diff, low, high, task="cq", key="options_f1"):
    return {"task": task, "n": n, "metrics": {key: {"a": 10.0, "b": 10.0 + diff, "diff": diff, "low": low,
                                                    "high": high}}}


def test_a_paired_claim_on_one_shared_question_is_refused(tmp_path):
    text = report(tmp_path, {}, {"ambignq.cq.fromdqs--ambignq.cq.llm": pair(1, 4.0, 4.0, 4.0)})
    assert "cannot tell: 1 shared question, fewer than 10" in text
    assert "is higher" not in text


def test_a_zero_width_interval_is_no_finding_and_enough_questions_are(tmp_path):
    text = report(tmp_path, {}, {"a--b": pair(40, 4.0, 4.0, 4.0), "c--d": pair(40, 4.0, 1.5, 6.5)})
    assert "cannot tell: the interval has zero width (+4.0) on 40 shared questions" in text
    assert "d is higher than c by 4.0 [1.5, 6.5] on 40 shared questions." in text
    assert "b is higher" not in text


def test_the_minimum_is_a_flag(tmp_path):
    text = report(tmp_path, {}, {"c--d": pair(40, 4.0, 1.5, 6.5)}, None, "--min-paired-n", "50")
    assert "cannot tell: 40 shared questions, fewer than 50" in text


def fixture_records(ambiguous=True):
    from .conftest import FIXTURES

    records = [json.loads(line) for line in (FIXTURES / "questions.jsonl").read_text().splitlines()]
    return [r for r in records if r["gold"]["ambiguous"] == ambiguous]


def cq(*args, stdin: str) -> str:
    run = subprocess.run([sys.executable, "-m", "cqtools", *args], input=stdin, capture_output=True, text=True,
                         cwd=ROOT, timeout=300)
    assert run.returncode == 0, run.stderr
    return run.stdout


def jsonl(records) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def rows_of(text: str) -> dict:
    return {line.split("]")[0].lstrip("| ["): line for line in text.splitlines() if line.startswith("| [")}


def test_a_cell_that_reads_gold_is_marked_as_an_upper_bound(tmp_path):
    """CQs built from the gold DQs (cq gen-cq --method from-dqs: meta.gen_cq.reads) score options F1 100 beside
    real systems: the table marks the cell and the legend says what it read; a CQ writer that read no gold is not
    marked."""
    records = fixture_records()[:6]
    fromdqs = cq("gen-cq", "--method", "from-dqs", "--all", stdin=jsonl(records))
    system = [{**r, "cq": {"text": "Which one: " + r["gold"]["cq"].split(": ", 1)[1]}} for r in records]
    score = ("score", "--task", "cq", "--no-bertscore", "--ci", "--n-boot", "20")
    scores = {"ambignq.cq.fromdqs": json.loads(cq(*score, stdin=fromdqs)),
              "ambignq.cq.llm": json.loads(cq(*score, stdin=jsonl(system)))}
    text = report(tmp_path, scores, None, {"ambignq.cq.fromdqs": [json.loads(x) for x in fromdqs.splitlines()],
                                           "ambignq.cq.llm": system})
    rows = rows_of(text)
    assert rows["ambignq.cq.fromdqs"].startswith("| [ambignq.cq.fromdqs](#cmd-ambignq-cq-fromdqs) ⊤ |")
    assert rows["ambignq.cq.llm"].startswith("| [ambignq.cq.llm](#cmd-ambignq-cq-llm) |")
    assert ("⊤ upper bound, not a system: ambignq.cq.fromdqs reads gold as input (gen_cq: gold.dqs)." in text)


def test_zeros_and_undefined_numbers_say_why_from_the_records(tmp_path):
    """BLEU 0 (no 4-gram in common with the gold CQs), AUROC when every question is ambiguous ("n/a (one class)",
    not a number) and EM when no answer names a CQ option ("n/a (no options)") get a "why at the floor" reason
    counted in the cell's records."""
    records = fixture_records()[:8]
    cqs = [{**r, "cq": {"text": "Which " + r["gold"]["cq"].split(" ")[1] + " do you mean?"}} for r in records]
    detected = [{**r, "ambiguity": {"label": i % 2 == 0, "score": 0.1 * i, "method": "classifier",
                                    "threshold": 0.5}} for i, r in enumerate(records)]
    answered = [{**r, "answers": [{"text": r["gold"]["answers"][0][0]}]} for r in records]
    scores = {"ambignq.cq.llm": json.loads(cq("score", "--task", "cq", "--no-bertscore", stdin=jsonl(cqs))),
              "ambignq.det.classifier": json.loads(cq("score", "--task", "detect", stdin=jsonl(detected))),
              "ambignq.cqa.llm": json.loads(cq("score", "--task", "cbqa", stdin=jsonl(answered)))}
    assert scores["ambignq.cq.llm"]["bleu"] == 0 and scores["ambignq.det.classifier"]["auroc"] is None
    text = report(tmp_path, scores, None, {"ambignq.cq.llm": cqs, "ambignq.det.classifier": detected,
                                           "ambignq.cqa.llm": answered})
    rows = rows_of(text)
    assert "why at the floor |" in text
    assert "BLEU: no 4-gram of 8 CQs is in its gold CQ (1-4-gram precision " in rows["ambignq.cq.llm"]
    assert "| n/a (one class) |" in rows["ambignq.det.classifier"]
    assert "AUROC: every one of 8 questions is gold-ambiguous" in rows["ambignq.det.classifier"]
    assert "| n/a (no options) |" in rows["ambignq.cqa.llm"]
    assert "EM: none of 8 answers names a CQ option" in rows["ambignq.cqa.llm"]


def test_the_report_shows_the_figures_written_beside_it(tmp_path):
    scores = {"ambignq.cqa.llm": summary("cbqa", f1=[28.0, 24.8, 31.2])}
    text = report(tmp_path, scores, {"a--b": pair(40, 4.0, 1.5, 6.5)})
    assert "![forest-cbqa.png](figures/forest-cbqa.png)\n![forest-pairs.png](figures/forest-pairs.png)" in text


def test_the_page_names_no_path_of_this_machine(tmp_path):
    """The tracked results.md named /work/main/cqtools/shipped/reader (a developer's checkout) and a trained model
    under /root/.cache: the models line and each cell's command read from the repository's root and from ~."""
    import os

    home = os.path.expanduser("~")
    scores = {"ambignq.cqa.llm": summary("cbqa", f1=[28.0, 24.8, 31.2])}
    (tmp_path / "exp" / "scores").mkdir(parents=True)
    (tmp_path / "exp" / "scores" / "ambignq.cqa.llm.json.cmd").write_text(
        f"cq convert ambignq {ROOT}/data/dev.json\n  | cq answer --mode cq --model {ROOT}/cqtools/shipped/reader\n"
        f"  | cq gen-cq --method seq2seq --model {home}/.cache/cqtools/models/gencq (cwd {ROOT})\n")
    text = report(tmp_path, scores, None, None, "--models",
                  f"extractive reader {ROOT}/cqtools/shipped/reader; CQ generator {home}/.cache/cqtools/models/gencq")
    assert "Models: extractive reader cqtools/shipped/reader; CQ generator ~/.cache/cqtools/models/gencq;" in text
    assert "cq answer --mode cq --model cqtools/shipped/reader" in text and "(cwd .)" in text
    assert "--model ~/.cache/cqtools/models/gencq" in text and "cq convert ambignq data/dev.json" in text
    assert str(ROOT) not in text and f"{home}/" not in text
