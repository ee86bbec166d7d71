"""Figures for `make compare`'s report, written next to results.md: a forest plot per task of every cell's
main metrics with their bootstrap intervals (`cq score --ci` summaries), and one of the paired differences
(`cq score --paired` outputs, B - A with its interval; the line at 0 is "no difference"), and frontier.png (answer
quality against questions asked, every cell: bench/grid/frontier.py). A figure that would show nothing (every
value it plots the same: shows.py) is not drawn; results.md says which and why. Detection's ROC
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
from bench.grid.shows import nothing_shown  # noqa: E402

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


def cost_curves(scores: Path) -> dict:
    """{cell: curves} of every CLAM summary scored with --curves (the cost section's cells)."""
    out = {}
    for path in sorted(scores.glob("*.json")):
        summary = json.loads(path.read_text())
        curves = summary.get("curves") or {}
        if summary.get("task") == "clam" and curves.get("lambda"):
            out[path.stem] = curves
    return out


def cost_values(curves: dict) -> list:
    """What a cost figure plots: adjusted accuracy over lambda, accuracy and adjusted accuracy over thresholds."""
    return ([p.get("adjusted_accuracy") for p in curves["lambda"]]
            + [p.get(k) for p in curves.get("threshold") or [] for k in ("accuracy", "adjusted_accuracy")])


def plan(scores: Path, pairs_dir: Path | None) -> dict:
    """{figure file name: None to draw it, or why it is left out} for every cost and forest figure of the report
    (frontier.png: frontier.py's own), in the order the page shows them; one rule (shows.nothing_shown) for
    what is drawn here and what report.py embeds."""
    out = {f"cost-{cell}.png": nothing_shown(cost_values(curves)) for cell, curves in cost_curves(scores).items()}
    for task, rows in sorted(cells(scores).items()):
        out[f"forest-{task}.png"] = nothing_shown(v for row in rows for v in row[2:])
    diffs = pairs(pairs_dir)
    if diffs:
        out["forest-pairs.png"] = nothing_shown(v for row in diffs for v in row[1:4])
    return out


def write(scores: Path, pairs_dir: Path | None, out: Path) -> list[Path]:
    """Draws every figure of :func:`plan` that shows something, and frontier.png; returns the files written."""
    from cqtools.score.plots import clarifying_cost

    out.mkdir(parents=True, exist_ok=True)
    drawn = plan(scores, pairs_dir)
    for name, why in drawn.items():  # one left out now may be there from an earlier run: the page must not show it
        if why is not None:
            (out / name).unlink(missing_ok=True)
    written = []
    for cell, curves in cost_curves(scores).items():
        if drawn[f"cost-{cell}.png"] is None:
            written.append(out / f"cost-{cell}.png")
            clarifying_cost(str(written[-1]), curves["lambda"], curves.get("threshold") or [])
    front = frontier.draw(scores, out)  # answer quality against questions asked, every cell (bench/grid/frontier.py)
    written += [front] if front else []
    for task, rows in sorted(cells(scores).items()):
        if drawn[f"forest-{task}.png"] is None:
            written.append(out / f"forest-{task}.png")
            forest([(f"{cell} ({metric})", p, lo, hi) for cell, metric, p, lo, hi in rows],
                   f"{task}: 95% bootstrap intervals", written[-1])
    if drawn.get("forest-pairs.png", "none") is None:
        written.append(out / "forest-pairs.png")
        forest(pairs(pairs_dir), "B − A, 95% paired bootstrap (grey: cannot tell)", written[-1], zero=True)
    return written


def embedded(shown: dict) -> list[str]:
    """results.md's lines for some figures of :func:`plan`: each one drawn as an image on the page, and one line
    naming those left out and why."""
    lines = [f"![{name}](figures/{name})" for name, why in shown.items() if why is None]
    left = [f"{name} ({why})" for name, why in shown.items() if why is not None]
    return lines + ([f"Left out, as showing nothing: {'; '.join(left)}."] if left else [])


def section(scores: Path, pairs_dir: Path | None) -> list[str]:
    """results.md's figures section: the forest plots (figures.py writes them into figures/ beside the report;
    `make report` runs it after report.py), one per task with intervals and one of the paired differences."""
    shown = {name: why for name, why in plan(scores, pairs_dir).items() if name.startswith("forest-")}
    return ["## Figures", "", *embedded(shown), ""] if shown else []


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
