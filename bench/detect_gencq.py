"""`make bench-detect-gencq`: ambiguity detection on AmbigNQ dev, CQ generation on the fixtures.

Detection: the classifier (MiniLM-L6 + a 2-label head) is fine-tuned on AmbigNQ train
(train_light, all of it by default), early-stopping on a seeded slice held out of train
(`cq train detect --holdout`), and evaluated on all of AmbigNQ dev (dev_light), with the
always / never baselines on the same questions; the few-shot LLM detector is slow and runs on
the first --llm-n dev questions only, where the other methods are scored again for comparison.
A second classifier row uses the threshold that maximises F1 on the held-out train slice (not
on dev). Question-only input by default; with --clf-passages K the inputs get BM25 top-K passages
from ../shared/data/corpus (about 3x the time per step here).
CQ generation: the 18 ambiguous fixture questions against their hand-written CQs (AmbigNQ data
has no gold CQs). Every step is a separate `cq` process (wall time includes model loading).
Writes docs/benchmarks/detect_gencq.md, keeping its "## Superseded" sections as they are.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import CQ, ROOT, machine, read_jsonl, timed, write_jsonl  # noqa: E402

SUPERSEDED = "## Superseded"


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


def score(task: str, path: Path, work: Path, *extra: str, suffix: str = "") -> dict:
    out = work / f"score.{path.stem}{suffix}.json"
    timed(CQ + ["score", "--task", task, *extra], stdin=str(path), stdout=str(out))
    return json.loads(out.read_text())


def row(label: str, s: dict, rate: float | None) -> str:
    auroc = "–" if s.get("auroc") is None else f"{s['auroc']:.1f}"
    best = f"{s['best_f1']:.1f} @ {s['best_f1_threshold']:.3g}" if s.get("best_f1") is not None else "–"
    rate_text = "–" if rate is None else f"{rate:.1f}"
    return (f"| {label} | {s['accuracy']:.1f} | {s['precision']:.1f} | {s['recall']:.1f} | {s['f1']:.1f} | "
            f"{auroc} | {best} | {rate_text} |")


def bootstrap(gold: list[bool], scores: list[float], threshold: float | None, rounds: int = 500) -> dict:
    """95 % percentile intervals (seeded resampling of questions) of AUROC and, at ``threshold``
    (score >= t), of F1 minus the always baseline's F1; percent."""
    import random

    from cqtools.metrics.detect import auroc, confusion

    rng = random.Random(0)
    aurocs, gaps = [], []
    for _ in range(rounds):
        idx = [rng.randrange(len(gold)) for _ in gold]
        g, s = [gold[i] for i in idx], [scores[i] for i in idx]
        aurocs.append(auroc(g, s))
        if threshold is not None:
            gaps.append(confusion(g, [x >= threshold for x in s])["f1"] - confusion(g, [True] * len(g))["f1"])

    def interval(values):
        values = sorted(values)
        return (100 * values[int(0.025 * len(values))], 100 * values[int(0.975 * len(values)) - 1]) if values else None

    return {"auroc": interval(aurocs), "f1_minus_always": interval(gaps)}


TABLE_HEAD = ["| method | acc | P | R | F1 | AUROC | best F1 @ t (oracle) | records/s (wall, incl. load) |",
              "|---|---|---|---|---|---|---|---|"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--work", default="work/bench-detect")
    ap.add_argument("--out", default="docs/benchmarks/detect_gencq.md")
    ap.add_argument("--n", type=int, default=0, help="evaluation questions from AmbigNQ dev, in file order (0: all)")
    ap.add_argument("--llm-n", type=int, default=200, help="first N evaluation questions for the slow LLM detector")
    ap.add_argument("--train", type=int, default=0, help="AmbigNQ train records for the classifier (0: all)")
    ap.add_argument("--holdout", type=int, default=1000, help="train records held out for early stopping")
    ap.add_argument("--train-seconds", type=float, default=1200)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--lr", type=float, default=5e-5)
    ap.add_argument("--max-length", type=int, default=48, help="classifier tokens (questions are <= 26 here)")
    ap.add_argument("--eval-every", type=int, default=50)
    ap.add_argument("--patience", type=int, default=4)
    ap.add_argument("--threads", type=int, default=1,
                    help="OMP_NUM_THREADS for every step (0: torch's default); on 2 shared cores 1 thread "
                         "ran a training step twice as fast as 2")
    ap.add_argument("--model-dir", default=None,
                    help="use this `cq train detect` directory instead of training one (its cq_train.json "
                         "supplies the training numbers)")
    ap.add_argument("--llm", default="HuggingFaceTB/SmolLM2-135M-Instruct")
    ap.add_argument("--clf-passages", type=int, default=0,
                    help="passages in the classifier input (0: question only; passages cost ~3x per step)")
    ap.add_argument("--reuse", action="store_true", help="skip steps whose outputs exist (see Steps)")
    args = ap.parse_args()
    data, work = Path(args.data), Path(args.work)
    if not (data / "ambignq" / "dev_light.json").exists():
        raise SystemExit(f"{data} not found: the benchmark needs ../shared/data")
    if args.threads:
        os.environ["OMP_NUM_THREADS"] = str(args.threads)
    work.mkdir(parents=True, exist_ok=True)
    steps = Steps(work, args.reuse)

    # -- data ------------------------------------------------------------------------------------
    timed(CQ + ["convert", "ambignq", str(data / "ambignq" / "dev_light.json")], stdout=str(work / "dev_all.jsonl"))
    timed(CQ + ["convert", "ambignq", str(data / "ambignq" / "train_light.json")]
          + (["--limit", str(args.train)] if args.train else []), stdout=str(work / "train_all.jsonl"))
    dev_all = read_jsonl(work / "dev_all.jsonl")
    evaluation = dev_all[: args.n] if args.n else dev_all
    n_eval = len(evaluation)
    tag = f"dev{n_eval}"
    write_jsonl(work / f"{tag}.jsonl", evaluation)
    eval_in, train_in = work / f"{tag}.jsonl", work / "train_all.jsonl"
    if args.clf_passages:
        index = work / "idx"
        if not (index / "cq_index.json").exists():
            steps.run("index corpus (bm25)", CQ + ["index", "--corpus", str(data / "corpus" / "passages.jsonl"),
                                                   "--out", str(index), "--overwrite"])
        for path in (eval_in, train_in):
            steps.run(f"retrieve bm25 top-{args.clf_passages} ({path.stem})",
                      CQ + ["retrieve", "--index", str(index), "--hits", str(args.clf_passages), "-q"],
                      stdin=str(path), stdout=str(work / f"{path.stem}.ret.jsonl"))
        eval_in, train_in = work / f"{tag}.ret.jsonl", work / "train_all.ret.jsonl"

    # -- classifier training -------------------------------------------------------------------------
    p = args.clf_passages
    train_step = None
    if args.model_dir:
        model_dir = Path(args.model_dir)
    else:
        model_dir = work / f"detect-model-p{p}"
        train_step = f"train detect (passages {p})"
        steps.run(train_step,
                  CQ + ["train", "detect", "--train", str(train_in), "--holdout", str(args.holdout),
                        "--out", str(model_dir), "--max-seconds", str(args.train_seconds), "--epochs", str(args.epochs),
                        "--batch-size", str(args.batch_size), "--lr", str(args.lr), "--max-length", str(args.max_length),
                        "--eval-every", str(args.eval_every), "--patience", str(args.patience), "--select", "auroc",
                        "--passages", str(p), "-q"], stdout=str(work / f"train_detect.p{p}.json"))
    report = json.loads((model_dir / "cq_train.json").read_text())
    cfg = report["config"]

    # threshold chosen on the held-out train slice (the F1-optimal one there), applied to dev
    held = set(report.get("holdout_ids") or [])
    tuned = None
    if held:
        write_jsonl(work / "holdout.jsonl", [r for r in read_jsonl(train_in) if r["id"] in held])
        steps.run("detect classifier (held-out train)",
                  CQ + ["detect", "--method", "classifier", "--model", str(model_dir), "--passages", str(p), "-q"],
                  stdin=str(work / "holdout.jsonl"), stdout=str(work / f"detect.classifier.p{p}.holdout.jsonl"))
        tuned = score("detect", work / f"detect.classifier.p{p}.holdout.jsonl", work, "--sweep")["best_f1_threshold"]

    # -- detection on dev ------------------------------------------------------------------------
    clf_label = f"classifier (MiniLM-L6 fine-tuned, {p} passages)"
    runs = {
        clf_label: ("classifier", ["--method", "classifier", "--model", str(model_dir), "--passages", str(p)]),
        "always": ("always", ["--method", "always"]),
        "never": ("never", ["--method", "never"]),
    }
    outs, full = {}, {}
    for label, (name, cmd) in runs.items():
        outs[label] = work / f"detect.{name}.p{p}.{tag}.jsonl"
        step = steps.run(f"detect {name} ({n_eval} dev)", CQ + ["detect", *cmd, "-q"], stdin=str(eval_in),
                         stdout=str(outs[label]))
        full[label] = (score("detect", outs[label], work, "--sweep"), n_eval / step["seconds"])
    if tuned is not None:  # right after the classifier's own row
        tuned_row = (score("detect", outs[clf_label], work, "--sweep", "--threshold", str(tuned), suffix=".tuned"), None)
        full = {clf_label: full[clf_label],
                f"classifier, threshold {tuned:.3g} (F1-optimal on held-out train)": tuned_row,
                **{k: v for k, v in full.items() if k != clf_label}}
    clf_records = read_jsonl(outs[clf_label])
    ci = bootstrap([r["gold"]["ambiguous"] for r in clf_records], [r["ambiguity"]["score"] for r in clf_records], tuned)

    # the LLM on the first --llm-n questions, every other method re-scored on the same ones
    n_llm = min(args.llm_n, n_eval)
    llm_label = f"llm ({args.llm.split('/')[-1]}, 5-shot)"
    small = {}
    if n_llm:
        first = work / f"dev{n_llm}.first.jsonl"
        write_jsonl(first, evaluation[:n_llm])
        llm_out = work / f"detect.llm.dev{n_llm}.first.jsonl"
        steps.run(f"detect llm (first {n_llm} dev)",
                  CQ + ["detect", "--method", "llm", "--model", args.llm, "--batch-size", "16", "-q"],
                  stdin=str(first), stdout=str(llm_out))
        for label, out in outs.items():
            subset = work / f"{out.stem}.first{n_llm}.jsonl"
            write_jsonl(subset, read_jsonl(out)[:n_llm])
            small[label] = (score("detect", subset, work, "--sweep"), None)
        small[llm_label] = (score("detect", llm_out, work, "--sweep"),
                            n_llm / steps[f"detect llm (first {n_llm} dev)"]["seconds"])

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
    n_amb = sum(r["gold"]["ambiguous"] for r in evaluation)
    best = report["best"]
    history = report.get("history") or []
    every = cfg.get("eval_every") or "one epoch"
    train_cmd = (f"OMP_NUM_THREADS={args.threads} nice -n 5 " if args.threads else "") + " ".join([
        "cq train detect --train", cfg["train"], "--holdout", str(cfg.get("holdout")), "--passages", str(p),
        "--max-length", str(cfg.get("max_length")), "--batch-size", str(cfg["batch_size"]), "--lr", f"{cfg['lr']:g}",
        "--epochs", str(cfg["epochs"]), "--select", str(cfg.get("select")), "--eval-every", str(cfg.get("eval_every")),
        "--patience", str(cfg.get("patience")), "--seed", str(cfg["seed"]),
        "--max-seconds", f"{cfg.get('max_seconds') or 0:g}", "--out", cfg["out"]])
    clf_s = full[clf_label][0]
    tuned_s = next((s for label, (s, _) in full.items() if label.startswith("classifier, threshold")), None)
    always_s = full["always"][0]
    lines = [
        "# Ambiguity detection and clarifying questions", "",
        f"Command: `python bench/detect_gencq.py{' --model-dir ' + args.model_dir if args.model_dir else ''}` "
        f"(defaults: --n {args.n} --llm-n {args.llm_n} --train {args.train} --holdout {args.holdout} "
        f"--train-seconds {args.train_seconds:g} --threads {args.threads}). Machine: {machine()}, no GPU, shared "
        f"with other jobs (wall times are upper bounds). Date: {time.strftime('%Y-%m-%d')}.", "",
        "## Detection on AmbigNQ dev", "",
        f"All {n_eval} questions of dev_light ({n_amb} ambiguous = {100 * n_amb / n_eval:.0f} %, ambiguous = a "
        "multipleQAs annotation), in file order; no passages (question only). Scores from "
        "`cq score --task detect --sweep` (percent; ambiguous is the positive class). \"best F1 @ t\" is the "
        "threshold chosen on these same questions: an oracle, not a result. The row \"threshold ... (F1-optimal on "
        "held-out train)\" is a fair tuned threshold: chosen by the same sweep on the held-out train slice, then "
        "applied to dev.", "",
        *TABLE_HEAD,
        *[row(label, s, rate) for label, (s, rate) in full.items()], "",
        f"Reading: the classifier ranks ambiguous questions above unambiguous ones {clf_s['auroc']:.1f} % of the time "
        f"(AUROC; 95 % bootstrap interval {ci['auroc'][0]:.1f}–{ci['auroc'][1]:.1f}, 500 resamples of the questions), "
        "so a question alone carries real but limited signal. At 0.5: P "
        f"{clf_s['precision']:.1f}, acc {clf_s['accuracy']:.1f} (always {always_s['accuracy']:.1f}), F1 "
        f"{clf_s['f1']:.1f} (always {always_s['f1']:.1f})"
        + (f"; with the threshold tuned on held-out train: F1 {tuned_s['f1']:.1f}, acc {tuned_s['accuracy']:.1f}, "
           f"F1 minus always {ci['f1_minus_always'][0]:+.1f} to {ci['f1_minus_always'][1]:+.1f} (95 % bootstrap), i.e. "
           + ("no F1 gain over asking every time that this sample can show" if ci["f1_minus_always"][0] <= 0
              else "an F1 gain over asking every time") if tuned_s else "") + ".", "",
        f"Commands: `{train_cmd}`; `cq detect --method classifier --model {model_dir} --passages {p} "
        "< dev.jsonl | cq score --task detect --sweep` (and `--threshold T` for the tuned row; "
        "`cq convert ambignq` makes the JSONL). Question-only input is a choice of cost: with BM25 top-3 "
        "passages (up to 256 tokens) a step cost about 3x as much on this machine in the earlier run, and the "
        "questions are 26 tokens at most (median 12), so 48 tokens never cuts one.", "",
        "Classifier training (`cq train detect`): sentence-transformers/all-MiniLM-L6-v2 + a 2-label head, "
        f"{'question only' if not p else f'question + top-{p} passages'} (max {cfg.get('max_length')} tokens), "
        f"batch {cfg['batch_size']}, lr {cfg['lr']:g} (AdamW, linear decay, 10 % warm-up over {cfg['epochs']} epochs), "
        f"seed {cfg['seed']}, at most {cfg.get('max_seconds') or 0:g} s, {args.threads or 'default'} torch thread(s). "
        f"{report['train_records']} AmbigNQ train records ({report['train_ambiguous']} ambiguous); early stopping on "
        f"{report['dev_records']} train records held out by a seeded draw ({report.get('dev_ambiguous', '?')} ambiguous; "
        f"ids in cq_train.json), evaluated every {every} steps, checkpoint = best held-out AUROC (patience "
        f"{cfg.get('patience')}). Ran {report['steps']} steps ({report.get('stopped', '?')}) in "
        f"{report['train_seconds']} s of training, peak RSS {report['peak_rss_mb']} MiB"
        + (f" ({steps[train_step]['seconds']} s wall for the process)" if train_step else "")
        + f"; best at step {best['step']} (held-out AUROC {100 * best['auroc']:.1f}, F1 {100 * best['f1']:.1f}, "
        f"acc {100 * best['accuracy']:.1f}).", "",
        "Held-out curve (step: AUROC): " + ", ".join(f"{h['step']}: {100 * h['auroc']:.1f}" for h in history) + ".",
        "",
    ]
    if small:
        lines += [f"The first {n_llm} of those dev questions, where the slow LLM detector also ran "
                  f"({sum(r['gold']['ambiguous'] for r in evaluation[:n_llm])} ambiguous); classifier / always / never "
                  "are the runs above, re-scored on this subset:", "", *TABLE_HEAD,
                  *[row(label, s, rate) for label, (s, rate) in small.items()], ""]
    lines += [
        "Against the papers: AskCQ reports detection F1 61.3 for a fine-tuned BERT-base on its own split of "
        "AmbigNQ (CAmbigNQ, with its own class balance); our rows are on AmbigNQ dev_light with MiniLM-L6 "
        "(22 M parameters vs 110 M) and questions only, so they are comparable in kind, not in number. The always "
        f"baseline's F1 is high because {100 * n_amb / n_eval:.0f} % of dev is ambiguous: F1 above it needs both "
        "precision and recall; AUROC (50 = chance) is "
        "the threshold-free number to compare.", "",
        "Not measured here: `--method answers` (needs `cq answer --mode multi`) and `--method tree` "
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
    out_path = Path(args.out)
    old = out_path.read_text() if out_path.exists() else ""
    kept = old[old.index(SUPERSEDED):] if SUPERSEDED in old else ""
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text("\n".join(lines) + "\n" + ("\n" + kept if kept else ""))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
