"""Benchmark the model layer on this machine: rerank pairs/s (batch-size sweep), answer
questions/s, the prefix-KV-cache speed-up for a few-shot scoring prompt, and single-answer
accuracy on the first N NQ-open dev questions over the shared corpus (BM25 -> rerank -> answer).

    .venv/bin/python bench/rerank_answer.py [--questions 100] [--out docs/benchmarks/models.md]

Writes a markdown report; every number in it is measured by this run.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("CQ_SHARED_DATA", ROOT.parent / "shared" / "data"))
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--questions", type=int, default=100)
    parser.add_argument("--pairs", type=int, default=64, help="pairs per batch-size point")
    parser.add_argument("--index", default=str(ROOT / "work" / "bench" / "index"))
    parser.add_argument("--out", default=str(ROOT / "docs" / "benchmarks" / "models.md"))
    args = parser.parse_args()
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

    from cqtools.metrics.normalize import normalize_answer
    from cqtools.models import load_cross_encoder, load_generator
    from cqtools.retrieval import open_searcher
    from cqtools.stages import prompts
    from cqtools.stages.answer import AnswerConfig, Reader, answer_batch
    from cqtools.stages.rerank import passage_text, rerank_batch

    started = time.time()
    if not os.path.exists(os.path.join(args.index, "cq_index.json")):
        subprocess.run([sys.executable, "-m", "cqtools", "index", "--corpus", str(SHARED / "corpus" / "passages.jsonl"),
                        "--out", args.index], check=True)
    questions = []
    with open(SHARED / "nq_open" / "dev.jsonl") as fh:
        for n, line in enumerate(fh):
            if n >= args.questions:
                break
            row = json.loads(line)
            questions.append({"id": f"nq{n}", "question": row["question"], "gold_answers": row["answer"]})

    searcher = open_searcher(args.index, "bm25", None, "cpu")
    t = time.time()
    hits = searcher.batch_search([q["question"] for q in questions], [q["id"] for q in questions], 10, 2)
    bm25_s = time.time() - t
    for q in questions:
        q["passages"] = hits[q["id"]]

    ce = load_cross_encoder("cross-encoder/ms-marco-MiniLM-L-12-v2", "cpu")
    pairs = [(q["question"], passage_text(p)) for q in questions for p in q["passages"]][: args.pairs]
    ce.predict(pairs[:4])  # warm-up
    sweep = {}
    for bs in (8, 16, 32):
        t = time.time()
        ce.predict(pairs, batch_size=bs)
        sweep[bs] = len(pairs) / (time.time() - t)

    t = time.time()
    rerank_batch(questions, ce, 3, "question", 32, ce.info)
    rerank_s = time.time() - t
    n_pairs = 10 * len(questions)

    gen = load_generator("HuggingFaceTB/SmolLM2-135M-Instruct", "cpu")
    gen.batch_size = 8
    config = AnswerConfig(mode="single")
    reader = Reader(gen, config)
    t = time.time()
    for start in range(0, len(questions), 8):
        answer_batch(questions[start:start + 8], reader, {})
    answer_s = time.time() - t

    def hit(q) -> bool:
        gold = {normalize_answer(a) for a in q["gold_answers"]}
        return bool(q["answers"]) and normalize_answer(q["answers"][0]["text"]) in gold

    def in_passages(q, k=3) -> bool:
        text = " " + " ".join(normalize_answer(passage_text(p)) for p in q["passages"][:k]) + " "
        return any(f" {normalize_answer(a)} " in text for a in q["gold_answers"])

    em = sum(map(hit, questions))
    covered = [q for q in questions if in_passages(q)]
    em_covered = sum(map(hit, covered))

    # prefix KV cache: the CLAM-style few-shot detection prompt of cq detect
    prefix = prompts.detect_prefix()
    qs = [q["question"] + "?" for q in questions[:24]]
    ps = [prompts.detect_prompt(q) for q in qs] * 2
    conts = [" True"] * len(qs) + [" False"] * len(qs)
    gen.batch_size = 8
    gen.score(ps[:2], conts[:2], prefix=prefix)  # warm-up
    t = time.time()
    cached = gen.score(ps, conts, prefix=prefix)
    cached_s = time.time() - t
    t = time.time()
    full = gen._score_causal(ps, conts, prefix, use_cache=False)
    full_s = time.time() - t
    max_diff = max(abs(a - b) for a, b in zip(cached, full))
    prefix_tokens = len(gen.tokenizer(prefix).input_ids)

    total = time.time() - started
    lines = [
        "# Model layer benchmarks (rerank, answer, prefix cache)",
        "",
        f"Measured by `.venv/bin/python bench/rerank_answer.py --questions {args.questions}` on "
        f"{platform.machine()}, {os.cpu_count()} cores shared with other jobs (timings are noisy), "
        f"CPU only, {time.strftime('%Y-%m-%d')}; whole run {total:.0f} s.",
        "",
        "## Rerank: cross-encoder/ms-marco-MiniLM-L-12-v2 (offline INT8 ONNX, onnxruntime)",
        "",
        f"{len(pairs)} (NQ-open question, BM25 passage) pairs from the shared corpus, title + text, "
        "truncated at 512 tokens.",
        "",
        "| batch size | pairs/s |",
        "|---|---|",
        *[f"| {bs} | {rate:.1f} |" for bs, rate in sweep.items()],
        "",
        f"Reranking the top 10 BM25 passages of {len(questions)} questions ({n_pairs} pairs, batch 32): "
        f"{rerank_s:.1f} s = {n_pairs / rerank_s:.1f} pairs/s. (BM25 retrieval of the same questions: {bm25_s:.2f} s.)",
        "",
        "## Answer: SmolLM2-135M-Instruct (offline GGUF Q4_1, dequantised to fp32), `--mode single`",
        "",
        f"Top 3 reranked passages (600 characters each) in a chat prompt, greedy, 16 new tokens, batch 8: "
        f"{len(questions)} questions in {answer_s:.1f} s = {len(questions) / answer_s:.2f} questions/s.",
        "",
        "## Prefix KV cache (Generator.score with a shared few-shot prefix)",
        "",
        f"CLAM-style detection prompt of `cq detect` ({prefix_tokens}-token few-shot prefix), "
        f"{len(ps)} (question, label) continuations, batch 8:",
        "",
        "| | seconds | continuations/s |",
        "|---|---|---|",
        f"| prefix recomputed per item | {full_s:.2f} | {len(ps) / full_s:.1f} |",
        f"| prefix KV cache reused | {cached_s:.2f} | {len(ps) / cached_s:.1f} |",
        "",
        f"Speed-up {full_s / cached_s:.2f}x; largest score difference {max_diff:.2e} (same scores up to float "
        "rounding).",
        "",
        f"## Quality: single-answer exact match on NQ-open dev, first {len(questions)} questions",
        "",
        "Pipeline: BM25 top 10 over the shared corpus -> rerank top 3 -> `cq answer --mode single`. "
        "Exact match after SQuAD normalisation against any gold alias.",
        "",
        "| subset | questions | EM |",
        "|---|---|---|",
        f"| all | {len(questions)} | {em}/{len(questions)} = {em / len(questions):.1%} |",
        f"| a gold answer occurs in the top 3 passages | {len(covered)} | "
        f"{em_covered}/{len(covered)} = {em_covered / max(1, len(covered)):.1%} |",
        "",
        f"The shared corpus has 9,532 passages, built around AmbigNQ questions: for most NQ-open questions "
        f"it holds no passage with the answer (a gold answer is in the top 3 for only {len(covered)} of "
        f"{len(questions)} here), so the first row mostly measures the corpus, not the reader. The 135M "
        "reader is also weak: it often copies a passage title or a sentence. These numbers are not "
        "comparable to published NQ-open results (full Wikipedia, readers of 110M-11B parameters).",
        "",
    ]
    Path(args.out).write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
