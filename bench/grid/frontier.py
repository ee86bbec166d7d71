"""Answer quality against questions asked, for every cell of the grid: the frontier of issue 59, item 2.

A cell's point: x = clarifying questions asked per question (the share of the cell's scored records with a
non-null ``cq``: cq asks one question at most; a CLAM summary's ``questions_asked`` where it has one), y = its
answer metric (:data:`ANSWER`: cbqa's F1, ambigqa's F1 ans, clam's accuracy, asqa's answer F1) with its bootstrap
interval. Metrics differ between tasks, so each task is its own panel. A point is on the frontier when no other
cell of its task answers at least as well with no more questions asked (and better on one of the two).
report.py's frontier section tables the points, figures.py draws figures/frontier.png.

    python bench/grid/frontier.py --scores EXP/scores [--out DIR]   # the section on stdout; --out: the figure too
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

ANSWER = {"cbqa": ("f1", "F1"), "ambigqa": ("f1_ans", "F1 ans"), "clam": ("accuracy", "accuracy (all)"),
          "asqa": ("answer_f1", "answer F1")}
FIGURE = "frontier.png"


def _metric(summary: dict, key: str):
    if summary.get("task") == "clam":
        key = f"all.{key}"
    value: object = summary
    for part in key.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _interval(summary: dict, key: str):
    value: object = (summary.get("ci") or {}).get("intervals") or {}
    for part in (f"all.{key}" if summary.get("task") == "clam" else key).split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value if isinstance(value, list) and len(value) == 2 and None not in value else None


def asked_share(records: Path | None) -> float | None:
    """Questions asked per question in a records file (a record with a non-null ``cq`` asked one)."""
    if records is None:
        return None
    n = asked = 0
    with open(records, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                n += 1
                asked += json.loads(line).get("cq") is not None
    return asked / n if n else None


def points(scores_dir: Path) -> dict:
    """{task: [{cell, asked, answer, low, high, frontier}]} of every answer-scoring cell in ``scores_dir``."""
    from bench.grid.floor import records_of

    out: dict = {}
    for path in sorted(scores_dir.glob("*.json")):
        summary = json.loads(path.read_text())
        task = summary.get("task")
        if task not in ANSWER or not isinstance(_metric(summary, ANSWER[task][0]), (int, float)):
            continue
        asked = summary.get("questions_asked")
        if not isinstance(asked, (int, float)):
            asked = asked_share(records_of(scores_dir, path.stem))
        if asked is None:
            continue
        low, high = _interval(summary, ANSWER[task][0]) or (None, None)
        out.setdefault(task, []).append({"cell": path.stem, "asked": float(asked),
                                         "answer": float(_metric(summary, ANSWER[task][0])), "low": low, "high": high})
    for rows in out.values():
        for row in rows:
            row["frontier"] = not any(o["asked"] <= row["asked"] and o["answer"] >= row["answer"]
                                      and (o["asked"], o["answer"]) != (row["asked"], row["answer"]) for o in rows)
    return out


def plotted(found: dict) -> list:
    """Every value the figure plots on its y axes (each cell's answer metric and its interval)."""
    return [v for rows in found.values() for r in rows for v in (r["answer"], r["low"], r["high"])]


def section(scores_dir: Path) -> list[str]:
    """results.md's frontier section: the figure (left out, with why, when it would show nothing:
    shows.nothing_shown) and a table per task (empty when no cell has a point)."""
    from bench.grid.shows import nothing_shown

    found = points(scores_dir)
    if not found:
        return []
    blank = nothing_shown(plotted(found))
    lines = ["## Answer quality against questions asked (the frontier)", "",
             "Every cell that scores answers, by clarifying questions asked per question (cq asks one at most) and "
             "its answer metric with its 95% bootstrap interval; ★ marks the frontier (no other cell of the task "
             "answers as well with no more questions). bench/grid/frontier.py.", "",
             f"Figure {FIGURE} left out: {blank}." if blank
             else f"![answer quality against questions asked](figures/{FIGURE})", ""]
    for task, rows in sorted(found.items()):
        lines += [f"| {task} cell | questions asked | {ANSWER[task][1]} | 95% interval | frontier |",
                  "|---|---|---|---|---|"]
        for r in sorted(rows, key=lambda r: (r["asked"], -r["answer"])):
            interval = f"[{r['low']:.1f}, {r['high']:.1f}]" if r["low"] is not None else "-"
            lines.append(f"| {r['cell']} | {r['asked']:.2f} | {r['answer']:.1f} | {interval} | "
                         f"{'★' if r['frontier'] else ''} |")
        lines.append("")
    return lines


def draw(scores_dir: Path, out: Path) -> Path | None:
    """figures/frontier.png: a panel per task, each cell a point with its interval, the frontier as a step line
    (None, and no figure, when no cell has a point or the figure would show nothing)."""
    from bench.grid.shows import nothing_shown

    found = points(scores_dir)
    if not found or nothing_shown(plotted(found)):
        (out / FIGURE).unlink(missing_ok=True)  # an earlier run's figure is not this one's
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(found), figsize=(4.5 * len(found), 4), squeeze=False)
    for ax, (task, rows) in zip(axes[0], sorted(found.items())):
        for r in rows:
            color = "tab:red" if r["frontier"] else "tab:blue"
            if r["low"] is not None:
                ax.plot([r["asked"], r["asked"]], [r["low"], r["high"]], color=color, linewidth=1, alpha=0.6)
            ax.plot([r["asked"]], [r["answer"]], "o", color=color)
        at: dict = {}  # cells on the same point share one label, not labels drawn over each other
        for r in rows:
            at.setdefault((r["asked"], r["answer"]), []).append(r["cell"])
        for (x, y), names in at.items():
            ax.annotate("\n".join(names), (x, y), fontsize=6, xytext=(4, 2), textcoords="offset points", va="top")
        front = sorted((r["asked"], r["answer"]) for r in rows if r["frontier"])
        ax.step([x for x, _ in front], [y for _, y in front], where="post", color="tab:red", linewidth=1)
        ax.set_xlim(-0.05, 1.3)  # cq asks one question at most: the whole range, room for the labels on the right
        ax.set_xlabel("clarifying questions asked per question")
        ax.set_ylabel(ANSWER[task][1])
        ax.set_title(task, fontsize=10)
    fig.tight_layout()
    target = out / FIGURE
    fig.savefig(target, dpi=100)
    plt.close(fig)
    return target


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scores", required=True, type=Path)
    ap.add_argument("--out", type=Path, help="write figures/frontier.png's figure into this directory too")
    args = ap.parse_args(argv)
    print("\n".join(section(args.scores)))
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        print(draw(args.scores, args.out) or "no cell scores answers: no figure")


if __name__ == "__main__":
    main()
