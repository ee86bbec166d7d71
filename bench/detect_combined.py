"""`make bench-combiner`: does the combined detector (classifier + retrieval signals) detect
ambiguity better than the question-only classifier, and is the gain real or the corpus's?

1. The question-only classifier (`make train-detect`) on all visible AmbigNQ dev questions,
   with 95% bootstrap intervals (`cq score --task detect --ci`).
2. Combiners (`cq train combiner`) with several signal sets on the covered dev questions (those
   the shared corpus holds passages for), BM25 top 10; each reports on its 40% validation part
   (by id hash) with intervals, and the paired AUROC difference to the classifier alone.
3. The confound check. The shared corpus was assembled per question: ASQA knowledge passages
   exist only for ambiguous questions, while every unambiguous covered question has only Google
   snippets. A retrieval signal can therefore learn which source a question's passages came from.
   The check recomputes the paired difference inside strata of questions whose passages share one
   source mix (read from the corpus's `source` / `source_qid` fields: analysis only; no cq stage
   ever reads them). A gain that holds only across strata is the corpus, not ambiguity.

Writes docs/benchmarks/detect_combined.md (generated; every number from this run).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import CQ, machine, read_jsonl, timed  # noqa: E402
from cqtools.train import combiner as train_combiner  # noqa: E402

SIGNAL_SETS = ["classifier,titles,namesakes,parens", "classifier,titles,namesakes,parens,scores",
               "titles,namesakes,parens,scores"]


def paired_auroc(y, a, b) -> str:
    """clf AUROC | comb AUROC | diff [low, high] (the trainer's own paired bootstrap)."""
    d = train_combiner.paired_auroc(y, a, b)
    if d["diff"] is None:
        return "– | – | –"
    return f"{d['a']:.1f} | {d['b']:.1f} | {d['diff']:+.1f} [{d['ci'][0]:+.1f}, {d['ci'][1]:+.1f}]"


def cell(m: dict) -> str:
    return f"{m['value']:.1f} [{m['ci'][0]:.1f}, {m['ci'][1]:.1f}]" if m and m.get("ci") else "–"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--classifier", required=True, help="a `cq train detect` dir (question-only)")
    ap.add_argument("--retrieved", required=True, help="covered dev questions with BM25 top-10 passages")
    ap.add_argument("--work", required=True)
    ap.add_argument("--out", default="docs/benchmarks/detect_combined.md")
    args = ap.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    data = Path(args.data)

    questions = work / "dev.jsonl"
    timed(CQ + ["convert", "ambignq", str(data / "ambignq/dev_light.json")], stdout=str(questions))
    clf_out = work / "dev.classifier.jsonl"
    t_clf = timed(CQ + ["detect", "--method", "classifier", "--model", args.classifier, "--passages", "0", "-q"],
                  stdin=str(questions), stdout=str(clf_out))
    score_out = work / "dev.classifier.score.json"
    timed(CQ + ["score", "--task", "detect", "--ci"], stdin=str(clf_out), stdout=str(score_out))
    clf_summary = json.loads(score_out.read_text())
    clf_records = read_jsonl(clf_out)
    clf_score = {r["id"]: r["ambiguity"]["score"] for r in clf_records}
    n_ambiguous = sum(bool(r["gold"]["ambiguous"]) for r in clf_records)

    sources: dict[str, set] = defaultdict(set)
    for p in read_jsonl(data / "corpus/passages.jsonl"):
        sources[p["source_qid"]].add(p["source"])

    rows, strata_rows = [], []
    for signals in SIGNAL_SETS:
        model = work / f"combiner.{signals.replace(',', '-')}"
        t_train = timed(CQ + ["train", "combiner", "--train", args.retrieved, "--classifier", args.classifier,
                              "--features", signals, "--out", str(model), "-q"], stdout=str(work / "train.out"))
        report = json.loads((model / "cq_train.json").read_text())
        val = report["validation"]
        detected = work / f"detected.{model.name}.jsonl"
        timed(CQ + ["detect", "--method", "combined", "--model", str(model), "-q"], stdin=args.retrieved,
              stdout=str(detected))
        recs = {r["id"]: r for r in read_jsonl(detected)}
        rows.append(f"| `{signals}` | {val['records']} | {cell(val['combined']['auroc'])} | "
                    f"{cell(val['combined']['accuracy'])} | {val['majority_accuracy']:.1f} | "
                    f"{paired_auroc(*_arrays([recs[i] for i in report['validation_ids']], clf_score))} | "
                    f"{t_train['seconds']:.0f} |")
        for name, keep in (("all validation", lambda i: True),
                           ("snippets only", lambda i: sources[i] == {"google-snippet"}),
                           ("any snippet", lambda i: "google-snippet" in sources[i])):
            ids = [i for i in report["validation_ids"] if keep(i)]
            y, a, b = _arrays([recs[i] for i in ids], clf_score)
            strata_rows.append(f"| `{signals}` | {name} | {len(ids)} | {int(y.sum())} | {paired_auroc(y, a, b)} |")

    mix = defaultdict(lambda: [0, 0])
    for r in read_jsonl(args.retrieved):
        mix[", ".join(sorted(sources[r["id"]]))][int(r["gold"]["ambiguous"])] += 1
    c = {k: clf_summary[k] for k in ("accuracy", "f1", "auroc")}
    ci = clf_summary["ci"]["intervals"]
    lines = [
        "# Combined ambiguity detector vs the question-only classifier",
        "",
        f"`make bench-combiner` on {time.strftime('%Y-%m-%d')} ({machine()}); generated by bench/detect_combined.py.",
        "Retrieval: BM25 top 10 over ../shared/data/corpus (9,532 passages). Classifier: `make train-detect`",
        "(MiniLM-L6, question only, trained on AmbigNQ train). Intervals: 95% bootstrap, 1,000 resamples, seed 0.",
        "",
        "## Question-only classifier, all visible AmbigNQ dev",
        "",
        "| n | ambiguous | Acc | F1 | AUROC | wall s |",
        "|---|---|---|---|---|---|",
        f"| {clf_summary['n']} | {n_ambiguous} | {c['accuracy']:.1f} [{ci['accuracy'][0]:.1f}, "
        f"{ci['accuracy'][1]:.1f}] | {c['f1']:.1f} [{ci['f1'][0]:.1f}, {ci['f1'][1]:.1f}] | {c['auroc']:.1f} "
        f"[{ci['auroc'][0]:.1f}, {ci['auroc'][1]:.1f}] | {t_clf['seconds']:.0f} |",
        "",
        "## Combiners on the covered dev questions (validation part)",
        "",
        "AUROC and accuracy of the combiner with intervals; `clf` / `comb` are the classifier alone and the",
        "combiner on the same validation questions, `diff` their paired difference (comb - clf) with its interval.",
        "The threshold is chosen by cross-validated accuracy on the training part.",
        "",
        "| signals | n | AUROC | Acc | majority Acc | clf AUROC | comb AUROC | diff | train s |",
        "|---|---|---|---|---|---|---|---|---|",
        *rows,
        "",
        "## The confound check",
        "",
        "Which sources the corpus holds for each covered question, by gold label (unambiguous, ambiguous):",
        "",
        "| sources of the question's passages | unambiguous | ambiguous |",
        "|---|---|---|",
        *[f"| {k} | {v[0]} | {v[1]} |" for k, v in sorted(mix.items(), key=lambda kv: -sum(kv[1]))],
        "",
        "Paired AUROC difference (combiner - classifier) inside strata of the validation part; a stratum",
        "holds questions whose passages come from the same sources, so the source cannot separate them:",
        "",
        "| signals | stratum | n | ambiguous | clf AUROC | comb AUROC | diff |",
        "|---|---|---|---|---|---|---|",
        *strata_rows,
        "",
        "Read: a combiner whose gain over the classifier holds on \"all validation\" but not inside the",
        "strata has learned how the corpus was assembled, not ambiguity; it would not carry over to a",
        "user's Wikipedia index. Numbers above are from this run only; see the closing notes of issue 11.",
    ]
    Path(args.out).write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}")


def _arrays(records: list[dict], clf_score: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    y = np.array([bool(r["gold"]["ambiguous"]) for r in records])
    a = np.array([clf_score[r["id"]] for r in records])
    b = np.array([r["ambiguity"]["score"] for r in records])
    return y, a, b


if __name__ == "__main__":
    main()
