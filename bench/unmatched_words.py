"""How often the extractive reader's "no passage mentions ..." check (cqtools.stages.answer.extractive.unmatched_words)
fires on questions its passages answer, against questions they do not: the check turns a sure answer into a
low-confidence reading, so it should fire rarely on the first kind and often on the second.

Reads retrieved records with gold answers (`cq convert ambignq ... | cq retrieve --hits 10`); a question counts as
answered when a gold answer (normalised, as a run of whole words) is in its first passage, and as unanswered when it
is in none of its first --passages. Prints one line per kind: flagged / questions. docs/benchmarks/first-contact.md
gives the commands and the numbers.

    python bench/unmatched_words.py retrieved.jsonl
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def kinds(path: Path, passages: int) -> dict[str, list[int]]:
    """{kind: [questions, flagged]} for "gold in passage 1" and "gold in none"."""
    from cqtools.metrics.normalize import normalize_answer
    from cqtools.stages.answer.support import unmatched_words
    from cqtools.train.span_reader import gold_aliases

    counts = {"gold in passage 1": [0, 0], f"gold in none of the first {passages}": [0, 0]}
    answered, unanswered = counts
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            record = json.loads(line)
            shown = record.get("passages", [])[:passages]
            golds = [normalize_answer(a) for a in gold_aliases(record)]
            texts = [f" {normalize_answer(p.get('title', '') + ' ' + p.get('text', ''))} " for p in shown]
            if texts and any(g and f" {g} " in texts[0] for g in golds):
                kind = answered
            elif not any(g and f" {g} " in t for g in golds for t in texts):
                kind = unanswered
            else:
                continue
            counts[kind][0] += 1
            counts[kind][1] += bool(unmatched_words(record["question"], shown))
    return counts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("retrieved", type=Path, help="cq retrieve output with gold answers")
    ap.add_argument("--passages", type=int, default=10,
                    help="passages the reader is given (default 10: the README pipeline reranks to 10)")
    args = ap.parse_args()
    for kind, (n, flagged) in kinds(args.retrieved, args.passages).items():
        print(f"{kind}: {flagged}/{n} flagged ({100 * flagged / max(n, 1):.1f}%)")


if __name__ == "__main__":
    main()
