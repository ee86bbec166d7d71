"""`make paper-table` (issue 59, item 5): every preset's cell with the papers' metrics and 95% intervals beside each
paper's own number, cited; a page made with a 135M model or a few questions says it is no finding."""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from .conftest import FIXTURES, ROOT


def _summary(task, **metrics):
    return {"task": task, "n": 150, **{k: v[0] for k, v in metrics.items()},
            "ci": {"intervals": {k: list(v[1:]) for k, v in metrics.items()}}, "notes": []}


def test_the_page_puts_ours_with_intervals_beside_the_papers(tmp_path):
    from bench.paper_table import page

    scores = tmp_path / "scores"
    scores.mkdir()
    (scores / "ambignq.refuel.preset.ambigqa.json").write_text(json.dumps(_summary(
        "ambigqa", f1_ans=(30.5, 25.0, 36.1), f1_ans_multi=(20.0, 15.0, 25.0), f1_bleu=(5.0, 3.0, 7.0),
        f1_edit_f1=(2.0, 1.0, 3.0), comb=(32.5, 27.0, 38.0))))
    (scores / "asqa.toc.preset.bm25.json").write_text(json.dumps(_summary(
        "asqa", disambig_f1=(20.0, 15.0, 25.0), rouge_l=(30.0, 28.0, 32.0), dr=(24.5, 21.0, 28.0))))
    text = page(scores, "LLM openai:qwen-7b", "make paper-table MODEL_LLM=openai:qwen-7b N=150")
    assert "| REFUEL | F1 ans (all) | 30.5 [25.0, 36.1] | 150 | 48.3 | ambignq.refuel.preset.ambigqa | Gao et al. 2021" \
        in text
    assert "| ToC: GPT-3 + RAC + TS w/ Pruning | D-F1 | 20.0 [15.0, 25.0] | 150 | 33.7 | asqa.toc.preset.bm25 |" in text
    assert "| SPANSEQGEN + QD | F1 ans (all) | not run |" in text  # a cell not run is said to be
    assert "Not a finding" not in text
    small = page(scores, "LLM HuggingFaceTB/SmolLM2-135M-Instruct", "make paper-table N=150")
    assert "**Not a finding:** a 135M model made these numbers" in small
    few = json.loads((scores / "asqa.toc.preset.bm25.json").read_text())
    (scores / "asqa.toc.preset.bm25.json").write_text(json.dumps({**few, "n": 5}))
    assert "fewer than 100" in page(scores, "LLM openai:qwen-7b", "make paper-table")


def test_make_paper_table_runs_every_preset_on_n_questions():
    run = subprocess.run(["make", "-n", "paper-table", "N=3", "MODEL_LLM=openai:x", "API_BASE=http://h:1/v1",
                          "CHECK_CHECKOUT=0"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "toc_3-deep_3" in run.stdout  # the deep and ToC cells on N questions too, not a smoke run's one
    for cell in ("ambignq.qd.preset.ambigqa", "ambignq.refuel.preset.ambigqa", "asqa.toc.preset.bm25",
                 "ambignq.cqa.preset", "ambignq.disambigfirst.ambigqa"):
        assert f"scores/{cell}.json" in run.stdout, cell
    assert "bench/paper_table.py --scores" in run.stdout and "--out docs/paper-table.md" in run.stdout
    assert "--preset refuel --model openai:x" in run.stdout


def fixture_data(root):
    """The grid's DATA layout from the fixtures: every passage assigned to a question (source_qid) in turn."""
    ids = [q["id"] for q in json.loads((FIXTURES / "ambignq_light.json").read_text())]
    for sub in ("ambignq", "asqa", "corpus"):
        (root / sub).mkdir(parents=True)
    (root / "ambignq" / "dev_light.json").write_text((FIXTURES / "ambignq_light.json").read_text())
    (root / "asqa" / "dev.json").write_text((FIXTURES / "asqa.json").read_text())
    lines = [json.loads(line) for line in (FIXTURES / "corpus.jsonl").read_text().splitlines() if line.strip()]
    (root / "corpus" / "passages.jsonl").write_text(
        "".join(json.dumps({**p, "source_qid": ids[i % len(ids)]}) + "\n" for i, p in enumerate(lines)))
    return root


@pytest.mark.slow
@pytest.mark.heavy(reason="runs the preset cells of the grid against llama-cpp-python's server")
def test_paper_table_on_the_fixtures_against_the_llama_cpp_server(tmp_path, llama_server):
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "MAKEFLAGS")}
    # llama-cpp-python's server answers one request at a time: a queue of cells on 2 cores waits past the default 120 s
    # --api-timeout, and each retry queues the same work again
    env.update(CQ_CACHE=str(tmp_path / "cache"), CQ_API_CACHE="0", CQ_API_TIMEOUT="900")
    out = tmp_path / "paper-table.md"
    run = subprocess.run(["make", "-C", str(ROOT), "paper-table", "N=3", "GEN_CACHE=", f"WORK={tmp_path}/w",
                          f"DATA={fixture_data(tmp_path / 'data')}", "MODEL_LLM=openai:smollm2", f"API_BASE={llama_server}",
                          "API_CONCURRENCY=2", "CHECK_CHECKOUT=0", f"PAPER_TABLE={out}"],
                         capture_output=True, text=True, timeout=3600, env=env)
    assert run.returncode == 0, (run.stdout + run.stderr)[-3000:]
    text = out.read_text()
    assert "| REFUEL | F1 ans (all) |" in text and "not run" not in text
    assert "**Not a finding:**" in text  # 3 questions


from .test_openai_backend import llama_server  # noqa: E402,F401 (the llama.cpp server fixture, skipped without it)
