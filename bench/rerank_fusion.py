"""Does the retrieval score help the reranker put a gold passage first? Reads reranked records (`cq rerank`
output with `gold`: each passage keeps hybrid retrieval's `score` beside its `rerank_score`) and counts, for
each order of their passages, the questions whose passage 1 (and any of passages 1-3) holds a gold answer
(cqtools.metrics.normalize.any_alias_in over "title text").

Orders: the reranker's, the retrieval's, and W * 60 * retrieval score + (1 - W) * rerank score / 10 for each
--weight W (the fused RRF score is about 1/60 a list; the cross-encoder's logit about 10).

    python bench/rerank_fusion.py RERANKED.jsonl [...] --weight 0.25 --weight 0.5
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import read_jsonl  # noqa: E402
from cqtools.metrics.normalize import any_alias_in  # noqa: E402


def orders(weights: list[float]) -> dict:
    out = {"rerank": lambda p: -p["rerank_score"], "retrieval": lambda p: -p["score"]}
    for w in weights:
        out[f"fused {w}"] = lambda p, w=w: -(w * 60 * p["score"] + (1 - w) * p["rerank_score"] / 10)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--weight", type=float, action="append", default=[])
    args = ap.parse_args()
    print("| records | n | order | gold in passage 1 | gold in passages 1-3 |\n|---|---|---|---|---|")
    for run in args.runs:
        records = list(read_jsonl(run))
        for name, key in orders(args.weight).items():
            top1 = top3 = 0
            for record in records:
                aliases = [a for group in record["gold"]["answers"] for a in group]
                ranked = sorted(record["passages"], key=key)
                holds = [any_alias_in(aliases, f"{p['title']} {p['text']}") for p in ranked[:3]]
                top1, top3 = top1 + holds[0], top3 + any(holds)
            print(f"| {Path(run).name} | {len(records)} | {name} | {top1} | {top3} |")


if __name__ == "__main__":
    main()
