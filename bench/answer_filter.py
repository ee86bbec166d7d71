"""Would fewer answers score higher? Drops a cq-mode run's answers whose reader score is under T (or, with
`low`, those `cqtools.records.answer_confidence` calls low), keeping each record's best one, and writes the
records for `cq score --task ambigqa` to compare with the run as it is.

    python bench/answer_filter.py ANSWERED.jsonl OUT.jsonl (T | low)
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import read_jsonl  # noqa: E402
from cqtools.records import answer_confidence  # noqa: E402


def kept(answers: list[dict], rule: str) -> list[dict]:
    given = [a for a in answers if a.get("text")]
    keep = [a for a in given if (answer_confidence(a) != "low" if rule == "low"
                                 else float(a.get("score") or 0.0) >= float(rule))]
    if not given:
        return []
    return keep or [max(given, key=lambda a: float(a.get("score") or 0.0))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("answered", help="a `cq answer` run's records")
    ap.add_argument("out", help="where to write the filtered records")
    ap.add_argument("rule", help="a reader score T, or `low`")
    args = ap.parse_args()
    with open(args.out, "w") as fh:
        for record in read_jsonl(args.answered):
            fh.write(json.dumps({**record, "answers": kept(record["answers"], args.rule)}) + "\n")


if __name__ == "__main__":
    main()
