"""Do the pipeline's own signals help the classifier rank ambiguous questions, inside each kind of question?

Issue 56 asks the detector to use what the pipeline knows (the passages, the distinct answers the reader finds).
On the shared corpus, "the corpus holds this question's passages" separates 88% ambiguous from 24%, so a signal
of coverage (a high rerank score, an answer read from a good passage) raises AUROC on a mix of covered and
uncovered questions without telling ambiguous questions from the others. This script fits the combined detector's
logistic model (cqtools.stages.detect.combined.fit_logistic) on the fit questions for each set of signals and
reports AUROC on the report questions: on the mix, inside the covered and the uncovered questions, and fit and
scored inside one stratum only.

Inputs, for the fit and the report questions each: `cq answer --mode multi` records of the README's reranked top
10 (MULTI) and `cq detect` records of the same (DET, the classifier's score); optionally `cq retrieve --method
dense --hits 50` records over an index of AmbigNQ train questions whose passage ids start "A-" (ambiguous) or "U-"
(KNN: the share of ambiguous neighbours). --covered: the question ids the corpus holds passages for.

    python bench/detect_signals.py --fit MULTI DET [KNN] --report MULTI DET [KNN] --covered covered.ids \
      [--write-dir DIR]

--write-dir writes det.NAME.jsonl (report records, ambiguity {label at 0.5, score}) for `cq score --task detect`,
and det.NAME.covered.jsonl / det.NAME.uncovered.jsonl, the same records split by stratum.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import read_jsonl  # noqa: E402
from cqtools.metrics.detect import auroc  # noqa: E402
from cqtools.stages.detect import distinct_answers  # noqa: E402
from cqtools.stages.detect.combined import fit_logistic, title_signals  # noqa: E402
from cqtools.stages.gen_cq.answers import supported_answers  # noqa: E402

TOP_K = 10   # the README's rerank depth
KNN_K = 50   # neighbours read (chosen on the fit questions: 5, 10, 20, 50 gave fit AUROC 62.5-67.0)
SETS = {
    "classifier": ["classifier"],
    "clf+answers": ["classifier", "answers"],
    "clf+supported": ["classifier", "supported"],
    "clf+answers+supported": ["classifier", "answers", "supported"],
    "clf+titles": ["classifier", "titles", "namesakes", "parens"],
    "clf+reader+titles": ["classifier", "answers", "supported", "titles", "namesakes", "parens"],
    "clf+rerank": ["classifier", "rr_top", "rr_pos"],
    "clf+knn": ["classifier", "knn"],
    "clf+knn+answers+supported": ["classifier", "knn", "answers", "supported"],
    "answers alone": ["answers"],
    "supported alone": ["supported"],
}


def signals(record: dict, p_ambiguous: float) -> dict[str, float]:
    """classifier: the logit; answers: distinct answers (multi mode); supported: pred-answers' options (one a
    passage, from passages the reranker scored at least 0); rr_top / rr_pos: the best rerank score and how many of
    the top 10 score above 0; titles, namesakes, parens: the combined detector's title signals."""
    p = min(max(p_ambiguous, 1e-6), 1 - 1e-6)
    scores = [float(x.get("rerank_score") or 0.0) for x in record["passages"][:TOP_K]]
    return {"classifier": math.log(p / (1 - p)), "answers": float(distinct_answers(record)),
            "supported": float(len(supported_answers(record, None, 0.0))),
            "rr_top": scores[0] if scores else 0.0, "rr_pos": float(sum(s > 0 for s in scores)),
            **title_signals(record, TOP_K)}


def load(files: list[str], covered: set[str]):
    """(records, their signals, gold labels, covered or not) from MULTI DET [KNN]."""
    multi, det, knn = (files + [None])[:3]
    scores = {r["id"]: r["ambiguity"]["score"] for r in read_jsonl(det)}
    near = {r["id"]: float(np.mean([p["id"].startswith("A-") for p in r["passages"][:KNN_K]]))
            for r in read_jsonl(knn)} if knn else {}
    records = list(read_jsonl(multi))
    lacking = [r["id"] for r in records if r["id"] not in scores or (knn and r["id"] not in near)]
    if lacking:
        sys.exit(f"detect_signals: {len(lacking)} records of {multi} have no score in {det} or {knn} "
                 f"(first: {lacking[0]}); give files of the same questions")
    rows = [{**signals(r, scores[r["id"]]), "knn": near.get(r["id"], float("nan"))} for r in records]
    y = np.array([bool(r["gold"]["ambiguous"]) for r in records])
    return records, rows, y, np.array([str(r["id"]) in covered for r in records])


def matrix(rows: list[dict], cols: list[str]) -> np.ndarray:
    return np.array([[row[c] for c in cols] for row in rows], dtype=np.float64)


def fitted(fit_x: np.ndarray, fit_y: np.ndarray):
    """The logistic model fit once on (fit_x, fit_y), as a function from a feature matrix to logits."""
    mean, scale, w, b = fit_logistic(fit_x, fit_y)
    return lambda x: ((x - mean) / scale) @ w + b


def pct(y: np.ndarray, s: np.ndarray) -> str:
    return f"{100 * auroc(list(y), list(s)):.1f}"


def write(directory: str, name: str, records: list[dict], scores: np.ndarray, covered: np.ndarray) -> None:
    """det.NAME.jsonl, and its covered and uncovered records apart: what `cq score --task detect` reads."""
    rows = [{"id": r["id"], "question": r["question"], "gold": r["gold"],
             "ambiguity": {"label": bool(p > 0.5), "score": float(p)}}
            for r, p in zip(records, 1 / (1 + np.exp(-scores)))]
    for suffix, keep in (("", None), (".covered", True), (".uncovered", False)):
        with open(os.path.join(directory, f"det.{name}{suffix}.jsonl"), "w") as fh:
            fh.writelines(json.dumps(row) + "\n" for row, c in zip(rows, covered) if keep is None or c == keep)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--fit", nargs="+", required=True, metavar="FILE")
    ap.add_argument("--report", nargs="+", required=True, metavar="FILE")
    ap.add_argument("--covered", required=True)
    ap.add_argument("--write-dir")
    args = ap.parse_args()
    covered = set(Path(args.covered).read_text().split())
    fr, ff, fy, fc = load(args.fit, covered)
    rr, rf, ry, rc = load(args.report, covered)
    if len(args.fit) != len(args.report) or len(args.fit) not in (2, 3):
        sys.exit("detect_signals: --fit and --report each take MULTI DET, or both MULTI DET KNN")
    sets = {k: v for k, v in SETS.items() if "knn" not in v or len(args.fit) > 2}
    print(f"fit: {len(fr)} questions ({int(fy.sum())} ambiguous, {int(fc.sum())} covered); report: {len(rr)} "
          f"({int(ry.sum())} ambiguous, {int(rc.sum())} covered)\n")
    top = np.array([row["rr_top"] for row in rf])
    print(f"coverage on the report questions: the top rerank score tells covered from uncovered at AUROC "
          f"{pct(rc, top)}; being covered predicts ambiguity at AUROC {pct(ry, rc.astype(float))}\n")
    print("| signals | fit AUROC | report, all | report, covered | report, uncovered |\n|---|---|---|---|---|")
    for name, cols in sets.items():
        model = fitted(matrix(ff, cols), fy)
        fit_s, rep_s = model(matrix(ff, cols)), model(matrix(rf, cols))
        print(f"| {name} | {pct(fy, fit_s)} | {pct(ry, rep_s)} | {pct(ry[rc], rep_s[rc])} | "
              f"{pct(ry[~rc], rep_s[~rc])} |")
        if args.write_dir:
            write(args.write_dir, name.split()[0].replace("+", "_"), rr, rep_s, rc)
    print("\nFit and scored inside one stratum (the model fit on that stratum's fit questions only):\n")
    print("| signals | covered: fit | covered: report | uncovered: fit | uncovered: report |\n|---|---|---|---|---|")
    for name, cols in sets.items():
        cells = []
        for keep in (True, False):
            fx, fyy = matrix(ff, cols)[fc == keep], fy[fc == keep]
            model = fitted(fx, fyy)
            cells += [pct(fyy, model(fx)), pct(ry[rc == keep], model(matrix(rf, cols)[rc == keep]))]
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
