"""`make bench-detect-gencq`: ambiguity detection on AmbigNQ dev, CQ generation on the fixtures.

Detection: an evaluation sample of AmbigNQ dev (the dev questions that have passages in
../shared/data/corpus, then further dev questions up to --n); passages are BM25 top-3 from that
corpus. The classifier is fine-tuned on a slice of AmbigNQ train (with its BM25 passages) for a
bounded time, early-stopping on other dev questions (disjoint from the evaluation sample).
CQ generation: the 18 ambiguous fixture questions against their hand-written CQs (AmbigNQ data
has no gold CQs). Every step is a separate `cq` process (wall time includes model loading).
Writes docs/benchmarks/detect_gencq.md.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import CQ, ROOT, machine, read_jsonl, timed, write_jsonl  # noqa: E402


class Steps(dict):
    """Timed steps; with ``reuse``, a step whose output file and timing exist is not run again
    (timings kept in WORK/steps.json), so one method can be re-measured alone."""

    def __init__(self, work: Path, reuse: bool):
        super().__init__()
        self.path = work / "steps.json"
        self.saved = json.loads(self.path.read_text()) if reuse and self.path.exists() else {}

    def run(self, name: str, cmd: list[str], stdin: str | None = None, stdout: str | None = None) -> dict:
        if name in self.saved and stdout and Path(stdout).exists() and Path(stdout).stat().st_size:
            self[name] = self.saved[name]
        else:
            self[name] = timed(cmd, stdin=stdin, stdout=stdout)
        self.saved[name] = self[name]
        self.path.write_text(json.dumps(self.saved, indent=1))
        return self[name]


def score(task: str, path: Path, work: Path, *extra: str) -> dict:
    out = work / f"score.{path.stem}.json"
    timed(CQ + ["score", "--task", task, *extra], stdin=str(path), stdout=str(out))
    return json.loads(out.read_text())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--work", default="work/bench-detect")
    ap.add_argument("--out", default="docs/benchmarks/detect_gencq.md")
    ap.add_argument("--n", type=int, default=300, help="evaluation questions from AmbigNQ dev")
    ap.add_argument("--stop-dev", type=int, default=200, help="other dev questions for early stopping")
    ap.add_argument("--train", type=int, default=1200, help="AmbigNQ train records for the classifier")
    ap.add_argument("--train-seconds", type=float, default=240)
    ap.add_argument("--llm", default="HuggingFaceTB/SmolLM2-135M-Instruct")
    ap.add_argument("--clf-passages", type=int, default=0,
                    help="passages in the classifier input (0: question only; 3 x 256 tokens is ~18 s/step here)")
    ap.add_argument("--reuse", action="store_true", help="skip steps whose outputs exist (see Steps)")
    args = ap.parse_args()
    data, work = Path(args.data), Path(args.work)
    if not (data / "ambignq" / "dev_light.json").exists():
        raise SystemExit(f"{data} not found: the benchmark needs ../shared/data")
    work.mkdir(parents=True, exist_ok=True)
    steps = Steps(work, args.reuse)

    # -- data ------------------------------------------------------------------------------------
    timed(CQ + ["convert", "ambignq", str(data / "ambignq" / "dev_light.json")], stdout=str(work / "dev_all.jsonl"))
    timed(CQ + ["convert", "ambignq", str(data / "ambignq" / "train_light.json"), "--limit", str(args.train)],
          stdout=str(work / "train.jsonl"))
    covered = {json.loads(line)["source_qid"] for line in open(data / "corpus" / "passages.jsonl")}
    dev_all = read_jsonl(work / "dev_all.jsonl")
    first = [r for r in dev_all if r["id"] in covered]
    rest = [r for r in dev_all if r["id"] not in covered]
    evaluation = (first + rest)[: args.n]
    chosen = {r["id"] for r in evaluation}
    stop_dev = [r for r in rest if r["id"] not in chosen][: args.stop_dev]
    write_jsonl(work / "eval.jsonl", evaluation)
    write_jsonl(work / "stopdev.jsonl", stop_dev)

    index = work / "idx"
    if not (index / "cq_index.json").exists():
        steps.run("index corpus (bm25)", CQ + ["index", "--corpus", str(data / "corpus" / "passages.jsonl"),
                                               "--out", str(index), "--overwrite"])
    for name in ("eval", "stopdev", "train"):
        steps.run(f"retrieve bm25 top-3 ({name})", CQ + ["retrieve", "--index", str(index), "--hits", "3", "-q"],
                  stdin=str(work / f"{name}.jsonl"), stdout=str(work / f"{name}.ret.jsonl"))

    # -- detection ---------------------------------------------------------------------------------
    model_dir = work / f"detect-model-p{args.clf_passages}"
    steps.run(f"train detect (passages {args.clf_passages})",
              CQ + ["train", "detect", "--train", str(work / "train.ret.jsonl"), "--dev", str(work / "stopdev.ret.jsonl"),
                    "--out", str(model_dir), "--max-seconds", str(args.train_seconds), "--epochs", "3",
                    "--batch-size", "16", "--eval-every", "25", "--patience", "4", "--passages", str(args.clf_passages),
                    "-q"], stdout=str(work / f"train_detect.p{args.clf_passages}.json"))
    report = json.loads((model_dir / "cq_train.json").read_text())
    runs = {
        f"classifier (MiniLM-L6 fine-tuned, {args.clf_passages} passages)":
            ["--method", "classifier", "--model", str(model_dir), "--passages", str(args.clf_passages)],
        f"llm ({args.llm.split('/')[-1]}, 5-shot)": ["--method", "llm", "--model", args.llm, "--batch-size", "16"],
        "always": ["--method", "always"],
        "never": ["--method", "never"],
    }
    detect_rows = {}
    for label, cmd in runs.items():
        out = work / f"detect.{cmd[1]}.jsonl"
        if cmd[1] == "classifier":
            out = work / f"detect.classifier.p{args.clf_passages}.jsonl"
        steps.run(f"detect {cmd[1]}", CQ + ["detect", *cmd, "-q"], stdin=str(work / "eval.ret.jsonl"), stdout=str(out))
        detect_rows[label] = (cmd[1], score("detect", out, work, "--sweep"))

    # -- CQ generation on the fixtures -------------------------------------------------------------
    fx_index = work / "fx-idx"
    if not (fx_index / "cq_index.json").exists():
        timed(CQ + ["index", "--corpus", str(ROOT / "fixtures" / "corpus.jsonl"), "--out", str(fx_index), "--overwrite"])
    ambiguous = [r for r in read_jsonl(ROOT / "fixtures" / "questions.jsonl") if r["gold"]["ambiguous"]]
    write_jsonl(work / "fx_amb.jsonl", ambiguous)
    timed(CQ + ["retrieve", "--index", str(fx_index), "--hits", "3", "-q"], stdin=str(work / "fx_amb.jsonl"),
          stdout=str(work / "fx_amb.ret.jsonl"))
    cq_runs = {
        "from-dqs (reads gold DQs: upper bound)": ["--method", "from-dqs"],
        f"llm 6-shot ({args.llm.split('/')[-1]}, top-3 passages)": ["--method", "llm", "--model", args.llm],
        f"llm zero-shot ({args.llm.split('/')[-1]}, top-3 passages)": ["--method", "llm", "--zero-shot",
                                                                        "--model", args.llm],
    }
    cq_rows = {}
    for n, (label, cmd) in enumerate(cq_runs.items()):
        out = work / f"gencq.{n}.jsonl"
        steps.run(f"gen-cq {' '.join(cmd[:2] + [c for c in cmd if c == '--zero-shot'])}", CQ + ["gen-cq", *cmd, "-q"],
                  stdin=str(work / "fx_amb.ret.jsonl"), stdout=str(out))
        recs = read_jsonl(out)
        valid = sum(bool(r["cq"] and r["cq"]["valid"]) for r in recs) / len(recs)
        cq_rows[label] = (score("cq", out, work, "--no-bertscore"), valid, recs[0]["cq"]["text"])

    # -- report ----------------------------------------------------------------------------------
    n_eval, n_amb = len(evaluation), sum(r["gold"]["ambiguous"] for r in evaluation)
    lines = [
        "# Ambiguity detection and clarifying questions", "",
        f"Command: `python bench/detect_gencq.py` (defaults: --n {args.n} --train {args.train} "
        f"--train-seconds {args.train_seconds:g}). Machine: {machine()}, no GPU, shared with other jobs "
        f"(wall times are upper bounds). Date: {time.strftime('%Y-%m-%d')}.", "",
        "## Detection on AmbigNQ dev", "",
        f"{n_eval} dev questions ({n_amb} ambiguous = a multipleQAs annotation): the {len(first)} with passages in "
        "../shared/data/corpus first, then the next dev questions in file order. Passages: BM25 top-3 from that "
        "corpus (`cq index` + `cq retrieve --hits 3`). Scores from `cq score --task detect --sweep` (percent). "
        "\"best F1 @ t\" is the sweep's threshold chosen on these same questions: an oracle, not a result.", "",
        "| method | acc | P | R | F1 | AUROC | best F1 @ t | records/s (wall, incl. load) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for label, (method, s) in detect_rows.items():
        auroc = "–" if s.get("auroc") is None else f"{s['auroc']:.1f}"
        best = f"{s['best_f1']:.1f} @ {s['best_f1_threshold']:.3g}" if s.get("best_f1") is not None else "–"
        rate = n_eval / steps[f"detect {method}"]["seconds"]
        lines.append(f"| {label} | {s['accuracy']:.1f} | {s['precision']:.1f} | {s['recall']:.1f} | {s['f1']:.1f} | "
                     f"{auroc} | {best} | {rate:.1f} |")
    best = report["best"]
    train_step = steps[f"train detect (passages {args.clf_passages})"]
    lines += [
        "", "Classifier training (`cq train detect`, sentence-transformers/all-MiniLM-L6-v2 + a 2-label head, "
        f"question + top-{args.clf_passages} passages cut to 256 tokens, batch 16, lr 5e-5, seed 0, at most "
        f"{args.train_seconds:g} s):",
        f"{report['train_records']} AmbigNQ train records ({report['train_ambiguous']} ambiguous), "
        f"{report['steps']} steps in {report['train_seconds']} s of training "
        f"({train_step['seconds']} s wall for the process), peak RSS {train_step['peak_mib']} MiB; "
        f"early stopping on {report['dev_records']} other dev questions, best at step {best['step']} "
        f"(stop-dev F1 {100 * best['f1']:.1f}, acc {100 * best['accuracy']:.1f}).",
        "", "Not measured here: `--method answers` (needs `cq answer --mode multi`) and `--method tree` "
        "(needs `cq disambiguate --tree`); both only read what those stages write.",
        "", "## Clarifying questions on the fixtures", "",
        f"The {len(ambiguous)} ambiguous fixture questions against their hand-written CQs; passages BM25 top-3 "
        "from fixtures/corpus.jsonl. `cq score --task cq --no-bertscore` (percent); valid = the model wrote the "
        "\"Which X: A, B, or C?\" form itself.", "",
        "| method | options P | options R | options F1 | category EM | BLEU | valid % | first CQ (fx01) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for label, (s, valid, example) in cq_rows.items():
        lines.append(f"| {label} | {s['options_precision']:.1f} | {s['options_recall']:.1f} | {s['options_f1']:.1f} | "
                     f"{s['category_em']:.1f} | {s['bleu']:.1f} | {100 * valid:.0f} | {example} |")
    lines += ["", "## Steps (each a separate process)", "", "| step | seconds | peak RSS MiB |", "|---|---|---|"]
    for step, value in steps.items():
        lines.append(f"| {step} | {value['seconds']} | {value['peak_mib']} |")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
