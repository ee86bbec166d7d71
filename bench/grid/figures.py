"""Figures for `make compare`'s report, written next to results.md: a forest plot per task of every cell's
main metrics with their bootstrap intervals (`cq score --ci` summaries), and one of the paired differences
(`cq score --paired` outputs, B - A with its interval; the line at 0 is "no difference"), and frontier.png (answer
quality against questions asked, every cell: bench/grid/frontier.py). Detection's ROC
and PR curves are `cq score --task detect --plot`'s.

    python bench/grid/figures.py --scores DIR --pairs DIR --out DIR
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.grid import frontier  # noqa: E402
from bench.grid.pairs import MIN_PAIRED_N, PAIR_METRICS, UNITS, cannot_tell  # noqa: E402

# The metrics a task's forest plot shows (those its summaries give intervals for).
MAIN = {"detect": ["f1", "auroc"], "cq": ["options_f1"], "cbqa": ["f1"], "ambigqa": ["f1_ans", "f1_ans_multi"],
        "asqa": ["str_em", "disambig_f1"], "clam": ["accuracy"], "retrieval": ["recall@10", "recall@5"]}


def flat_intervals(intervals: dict, prefix: str = "") -> dict:
    out = {}
    for key, value in intervals.items():
        if isinstance(value, dict):
            out.update(flat_intervals(value, f"{prefix}{key}."))
        elif isinstance(value, list) and len(value) == 2 and None not in value:
            out[prefix + key] = value
    return out


def cells(scores: Path) -> dict:
    """{task: [(cell, metric, point, low, high)]} from the summaries in ``scores``; a cell that read gold is named
    "NAME ⊤ upper bound", as results.md marks it (floor.py's gold_reads)."""
    from bench.grid.floor import gold_reads_file, records_of

    out: dict = {}
    for path in sorted(scores.glob("*.json")):
        summary = json.loads(path.read_text())
        name = path.stem + (" ⊤ upper bound" if gold_reads_file(records_of(scores, path.stem)) else "")
        intervals = flat_intervals((summary.get("ci") or {}).get("intervals") or {})
        task = summary.get("task", "?")
        for metric in MAIN.get(task, list(intervals)[:1]):
            point = summary.get(metric)
            if metric in intervals and isinstance(point, (int, float)):
                out.setdefault(task, []).append((name, metric, point, *intervals[metric]))
    return out


def pairs(pairs_dir: Path | None, min_n: int = MIN_PAIRED_N) -> list:
    """[(label, point, low, high, readable)]: each pair's differences on the metrics results.md states it on
    (pairs.py's PAIR_METRICS), named as its text names it, "B − A" (file A--B.json); ``readable`` is False where
    the text says "cannot tell" (too few shared questions, or a zero-width interval)."""
    out = []
    for path in sorted(pairs_dir.glob("*--*.json")) if pairs_dir and pairs_dir.is_dir() else []:
        a, b = path.name[:-len(".json")].split("--", 1)
        report = json.loads(path.read_text())
        metrics, task, n = report.get("metrics") or {}, report.get("task"), report.get("n")
        for key, label in PAIR_METRICS.get(task, []):
            m = metrics.get(key)
            if m and None not in (m.get("diff"), m.get("low"), m.get("high")):
                refused = cannot_tell(m, n, UNITS.get(task, "questions"), min_n)
                out.append((f"{b} − {a} ({label}, n={n}{'; cannot tell' if refused else ''})", m["diff"], m["low"],
                            m["high"], refused is None))
    return out


def forest(rows: list, title: str, out: Path, zero: bool = False) -> None:
    """One horizontal interval per row, label on the left."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 0.35 * len(rows) + 1.2))
    for y, (_, point, low, high, *readable) in enumerate(reversed(rows)):
        color = "tab:blue" if all(readable) else "tab:grey"  # grey: a pair the text cannot tell about
        ax.plot([low, high], [y, y], color=color, linewidth=2)
        ax.plot([point], [y], "o", color=color)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([r[0] for r in reversed(rows)], fontsize=8)
    if zero:
        ax.axvline(0, color="grey", linestyle="--", linewidth=1)
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)


def cost_figures(scores: Path, out: Path) -> list[Path]:
    """cost-NAME.png for every CLAM summary scored with --curves (report.py's cost section links them): the figure
    `cq score --task clam --curves --plot` draws, from the summary's curves."""
    from cqtools.score.plots import clarifying_cost

    written = []
    for path in sorted(scores.glob("*.json")):
        summary = json.loads(path.read_text())
        curves = summary.get("curves") or {}
        if summary.get("task") == "clam" and curves.get("lambda"):
            target = out / f"cost-{path.stem}.png"
            clarifying_cost(str(target), curves["lambda"], curves.get("threshold") or [])
            written.append(target)
    return written


def write(scores: Path, pairs_dir: Path | None, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written = cost_figures(scores, out)
    drawn = frontier.draw(scores, out)  # answer quality against questions asked, every cell (bench/grid/frontier.py)
    written += [drawn] if drawn else []
    for task, rows in sorted(cells(scores).items()):
        target = out / f"forest-{task}.png"
        forest([(f"{cell} ({metric})", p, lo, hi) for cell, metric, p, lo, hi in rows],
               f"{task}: 95% bootstrap intervals", target)
        written.append(target)
    diffs = pairs(pairs_dir)
    if diffs:
        target = out / "forest-pairs.png"
        forest(diffs, "B − A, 95% paired bootstrap (grey: cannot tell)", target, zero=True)
        written.append(target)
    return written


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scores", required=True, type=Path)
    ap.add_argument("--pairs", type=Path)
    ap.add_argument("--out", required=True, type=Path)
    args = ap.parse_args(argv)
    for path in write(args.scores, args.pairs, args.out):
        print(path)


if __name__ == "__main__":
    main()
