"""results.md's section on the cost of clarifying (bench/grid/report.py): every CLAM cell scored with --curves, its
adjusted accuracy over lambda, its risk-coverage extremes, its seconds and LM use per question, and its figure."""
from __future__ import annotations

from pathlib import Path

from bench.grid import figures
from bench.grid.text import anchor, fmt
from bench.grid.wall import read_wall

COST_LAMBDAS = (0.0, 0.5, 0.8, 1.0)  # the lambda sweep's columns in the cost section


# the summary's cost.per_answered_question (cq score --task clam --curves on records written with CQ_USAGE=1)
COST_USAGE = (("calls", "LM calls/q"), ("prompt_tokens", "prompt tok/q"), ("generated_tokens", "gen. tok/q"),
              ("seconds", "LM s/q"))


def usage_cells(summary: dict) -> str:
    per = (summary.get("cost") or {}).get("per_answered_question") or {}
    return " | ".join("–" if per.get(key) is None else f"{per[key]:.2f}" if key == "seconds" else f"{per[key]:.1f}"
                      for key, _ in COST_USAGE)


def cost_section(scores: dict, scores_dir: Path) -> list[str]:
    """The cost of clarifying, for every CLAM cell scored with `cq score --task clam --curves`: CLAM's adjusted
    accuracy at a few lambdas, the risk-coverage curve's extremes and best point, the cell's wall seconds per
    scored record (F.wall) and, when its stages ran with CQ_USAGE=1, the LM calls, prompt and generated tokens and
    LM seconds per answered question (the summary's ``cost``: docs/metrics.md). Its figure (accuracy
    against the share clarified, adjusted accuracy against lambda) is figures/cost-NAME.png (figures.py), shown on
    the page unless it would show nothing."""
    cells = [(name, s) for name, s in scores.items() if s.get("task") == "clam" and (s.get("curves") or {}).get("lambda")]
    if not cells:
        return []
    lines = ["## The cost of clarifying", "",
             "`cq score --task clam --curves` (docs/metrics.md): adjusted accuracy (all) at each lambda; the "
             "risk-coverage curve over the detector's threshold (clarify when score > T): accuracy when nothing is "
             "clarified, when every scored question is, and the best point with its share clarified; `unknown` "
             "points rest on answers no record holds (score the always-clarify run with `--direct` the never run). "
             "s/record: the cell's wall seconds per scored record. Per answered question, from the records' "
             "`meta.usage` (stages run with `CQ_USAGE=1`; – when they were not): LM calls, prompt tokens, generated "
             "tokens and seconds inside the LM calls, every stage of the cell's own records summed.", "",
             "| cell | n | " + " | ".join(f"adj. λ={lam:g}" for lam in COST_LAMBDAS)
             + " | acc. none clarified | acc. all clarified | best acc. (clarified %) | unknown points | s/record | "
             + " | ".join(label for _, label in COST_USAGE) + " |",
             "|---|---|" + "---|" * len(COST_LAMBDAS) + "---|---|---|---|---|" + "---|" * len(COST_USAGE)]
    for name, s in cells:
        by_lambda = {p["lambda"]: p["adjusted_accuracy"] for p in s["curves"]["lambda"]}
        points = s["curves"].get("threshold") or []
        best = max(points, key=lambda p: p["accuracy"]) if points else None
        wall = read_wall(scores_dir / f"{name}.json.wall")
        per = f"{wall['total_s'] / s['n']:.2f}" if wall and s.get("n") else "–"
        lines.append(f"| [{name}](#{anchor(name)}) | {s.get('n')} | "
                     + " | ".join(fmt(by_lambda.get(lam)) for lam in COST_LAMBDAS)
                     + (f" | {fmt(points[0]['accuracy'])} | {fmt(points[-1]['accuracy'])} | "
                        f"{fmt(best['accuracy'])} ({fmt(best['clarified'])}) | "
                        f"{sum(1 for p in points if p['unknown'])} of {len(points)}" if points
                        else " | – | – | – (no ambiguity.score) | – ") + f" | {per} | {usage_cells(s)} |")
    planned = figures.plan(scores_dir, None)
    shown = {f"cost-{name}.png": planned.get(f"cost-{name}.png", "not drawn") for name, _ in cells}
    return lines + ["", *figures.embedded(shown), ""]
