"""Batch invariance of the model stages and what it costs: writes docs/benchmarks/determinism.md.

1. The invariance table: each model stage on the first fixture records under each cut
   (--batch-size 4, --shard 0/2+1/2 + cq merge, a resume after a torn line, accelerate launch
   with 2 processes), max |diff| of any float against --batch-size 1, both with the model layer's
   per-item computation (now) and with padded batches (CQ_PADDED_BATCHES=1, as before). The runs
   are the ones tests/test_invariance.py makes (same helper, same tiny local models).
2. The speed cost: the same inputs through each real offline model, one input per forward pass
   vs padded batches of 32 (best of --repeats).

    python bench/determinism.py --out docs/benchmarks/determinism.md [--data ../shared/data]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from click.testing import CliRunner  # noqa: E402

from cqtools.cli import cli  # noqa: E402
from cqtools.models import cache  # noqa: E402
from cqtools.models import load as loader  # noqa: E402
from tests.conftest import FIXTURES, _save_tiny_model, jsonl, parse_jsonl  # noqa: E402
from tests.test_invariance import N_RECORDS, STAGES, command, records_diff, run_cut  # noqa: E402

CUTS = ["batch-4", "shards", "tear", "accelerate"]
RERANKER = "cross-encoder/ms-marco-MiniLM-L-12-v2"
LLM = "HuggingFaceTB/SmolLM2-135M-Instruct"
NOTE_THREADS = ("Where a default cell is not 0 under accelerate, that is not batching: each launched process runs "
                "torch with one thread, the reference with two, and CPU matrix kernels split their sums by thread "
                "count (~1e-7, far below 1e-5; ranks break exact ties by id)."
                " The offline SmolLM2's decode step over a 600-key cache moves by ~2e-5 between 1 and 2 threads "
                "(torch's SDPA splits one query's attention over the threads); its prefill logits and greedy texts "
                "do not move (tests/test_model_layer.py::test_thread_count_does_not_change_smollm2_outputs).")


def padded(on: bool) -> None:
    """Switch the model layer between per-item (default) and padded batches; loaded models are dropped."""
    if on:
        os.environ["CQ_PADDED_BATCHES"] = "1"
    else:
        os.environ.pop("CQ_PADDED_BATCHES", None)
    cache.LOADED.clear()


# --- 1. invariance ------------------------------------------------------------------------------

def build_inputs(work: Path) -> tuple[dict, dict]:
    from transformers import BertConfig, BertForSequenceClassification, LlamaConfig, LlamaForCausalLM

    runner = CliRunner()
    index = work / "index"
    if not (index / "cq_index.json").exists():
        done = runner.invoke(cli, ["index", "--corpus", str(FIXTURES / "corpus.jsonl"), "--out", str(index),
                                   "--dense", "--overwrite"])
        assert done.exit_code == 0, done.output
    causal = _save_tiny_model(str(work / "tiny-llama"), lambda tok: LlamaForCausalLM(LlamaConfig(
        vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
        num_key_value_heads=2, max_position_embeddings=1024, pad_token_id=tok.pad_token_id,
        bos_token_id=tok.cls_token_id, eos_token_id=tok.sep_token_id)))
    classifier = _save_tiny_model(str(work / "tiny-clf"), lambda tok: BertForSequenceClassification(BertConfig(
        vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
        num_labels=2)))
    questions = parse_jsonl((FIXTURES / "questions.jsonl").read_text())
    first = jsonl(questions[:N_RECORDS])
    retrieved = runner.invoke(cli, ["retrieve", "--index", str(index), "--hits", "5", "-q"], input=first).stdout
    expanded = runner.invoke(cli, ["oracle", "--expand", "-q"], input=jsonl(questions)).stdout
    with_cq = runner.invoke(cli, ["gen-cq", "--method", "from-dqs", "-q"], input=expanded).stdout
    asked = [r for r in parse_jsonl(with_cq) if r.get("cq")][:N_RECORDS]
    models = {"causal": causal, "classifier": classifier, "index": str(index)}
    return models, {"questions": first, "retrieved": retrieved, "with_cq": jsonl(asked)}


CHANGED: dict = {}  # (mode, stage, cut) -> the first text or order difference (padded mode only)


def invariance(models: dict, inputs: dict, work: Path, cuts: list[str]) -> dict:
    table = {}
    for mode in ("per-item", "padded"):
        padded(mode == "padded")
        for stage in STAGES:
            args = command(stage, models)
            text = inputs[STAGES[stage][1]]
            base = work / mode / stage
            (base / "ref").mkdir(parents=True, exist_ok=True)
            reference = run_cut(args, text, "batch-1", base / "ref")
            for cut in cuts:
                if mode == "padded" and cut == "accelerate":
                    continue  # two processes per stage cost minutes; shown for the default only
                (base / cut).mkdir(exist_ok=True)
                start = time.perf_counter()
                try:
                    table[(mode, stage, cut)] = records_diff(reference, run_cut(args, text, cut, base / cut))
                except AssertionError as error:
                    if mode != "padded":  # the default's guarantee: the same records under every cut
                        raise
                    # padded batches give batch-dependent floats by design: a near-tie may reorder a ranking
                    table[(mode, stage, cut)] = math.inf
                    CHANGED[(mode, stage, cut)] = str(error).splitlines()[0]
                print(f"{mode:8} {stage:18} {cut:10} max|diff| {table[(mode, stage, cut)]:.3g} "
                      f"({time.perf_counter() - start:.1f} s)", file=sys.stderr)
    padded(False)
    return table


# --- 2. speed ----------------------------------------------------------------------------------------

def best_rate(fn, n: int, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return n / min(times)


def speed_inputs(data: Path | None, n_pairs: int) -> tuple[list[tuple[str, str]], list[str], str]:
    """(question, passage) pairs: the fixture questions x their corpus, or shared-data passages."""
    questions = [r["question"] for r in parse_jsonl((FIXTURES / "questions.jsonl").read_text())]
    if data is not None and (data / "corpus" / "passages.jsonl").exists():
        passages, source = [], f"{data}/corpus/passages.jsonl (first {n_pairs})"
        with open(data / "corpus" / "passages.jsonl") as fh:
            for line in fh:
                p = json.loads(line)
                passages.append(f"{p.get('title') or ''}\n{p.get('text') or p.get('contents') or ''}")
                if len(passages) >= n_pairs:
                    break
    else:
        passages = [f"{p['title']}\n{p['text']}" for p in parse_jsonl((FIXTURES / "corpus.jsonl").read_text())]
        source = "fixtures/corpus.jsonl"
    pairs = [(questions[i % len(questions)], passages[i % len(passages)]) for i in range(n_pairs)]
    return pairs, passages[:n_pairs], source


def speed(data: Path | None, n_pairs: int, n_llm: int, repeats: int) -> tuple[list[dict], str]:
    from cqtools.stages import prompts

    pairs, passages, source = speed_inputs(data, n_pairs)
    questions = [r["question"] for r in parse_jsonl((FIXTURES / "questions.jsonl").read_text())][:n_llm]
    rows = []
    jobs = [
        ("rerank: INT8 ONNX cross-encoder (MiniLM-L-12)", "pairs", len(pairs),
         lambda: loader.load_cross_encoder(RERANKER, "cpu"), lambda m: m.predict(pairs, batch_size=32)),
        ("dense: all-MiniLM-L6-v2 (torch), passages", "passages", len(passages),
         lambda: loader.load_encoder("sentence-transformers/all-MiniLM-L6-v2", "cpu"),
         lambda m: m.encode(passages, batch_size=32, normalize_embeddings=True)),
        ("bge-small INT8 ONNX, passages", "passages", len(passages),
         lambda: loader.load_encoder("BAAI/bge-small-en-v1.5", "cpu"),
         lambda m: m.encode(passages, batch_size=32, normalize_embeddings=True)),
        ("detect --method llm: SmolLM2-135M scoring", "questions", len(questions),
         lambda: loader.load_generator(LLM, "cpu"),
         lambda m: m.score([prompts.detect_prompt(q) for q in questions] * 2,
                           [prompts.DETECT_LABELS[0]] * len(questions) + [prompts.DETECT_LABELS[1]] * len(questions),
                           prefix=prompts.detect_prefix())),
        ("answer/gen-cq: SmolLM2-135M greedy, 16 new tokens", "prompts", len(questions),
         lambda: loader.load_generator(LLM, "cpu"),
         lambda m: m.generate([f"Question: {q}\nAnswer:" for q in questions], max_new_tokens=16, chat=False)),
    ]
    for name, unit, n, load, run in jobs:
        rates, outs = {}, {}
        for mode in ("padded", "per-item"):
            padded(mode == "padded")
            model = load()
            if hasattr(model, "batch_size"):
                model.batch_size = 32
            outs[mode] = run(model)  # warm-up, and the outputs to compare
            rates[mode] = best_rate(lambda: run(model), n, repeats)
        padded(False)
        diff = _diff(outs["padded"], outs["per-item"])
        rows.append({"name": name, "unit": unit, "n": n, "padded": rates["padded"], "per_item": rates["per-item"],
                     "diff": diff})
        print(f"{name}: padded {rates['padded']:.1f} {unit}/s, per-item {rates['per-item']:.1f} {unit}/s, "
              f"max |padded - per-item| {diff}", file=sys.stderr)
    return rows, source


def _diff(a, b) -> str:
    import numpy as np

    if isinstance(a, list) and a and isinstance(a[0], str):
        same = sum(x == y for x, y in zip(a, b))
        return f"{same}/{len(a)} texts equal"
    return f"{float(np.max(np.abs(np.asarray(a, dtype=float) - np.asarray(b, dtype=float)))):.3g}"


# --- report ------------------------------------------------------------------------------------------

def report(table: dict, cuts: list[str], rows: list[dict], source: str, argv: list[str]) -> str:
    lines = ["# Batch invariance of the model stages", "",
             f"Produced by `python bench/determinism.py {' '.join(argv)}` (`make bench-determinism`) on "
             f"{platform.machine()} with {os.cpu_count()} CPU cores shared with other jobs; "
             f"{time.strftime('%Y-%m-%d')}.", "",
             "## Cause", "",
             "- The default reranker is the offline **INT8 ONNX** copy of cross-encoder/ms-marco-MiniLM-L-12-v2. "
             "It is dynamically quantised: each `DynamicQuantizeLinear` computes one activation scale and zero "
             "point over the **whole input tensor of the call**, i.e. over every pair of the padded batch. A pair's "
             "score therefore depended on its batch mates (their lengths and values) and on how much padding the "
             "longest one added: up to 0.9 logits (0.81 between --batch-size 1 and 32 on 160 fixture pairs), "
             "enough to reorder the top 5. The bge-small copy (dense "
             "encoder, shot selection) is INT8 ONNX too and had the same defect.",
             "- torch models (the LLM, the detect classifier, sentence-transformers encoders) ran padded batches: "
             "padding and different GEMM shapes change the summation order, ~1e-6 in scores, which a "
             "threshold label, a rounded `verify_score` or a near-tie in a ranking or a greedy argmax can turn "
             "into a different record.",
             "- faiss `IndexFlatIP.search` switches from its one-query loop to a BLAS matrix product at 20 queries, "
             "so a query's dense scores depended (in the last bits) on how many queries came with it.", "",
             "## Fix", "",
             "The model layer (cqtools/models/, its front door load.py) computes **each input alone, at its own length**: "
             "no padding, no batch mates. That makes every record's numbers a function of the record and the "
             "model only: independent of `--batch-size`, `--shard`, a resume inside a batch and the number of "
             "processes. Dense search sends one query per faiss call. `CQ_PADDED_BATCHES=1` brings back padded "
             "batches (for GPUs, where batching pays; results then depend on batching again, as below).", "",
             "## Invariance: stage x cut, max |diff| of any float against `--batch-size 1`", "",
             f"First {N_RECORDS} fixture records; tiny local LLM/classifier (random weights), the offline INT8 "
             "cross-encoder for rerank, offline MiniLM for dense retrieval; the runs of tests/test_invariance.py. "
             "A cell is the largest float difference in any record (0 = identical records); under the default a "
             "text or order difference would fail the run, under padded batches the cell says text/order. `tear` = `--resume` after a kill that tore a line inside the "
             "first batch; `accelerate` = `accelerate launch --multi_gpu --num_processes 2` on CPU (batches of 2, "
             "one thread per process; run for the default only).", ""]
    for mode, title in (("per-item", "Now (per-item, the default)"), ("padded", "Before (CQ_PADDED_BATCHES=1)")):
        lines += [f"**{title}**", "", "| stage | " + " | ".join(cuts) + " |",
                  "|---|" + "---:|" * len(cuts)]
        for stage in STAGES:
            cells = []
            for cut in cuts:
                value = table.get((mode, stage, cut))
                cells.append("n/a" if value is None else "0" if value == 0 else "text/order" if value == math.inf
                             else f"{value:.2g}")
            lines.append(f"| {stage} | " + " | ".join(cells) + " |")
        lines.append("")
    if CHANGED:
        lines += ["text/order: padded batches changed a record beyond its floats (a near-tie reordered, a label "
                  "flipped): " + "; ".join(f"{stage} under {cut}: `{what}`" for (_, stage, cut), what
                                           in sorted(CHANGED.items())) + ".", ""]
    lines += [NOTE_THREADS, ""]
    lines += ["## Speed cost: one input per forward pass vs padded batches of 32", "",
              f"Real offline models on CPU, inputs from {source}; best of the repeats, after a warm-up; "
              "`max |diff|` compares the padded outputs with the per-item ones.", "",
              "| model | inputs | padded (/s) | per-item (/s) | per-item / padded | max \\|diff\\| |",
              "|---|---:|---:|---:|---:|---|"]
    for r in rows:
        lines.append(f"| {r['name']} | {r['n']} {r['unit']} | {r['padded']:.1f} | {r['per_item']:.1f} | "
                     f"{r['per_item'] / r['padded']:.2f}x | {r['diff']} |")
    faster = [r["name"].split(":")[0] for r in rows if r["per_item"] >= 0.95 * r["padded"]]
    slower = [f"{r['name'].split(':')[0]} ({r['padded'] / r['per_item']:.1f}x slower)" for r in rows
              if r["per_item"] < 0.95 * r["padded"]]
    lines += ["", "Reading: per-item is as fast or faster for " + (", ".join(faster) or "none") +
              " (on CPU, padding to the longest input wastes about what batching gains); it costs "
              + (", ".join(slower) or "nothing measurable") + ". Timings come from 2 cores shared with other "
              "jobs (load average above 2 during the run): read ratios, not absolute rates. On a GPU the "
              "per-item path gives up most of the batching speed-up; there `CQ_PADDED_BATCHES=1` is the "
              "faster, batch-dependent choice. The tiny random test models show no float drift under padding "
              "(hidden size 32); the real SmolLM2 does (the max |diff| column), as the issue reported.", ""]
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="docs/benchmarks/determinism.md")
    parser.add_argument("--work", default="work/bench-determinism")
    parser.add_argument("--data", default=None, help="shared data dir (corpus/passages.jsonl) for the speed inputs")
    parser.add_argument("--pairs", type=int, default=256, help="cross-encoder pairs / passages timed")
    parser.add_argument("--llm", type=int, default=20, help="questions through the LLM")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--cuts", default=",".join(CUTS))
    args = parser.parse_args(argv)
    cuts = [c for c in args.cuts.split(",") if c]
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=work) as tmp:
        models, inputs = build_inputs(work)
        table = invariance(models, inputs, Path(tmp), cuts)
    rows, source = speed(Path(args.data) if args.data else None, args.pairs, args.llm, args.repeats)
    (work / "results.json").write_text(json.dumps({"table": [[*k, v if v != math.inf else "text/order"] for k, v in table.items()], "speed": rows,
                                                   "source": source}, indent=1))
    Path(args.out).write_text(report(table, cuts, rows, source, argv if argv is not None else sys.argv[1:]))
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
