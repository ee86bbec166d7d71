"""docs/paper-table.md (issue 59, item 5): every preset's cell of the grid scored with the papers' own metrics, each
number with its 95% bootstrap interval beside the number the paper reports for that system, cited.

    make paper-table MODEL_LLM=openai:NAME API_BASE=http://HOST:PORT/v1 N=200
    python bench/paper_table.py --scores EXP/scores --out docs/paper-table.md --models '...' --command '...'

The papers' numbers are their development-set numbers (full Wikipedia, their own models); ours come from the cells
of `make compare` (experiments.mk) on the shared corpus with the model given. A model with "135M" in its name (the
offline SmolLM2-135M-Instruct) makes a page that says, above the table, that its numbers check the wiring and are
no finding; so does a run of fewer than 100 questions.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

AMBIGQA = "Min et al. 2020 (AmbigQA), Table 3, dev"
REFUEL = "Gao et al. 2021 (REFUEL), main results table, dev, single model"
TOC = "Kim et al. 2023 (Tree of Clarifications), Table 1, ASQA dev"
ASKCQ = "Lee et al. 2023 (AskCQ / CAmbigNQ)"
# (system as the paper names it, the grid's cell (a prefix for ToC: its pool), [(metric, label, paper's number)], source)
ROWS = [
    ("DISAMBIG-FIRST", "ambignq.disambigfirst.ambigqa",
     [("f1_ans", "F1 ans (all)", 28.1), ("f1_ans_multi", "F1 ans (multi)", 21.9), ("f1_bleu", "F1 BLEU", 4.2),
      ("f1_edit_f1", "F1 EDIT-F1", 2.7)], AMBIGQA),
    ("SPANSEQGEN + QD", "ambignq.qd.preset.ambigqa",
     [("f1_ans", "F1 ans (all)", 39.7), ("f1_ans_multi", "F1 ans (multi)", 29.3), ("f1_bleu", "F1 BLEU", 13.4),
      ("f1_edit_f1", "F1 EDIT-F1", 7.2)], AMBIGQA),
    ("REFUEL", "ambignq.refuel.preset.ambigqa",
     [("f1_ans", "F1 ans (all)", 48.3), ("f1_ans_multi", "F1 ans (multi)", 37.3), ("f1_bleu", "F1 BLEU", 16.2),
      ("f1_edit_f1", "F1 EDIT-F1", 11.8), ("comb", "Comb.", 60.1)], REFUEL),
    ("ToC: GPT-3 + RAC + TS w/ Pruning", "asqa.toc.preset.",
     [("disambig_f1", "D-F1", 33.7), ("rouge_l", "ROUGE-L", 39.7), ("dr", "DR", 36.6)], TOC),
    ("BERT-base ambiguity detector (No Answers)", "ambignq.det.classifier",
     [("f1", "detection F1", 61.3)], f"{ASKCQ}, Table 3"),
    ("CQ generation with Predicted Answers", "ambignq.cq.llm.pred",
     [("options_f1", "options F1", 25.1)], f"{ASKCQ}, Table 4 (against CAmbigNQ's CQs; ours: silver CQs from gold DQs)"),
    ("CBQA, CQ-finetuned BART, CQs with Predicted Answers", "ambignq.cqa.preset",
     [("f1", "CBQA F1", 40.5)], f"{ASKCQ}, Table 5"),
]
SMALL = "135M"
MIN_QUESTIONS = 100


def _get(summary: dict, key: str):
    value: object = summary
    for part in key.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _interval(summary: dict, key: str):
    value = _get((summary.get("ci") or {}).get("intervals") or {}, key)
    return value if isinstance(value, list) and len(value) == 2 and None not in value else None


def _find(scores: Path, cell: str) -> Path | None:
    exact = scores / f"{cell}.json"
    if exact.exists():
        return exact
    found = sorted(scores.glob(f"{cell}*.json")) if cell.endswith(".") else []
    return found[0] if found else None


def table(scores: Path) -> tuple[list[str], int]:
    """The table's lines and the fewest questions any of its cells scored."""
    lines = ["| system (paper) | metric | ours [95% CI] | n | paper | cell | source |", "|---|---|---|---|---|---|---|"]
    fewest = None
    for system, cell, metrics, source in ROWS:
        path = _find(scores, cell)
        summary = json.loads(path.read_text()) if path else {}
        n = summary.get("n")
        if isinstance(n, int):
            fewest = n if fewest is None else min(fewest, n)
        for key, label, paper in metrics:
            value, ci = _get(summary, key), _interval(summary, key)
            ours = "not run" if not path else "n/a" if not isinstance(value, (int, float)) else (
                f"{value:.1f}" + (f" [{ci[0]:.1f}, {ci[1]:.1f}]" if ci else " (no interval)"))
            lines.append(f"| {system} | {label} | {ours} | {n if path else '-'} | {paper} | "
                         f"{path.stem if path else cell} | {source} |")
    return lines, fewest or 0


def page(scores: Path, models: str, command: str) -> str:
    lines, fewest = table(scores)
    head = ["# The papers' metrics, ours beside theirs", "",
            f"Written by `{command}` (bench/paper_table.py) from the grid's preset cells. Models: {models}.", "",
            "Each of our numbers is the value and its 95% percentile bootstrap interval over the scored questions "
            "(`cq score --ci`); the paper's number is its own system on the full development set with full "
            "Wikipedia, cited per row. Ours read the shared 9,532-passage corpus and the model named above, so a "
            "gap says how far this setting is from the paper's, not that either is wrong.", ""]
    warnings = []
    if SMALL in models:
        warnings.append(f"a {SMALL} model made these numbers: they check that every preset runs end to end and is "
                        "scored as the paper scores it. They are no finding about any method")
    if fewest < MIN_QUESTIONS:
        warnings.append(f"the smallest cell scored {fewest} question(s) (fewer than {MIN_QUESTIONS}): the intervals "
                        "are too wide to compare with a paper")
    if warnings:
        head += [f"**Not a finding:** {'; '.join(warnings)}.", ""]
    return "\n".join(head + lines) + "\n"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scores", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--models", default="")
    ap.add_argument("--command", default="make paper-table")
    args = ap.parse_args(argv)
    args.out.write_text(page(args.scores, args.models, args.command))
    print(f"paper table  {args.out}")


if __name__ == "__main__":
    main()
