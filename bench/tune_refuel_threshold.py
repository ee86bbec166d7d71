"""REFUEL's verification threshold, tuned on a dev split as the release tunes it (`make tune-refuel-threshold`).

Input: records answered with `cq answer --preset refuel --verify-threshold -1e9` (every answer keeps its
best-scoring DQ, with its `verify_score`) on AmbigNQ dev questions the grid does not score. For each
threshold of the release's grid (QALMFilteringData.py:654-663 of amzn/refuel-open-domain-qa @159090e:
-log p from 20.5 down to 0.5 in steps of 0.1, i.e. log p from -20.5 up to -0.5) the keep-best rule is applied
again (pairs above the threshold, else the best one) and the AmbigQA answer F1 (F1_ans, all questions) is
averaged; the best threshold wins, ties going to the first in the grid, as in the release. The release
picks by F1_ans + F1_EDIT-F1; cq's tuning reads the answer F1 (the issue's choice: DQ quality does not move
with the threshold's pairs alone). Writes a markdown report (--out) and prints the chosen value.

    python bench/tune_refuel_threshold.py answered.jsonl --out docs/refuel-threshold.md
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

GRID = [round(-20.5 + 0.1 * k, 1) for k in range(201)]  # the release's 201 thresholds, as log p


def sweep(records: list[dict], grid: list[float] = GRID) -> list[tuple[float, float, float]]:
    """(threshold, mean F1_ans in %, mean pairs kept) for each threshold."""
    from cqtools.metrics.ambigqa import f1_answer
    from cqtools.stages.answer.refuel import keep_best

    rows = []
    for threshold in grid:
        f1 = kept = 0.0
        for record in records:
            pairs = [p for p in record.get("dqs") or [] if "verify_score" in p]
            chosen = keep_best(pairs, threshold)
            f1 += f1_answer(record["gold"]["annotations"], [p["answer"] for p in chosen])
            kept += len(chosen)
        n = max(1, len(records))
        rows.append((threshold, round(100 * f1 / n, 2), round(kept / n, 2)))
    return rows


def best(rows: list[tuple[float, float, float]]) -> tuple[float, float, float]:
    return max(rows, key=lambda r: r[1])  # max keeps the first of equal scores: the release's tie rule


def main(argv: list[str] | None = None) -> int:
    from cqtools.jsonl import load_json_or_jsonl

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("answered", help="JSONL from cq answer --preset refuel --verify-threshold -1e9")
    ap.add_argument("--out", help="markdown report to write")
    ap.add_argument("--command", default="make tune-refuel-threshold", help="what made the input (for the report)")
    args = ap.parse_args(argv)
    records = [r for r in load_json_or_jsonl(args.answered) if (r.get("gold") or {}).get("annotations")]
    rows = sweep(records)
    threshold, f1, kept = best(rows)
    print(threshold)
    if args.out:
        lines = ["# REFUEL's verification threshold, re-tuned for cq's reader", "",
                 f"`{args.command}`: {len(records)} AmbigNQ dev questions the grid does not score, answered with "
                 "`cq answer --preset refuel --verify-threshold -1e9`; each threshold of the release's grid re-applies "
                 "the keep-best rule (bench/tune_refuel_threshold.py).", "",
                 f"**Best threshold: {threshold}** (log p; F1_ans {f1}, {kept} pairs per question). Use it with "
                 f"`cq answer --preset refuel --verify-threshold {threshold}`; the paper's Th = 6.1 is -6.1 here.", "",
                 "| threshold (log p) | F1_ans (all) | pairs per question |", "|---|---|---|"]
        lines += [f"| {t} | {f} | {k} |" for t, f, k in rows if round(t * 10) % 10 == 5 or t == threshold]
        Path(args.out).write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
