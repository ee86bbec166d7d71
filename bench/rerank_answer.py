"""Benchmark the model layer on this machine: rerank pairs/s (batch-size sweep), answer
questions/s, the prefix-KV-cache speed-up for a few-shot scoring prompt, and single-answer
accuracy on the first N NQ-open dev questions over the shared corpus (BM25 -> rerank -> answer).

    .venv/bin/python bench/rerank_answer.py [--questions 100] [--out docs/benchmarks/models.md]

Writes a markdown report; every number in it is measured by this run.

    nice .venv/bin/python bench/rerank_answer.py --reader [--grounding span|none] [--answers FILE]

measures only the reader: EM and token F1 of `cq answer --mode single` on the NQ-open dev questions
(first --nq-questions) and the AmbigNQ dev questions (first --ambig-questions that qualify) whose
gold answer occurs in their BM25 top-3 passages; prints a markdown table row and rewrites the
"## Reader quality" section of --out with every row measured so far (kept in work/bench/reader).
--answers scores an existing `cq answer` output of the same questions instead of running it.
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
    parser.add_argument("--reader", action="store_true", help="only the reader-quality benchmark")
    parser.add_argument("--grounding", choices=["span", "none"], default="span")
    parser.add_argument("--nq-questions", type=int, default=300)
    parser.add_argument("--ambig-questions", type=int, default=60)
    parser.add_argument("--answers", help="score this cq answer output instead of running cq answer")
    parser.add_argument("--label", help="row label (default: from --grounding / --answers)")
    args = parser.parse_args()
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    if args.reader:
        reader_quality(args)
        return

    from cqtools.metrics.normalize import normalize_answer
    from cqtools.models.load import load_cross_encoder, load_generator
    from cqtools.retrieval import open_searcher
    from cqtools.stages import prompts
    from cqtools.stages.answer import AnswerConfig, AnswerStage, GenerativeReader, answer_batch
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

    searcher = open_searcher(args.index, "bm25")
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
    config = AnswerConfig(mode="single")
    reader = AnswerStage(config, GenerativeReader(gen, config, 8))
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
        "Single-answer quality: see \"Reader quality\" below (`--reader`).",
        "",
    ]
    previous = Path(args.out).read_text() if Path(args.out).exists() else ""
    kept = previous[previous.index(READER_HEADING):] if READER_HEADING in previous else ""  # --reader's part
    Path(args.out).write_text("\n".join(lines) + ("\n" + kept if kept else ""))
    print("\n".join(lines))


# --- reader quality ---------------------------------------------------------------------------

READER_HEADING = "## Reader quality"


def _section(text: str, heading: str) -> str:
    """The markdown section starting at ``heading`` up to the next level-2 heading ("" if absent)."""
    if heading not in text:
        return ""
    rest = text[text.index(heading):]
    end = rest.find("\n## ", len(heading))
    return rest if end < 0 else rest[:end + 1]


def _aliases(record: dict) -> list[str]:
    return [a for cluster in record["gold"]["answers"] for a in cluster if a.strip()]


def _covered(record: dict, k: int = 3) -> bool:
    from cqtools.metrics.normalize import normalize_answer

    text = " " + " ".join(normalize_answer(f"{p.get('title') or ''} {p.get('text', '')}")
                          for p in record["passages"][:k]) + " "
    return any((n := normalize_answer(a)) and f" {n} " in text for a in _aliases(record))


def reader_questions(args, work: Path) -> Path:
    """NQ-open (first --nq-questions) + AmbigNQ (first --ambig-questions) dev questions whose gold
    answer occurs in their BM25 top-3 passages (title + text) -> work/questions.jsonl (cached)."""
    from bench.common import CQ, read_jsonl, timed, write_jsonl

    out = work / f"questions-nq{args.nq_questions}-ambig{args.ambig_questions}.jsonl"
    if out.exists():
        return out
    if not os.path.exists(os.path.join(args.index, "cq_index.json")):
        timed(CQ + ["index", "--corpus", str(SHARED / "corpus" / "passages.jsonl"), "--out", args.index])
    keep = []
    for name, fmt, path, limit in (("nq", "nq-open", SHARED / "nq_open" / "dev.jsonl", args.nq_questions),
                                   ("ambig", "ambignq", SHARED / "ambignq" / "dev_light.json", None)):
        converted = work / f"{name}.converted.jsonl"
        timed(CQ + ["convert", fmt, str(path)] + (["--limit", str(limit)] if limit else []), stdout=str(converted))
        retrieved = work / f"{name}.top3.jsonl"
        timed(CQ + ["retrieve", "--index", args.index, "--hits", "3", "--threads", "1", "-q"], stdin=str(converted),
              stdout=str(retrieved))
        good = [{**r, "bench": name} for r in read_jsonl(retrieved) if _covered(r)]  # passed through by cq
        keep += good if name == "nq" else good[: args.ambig_questions]
    write_jsonl(out, keep)
    return out


def reader_quality(args) -> None:
    from bench.common import CQ, read_jsonl, timed
    from cqtools.metrics.normalize import normalize_answer, token_f1

    work = ROOT / "work" / "bench" / "reader"
    work.mkdir(parents=True, exist_ok=True)
    questions = reader_questions(args, work)
    if args.answers:
        answered, seconds, label = Path(args.answers), None, args.label or Path(args.answers).name
    else:
        answered = work / f"answers-{args.grounding}.jsonl"
        run = timed(CQ + ["answer", "--mode", "single", "--grounding", args.grounding, "--batch-size", "8", "-q"],
                    stdin=str(questions), stdout=str(answered))
        seconds, label = run["seconds"], args.label or f"`--grounding {args.grounding}`"
    records = read_jsonl(answered)
    golds = {r["id"]: r for r in read_jsonl(questions)}
    if [r["id"] for r in records] != list(golds):
        raise SystemExit(f"{answered} does not answer {questions} (ids differ)")
    row = {"label": label, "seconds": seconds}
    for subset in ("nq", "ambig"):
        chosen = [r for r in records if golds[r["id"]]["bench"] == subset]
        em = f1 = 0.0
        for r in chosen:
            pred = r["answers"][0]["text"] if r.get("answers") else ""  # no answer scores 0
            aliases = _aliases(golds[r["id"]])
            em += any(normalize_answer(pred) == normalize_answer(a) for a in aliases)
            f1 += max(token_f1(a, pred) for a in aliases)
        row[subset] = (len(chosen), em, f1)
    kinds = {}
    for r in records:
        for a in r.get("answers", [])[:1]:
            kinds[a.get("grounding", "-")] = kinds.get(a.get("grounding", "-"), 0) + 1
    row["grounding"] = ", ".join(f"{k} {v}" for k, v in sorted(kinds.items()))
    rows_file = work / "rows.jsonl"
    rows = [json.loads(line) for line in rows_file.read_text().splitlines()] if rows_file.exists() else []
    rows = [r for r in rows if r["label"] != label] + [row]
    rows_file.write_text("".join(json.dumps(r) + "\n" for r in rows))
    table = _reader_table(rows)
    print(table)
    text = Path(args.out).read_text() if Path(args.out).exists() else ""
    old = _section(text, READER_HEADING)
    Path(args.out).write_text(text.replace(old, table) if old else text.rstrip("\n") + "\n\n" + table)


def _reader_table(rows: list[dict]) -> str:
    def cell(n, em, f1):
        return f"{em:.0f}/{n} = {em / max(n, 1):.1%} | {f1 / max(n, 1):.3f}"

    lines = [READER_HEADING, "",
             "`cq answer --mode single` (SmolLM2-135M-Instruct, top 3 passages of 600 characters, greedy, 16 new "
             "tokens, batch 8) on the questions whose gold answer occurs (SQuAD-normalised, title + text) in "
             "their BM25 top 3 over the shared corpus: NQ-open dev, first 300 questions (those that qualify), "
             "and AmbigNQ dev light, first 60 that qualify. EM: the first answer equals any alias of any gold "
             "cluster after SQuAD normalisation; F1: best token F1 over those aliases; a missing answer scores 0. "
             "Measured by `nice .venv/bin/python bench/rerank_answer.py --reader --grounding span|none` "
             "(`--answers FILE --label ...` scores an earlier run's output of the same questions).",
             "",
             "| reader | NQ-open EM | NQ-open F1 | AmbigNQ EM | AmbigNQ F1 | first answer's grounding | seconds |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['label']} | {cell(*r['nq'])} | {cell(*r['ambig'])} | {r['grounding']} | "
                     f"{r['seconds'] if r['seconds'] is not None else '-'} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
