"""Choose the classifier's default threshold on held-out questions and store it with the model.

Reads `cq detect` output with gold labels (`cq convert ambignq`), scores every cut of a fixed grid
(0.05, 0.10, ..., 0.95) by F1 of "ambiguous", and writes the best (the lowest cut on ties) into
MODEL_DIR/cq_threshold.json, with what it was chosen on, which the classifier then uses when no
--threshold is given (cqtools/stages/detect, ``stored_threshold``). docs/benchmarks/first-contact.md
says which questions it was chosen on (never the ones its numbers are reported on).

    python bench/detect_threshold.py --detected fit.detected.jsonl --model-dir cqtools/shipped/detect \
      --chosen-on "covered dev 1-550 + uncovered dev 1-490 (file order)"

or, building that fit set from the shared data and running the model's `cq detect` on it (`make calibrate-detect`):

    python bench/detect_threshold.py --data ../shared/data --work work/detect-fit --model-dir DIR
"""
from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
from pathlib import Path

FIT_COVERED, FIT_UNCOVERED = 550, 490  # the first this many covered / uncovered dev questions, in file order
FIT_WORDS = (f"AmbigNQ dev_light, file order: covered dev questions 1-{FIT_COVERED} and uncovered dev questions "
             f"1-{FIT_UNCOVERED} (covered: the shared corpus holds passages with their source_qid); scores of this "
             "model, question only; docs/benchmarks/first-contact.md reports on covered 551-796 + uncovered 491-707")

GRID = [round(0.05 * i, 2) for i in range(1, 20)]


def f1(labels: list[bool], preds: list[bool]) -> float:
    tp = sum(1 for y, p in zip(labels, preds) if y and p)
    denom = sum(preds) + sum(labels)
    return 2 * tp / denom if denom else 0.0


def choose(labels: list[bool], scores: list[float]) -> dict:
    """The grid cut with the highest F1 (lowest on ties), beside every cut's F1 and always-ambiguous's."""
    sweep = {cut: f1(labels, [s > cut for s in scores]) for cut in GRID}
    best = max(GRID, key=lambda cut: (round(sweep[cut], 12), -cut))
    return {"threshold": best, "f1": round(sweep[best], 4), "always_f1": round(f1(labels, [True] * len(labels)), 4),
            "sweep": {str(c): round(v, 4) for c, v in sweep.items()}}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--detected", type=Path, help="cq detect output with gold (JSONL)")
    ap.add_argument("--data", type=Path, help="instead: the shared data; the fit set is built and detected here")
    ap.add_argument("--work", type=Path, default=Path("work/detect-fit"))
    ap.add_argument("--model-dir", type=Path, required=True, help="the classifier's directory")
    ap.add_argument("--chosen-on", help="which questions, in words (recorded in the file)")
    args = ap.parse_args(argv)
    if (args.detected is None) == (args.data is None):
        raise SystemExit("give --detected FILE or --data DIR")
    if args.data is not None:
        args.detected, args.chosen_on = detect_fit_set(args.data, args.work, args.model_dir), FIT_WORDS
    elif not args.chosen_on:
        raise SystemExit("--detected needs --chosen-on (which questions, in words)")
    labels, scores, ids = [], [], []
    for n, line in enumerate(args.detected.read_text().splitlines(), 1):
        if not line.strip():
            continue
        record = json.loads(line)
        gold, amb = record.get("gold") or {}, record.get("ambiguity") or {}
        if "ambiguous" not in gold or "score" not in amb:
            raise SystemExit(f"{args.detected}:{n}: record {record.get('id')} needs gold.ambiguous and "
                             "ambiguity.score (cq convert ambignq | ... | cq detect)")
        labels.append(bool(gold["ambiguous"]))
        scores.append(float(amb["score"]))
        ids.append(str(record["id"]))
    out = {**choose(labels, scores), "metric": "F1 of ambiguous, grid 0.05-0.95 step 0.05, lowest cut on ties",
           "chosen_on": args.chosen_on, "questions": len(ids), "ambiguous": sum(labels),
           "ids_sha256": hashlib.sha256("\n".join(ids).encode()).hexdigest()}
    (args.model_dir / "cq_threshold.json").write_text(json.dumps(out, indent=2) + "\n")
    print(f"threshold {out['threshold']}: F1 {100 * out['f1']:.1f} (always ambiguous {100 * out['always_f1']:.1f}) "
          f"on {len(ids)} questions")


def fit_ids(data: Path) -> list[str]:
    """The fit set's question ids: the first FIT_COVERED covered dev questions, then the first FIT_UNCOVERED others."""
    dev = json.loads((data / "ambignq" / "dev_light.json").read_text())
    with open(data / "corpus" / "passages.jsonl") as fh:
        covered = {json.loads(line)["source_qid"] for line in fh if line.strip()}
    return ([d["id"] for d in dev if d["id"] in covered][:FIT_COVERED]
            + [d["id"] for d in dev if d["id"] not in covered][:FIT_UNCOVERED])


def detect_fit_set(data: Path, work: Path, model_dir: Path) -> Path:
    """The fit set's questions (gold kept) through ``cq detect --method classifier --model MODEL_DIR``."""
    ids = fit_ids(data)
    work.mkdir(parents=True, exist_ok=True)
    (work / "fit.ids").write_text("\n".join(ids) + "\n")
    cq = [sys.executable, "-m", "cqtools"]
    questions = subprocess.run([*cq, "convert", "ambignq", str(data / "ambignq" / "dev_light.json"), "--ids",
                                str(work / "fit.ids")], check=True, capture_output=True).stdout
    order = {i: n for n, i in enumerate(ids)}  # covered first, then uncovered, each in file order
    lines = sorted(questions.decode().splitlines(), key=lambda line: order[json.loads(line)["id"]])
    detected = subprocess.run([*cq, "detect", "--method", "classifier", "--model", str(model_dir), "-q"],
                              input="\n".join(lines).encode() + b"\n", check=True, capture_output=True).stdout
    (work / "fit.detected.jsonl").write_bytes(detected)
    return work / "fit.detected.jsonl"


if __name__ == "__main__":
    main()
