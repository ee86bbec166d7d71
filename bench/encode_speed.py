"""`make bench-encode`: dense encoding time per passage on this machine's CPU, for the 21M extrapolation in
docs/benchmarks/scale.md ("## Dense encoding on CPU"; other sections are kept).

Passages: DPR-sized (100 words each), made by joining the shared corpus's real passages and cutting at 100
words. Encoders: the default all-MiniLM-L6-v2 (the offline copy: real weights) and a DPR context encoder of
DPR's own size (BERT-base: 12 layers, 768 wide) built from its configuration with random weights: the same
arithmetic as facebook/dpr-ctx_encoder-multiset-base, whose weights are not here. Each encoder runs in its
own process through `cq index --dense` (the dense part's own seconds from the index manifest, so reading
and the BM25 part are not counted), on all CPU threads, float32.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import CQ, machine, replace_section, timed  # noqa: E402

MARK = "## Dense encoding on CPU"
TITLE = "# The papers' corpus at scale"
DPR_PASSAGES = 21_015_324


def passages(real: Path, n: int, out: Path, words: int = 100) -> None:
    pool = [w for line in open(real) for w in json.loads(line)["text"].split()]
    with open(out, "w") as fh:
        for i in range(n):
            start = (i * words) % (len(pool) - words)
            fh.write(json.dumps({"id": f"e{i}", "title": f"Passage {i}", "text": " ".join(pool[start:start + words])})
                     + "\n")


def dpr_base(out: Path) -> str:
    """A DPR context encoder of DPR's size with random weights (seeded), MiniLM's BERT-uncased tokenizer."""
    import torch
    from transformers import AutoTokenizer, DPRConfig, DPRContextEncoder

    from cqtools.models.resolve import resolve

    path = out / "dpr-ctx_encoder-base-random"
    if not path.exists():
        tok = AutoTokenizer.from_pretrained(resolve("sentence-transformers/all-MiniLM-L6-v2", announce=False).path)
        torch.manual_seed(0)
        DPRContextEncoder(DPRConfig(vocab_size=len(tok))).eval().save_pretrained(path)
        tok.save_pretrained(path)
        question = out / "dpr-question_encoder-base-random"  # `cq index` checks the pair loads before encoding
        if not question.exists():
            from transformers import DPRQuestionEncoder

            DPRQuestionEncoder(DPRConfig(vocab_size=len(tok))).eval().save_pretrained(question)
            tok.save_pretrained(question)
    return str(path)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--work", default="work/bench-encode")
    ap.add_argument("--out", default="docs/benchmarks/scale.md")
    ap.add_argument("--n", type=int, default=300, help="passages encoded per encoder and mode")
    args = ap.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    corpus = work / f"passages-{args.n}.jsonl"
    if not corpus.exists():
        passages(Path(args.data) / "corpus/passages.jsonl", args.n, corpus)
    encoders = [("all-MiniLM-L6-v2 (384-d, 6 layers; real weights)", "sentence-transformers/all-MiniLM-L6-v2"),
                ("DPR context encoder size (768-d, 12 layers; random weights)", dpr_base(work))]
    rows = []
    for label, encoder in encoders:
        for mode, padded in (("one passage a forward pass (default)", "0"), ("padded batches (CQ_PADDED_BATCHES=1)", "1")):
            index = work / "index"
            load = round(os.getloadavg()[0], 1)
            os.environ["CQ_PADDED_BATCHES"] = padded  # the child `cq index` reads it
            run = timed(CQ + ["index", "--corpus", str(corpus), "--out", str(index), "--overwrite", "-q", "--dense",
                              "--bm25-matrix", "no", "--encoder", encoder])
            seconds = json.loads((index / "cq_index.json").read_text())["dense"]["seconds"]
            rows.append({"label": label, "mode": mode, "seconds": seconds, "rate": args.n / seconds, "load": load,
                         "peak_mib": run["peak_mib"]})
            print(json.dumps(rows[-1]), file=sys.stderr)
    write(Path(args.out), rows, args)


def write(out: Path, rows: list[dict], args) -> None:
    lines = [MARK, "",
             f"Command: `make bench-encode` (bench/encode_speed.py --n {args.n}). Machine: {machine()}, no GPU, "
             f"{os.cpu_count()} threads, float32. Date: {time.strftime('%Y-%m-%d')}.",
             f"{args.n:,} passages of 100 words (DPR's length), encoded by `cq index --dense` (the dense part's own "
             "seconds, from the index manifest).", "",
             "| encoder | encoding | load | seconds | passages/s | µs a passage | 21M passages on this machine | "
             "on a 16-task array of such machines |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        hours = DPR_PASSAGES / r["rate"] / 3600
        lines.append(f"| {r['label']} | {r['mode']} | {r['load']} | {r['seconds']} | {r['rate']:.1f} | "
                     f"{1e6 / r['rate']:,.0f} | "
                     f"{hours:,.0f} h ({hours / 24:.1f} days) | {hours / 16:,.1f} h |")
    lines += ["", "By default cq encodes each passage in a forward pass of its own, so a vector never depends on "
                  "its batch mates; `CQ_PADDED_BATCHES=1` pads batches of `--batch-size` instead (vectors differ in "
                  "their last bits, still the same for the same `--chunk` and `--batch-size`, so shards merged still "
                  "equal one process). The seconds include loading the encoder (a few seconds of each row).",
              "", "Formula: hours = 21,015,324 passages / (passages/s) / 3600, divided by the number of array tasks "
                  "(`cq encode --shard I/N`, docs/cluster.md): encoding is embarrassingly parallel, the merge reads the "
                  "vector files once.", ""]
    replace_section(out, MARK, lines, TITLE)


if __name__ == "__main__":
    main()
