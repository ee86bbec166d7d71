"""`make ship-models`' measurements: the models cq ships (cqtools/shipped/) against the float32 models they
were compacted from, on questions neither was trained on; writes docs/benchmarks/shipped.md and each
shipped model's card (cqtools/shipped/<name>/README.md).

- classifier (detect): AUROC, F1 ... of `cq detect --method classifier --passages 0` on every covered AmbigNQ
  dev question (the grid's ambignq.det.classifier cell; the classifier trained on AmbigNQ train only);
- reader: F1_ans of `cq answer --mode multi` (the grid's ambignq.multi.extractive cell: BM25 20, reranked
  top 5) on the first --n-reader covered dev questions (the reader's --dev: never trained on).

Both with 95% bootstrap intervals (1000 resamples, seed 0) and the paired difference shipped - float.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import CQ, ROOT, machine  # noqa: E402

CI = ["--ci", "--n-boot", "1000", "--seed", "0"]


REUSE = False  # --reuse: a step whose output exists is not run again (the models must not have changed)


def run(cmd: list[str], stdin: Path, stdout: Path, env: dict) -> float:
    if REUSE and stdout.exists() and stdout.stat().st_size:
        return json.loads(stdout.with_suffix(".time").read_text())["seconds"]
    tmp = stdout.with_suffix(".part")
    with open(stdin, "rb") as fin, open(tmp, "wb") as fout:
        import time
        start = time.perf_counter()
        subprocess.run(cmd, stdin=fin, stdout=fout, env=env, cwd=ROOT, check=True)
        seconds = round(time.perf_counter() - start, 1)
    tmp.rename(stdout)
    stdout.with_suffix(".time").write_text(json.dumps({"seconds": seconds}))
    return seconds


def score(task: str, path: Path, env: dict, *extra: str) -> dict:
    out = subprocess.run(CQ + ["score", "--task", task, *CI, *extra, str(path)], env=env, cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def paired(task: str, a: Path, b: Path, env: dict) -> dict:
    """``cq score --paired``: b - a per metric ({a, b, diff, low, high})."""
    with open(a, "rb") as fin:
        out = subprocess.run(CQ + ["score", "--task", task, *CI, "--paired", str(b)], stdin=fin, env=env, cwd=ROOT,
                             check=True, capture_output=True, text=True).stdout
    return json.loads(out)["metrics"]


def fmt(summary: dict, key: str) -> str:
    value = summary.get(key)
    ci = ((summary.get("ci") or {}).get("intervals") or {}).get(key)
    if value is None:
        return "–"
    return f"{value:.1f} [{ci[0]:.1f}, {ci[1]:.1f}]" if ci else f"{value:.1f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--index", type=Path, required=True, help="a `cq index` of DATA/corpus (BM25 is read)")
    ap.add_argument("--float-detect", type=Path, required=True)
    ap.add_argument("--float-reader", type=Path, required=True)
    ap.add_argument("--shipped", type=Path, default=ROOT / "cqtools" / "shipped")
    ap.add_argument("--n-reader", type=int, default=150)
    ap.add_argument("--trained-at", default="", help="the commit whose code trained the models")
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks" / "shipped.md")
    ap.add_argument("--reuse", action="store_true", help="keep the outputs of an earlier run of the same models")
    args = ap.parse_args()
    global REUSE
    REUSE = args.reuse
    args.work.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "CQ_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "CQ_GEN_CACHE": ""}
    w = args.work

    covered = w / "covered.ids"
    ids = sorted({json.loads(line)["source_qid"] for line in open(args.data / "corpus" / "passages.jsonl")})
    covered.write_text("".join(i + "\n" for i in ids))
    dev = w / "dev.jsonl"
    subprocess.run(CQ + ["convert", "ambignq", str(args.data / "ambignq" / "dev_light.json"), "--ids", str(covered),
                         "-o", str(dev)], env=env, cwd=ROOT, check=True)
    head = w / "dev.head.jsonl"
    head.write_text("".join(open(dev).readlines()[:args.n_reader]))
    rr = w / "dev.head.rr.jsonl"
    ret = w / "dev.head.ret.jsonl"
    run(CQ + ["retrieve", "--index", str(args.index), "--method", "bm25", "--hits", "20", "-q"], head, ret, env)
    run(CQ + ["rerank", "--top", "5", "-q"], ret, rr, env)

    rows, results = {}, {}
    for name, src in (("float32", {"detect": args.float_detect, "reader": args.float_reader}),
                      ("shipped int8", {"detect": args.shipped / "detect", "reader": args.shipped / "reader"})):
        tag = name.split()[0]
        det = w / f"detect.{tag}.jsonl"
        det_s = run(CQ + ["detect", "--method", "classifier", "--model", str(src["detect"]), "--passages", "0", "-q"],
                    dev, det, env)
        ans = w / f"answer.{tag}.jsonl"
        ans_s = run(CQ + ["answer", "--mode", "multi", "--model", str(src["reader"]), "-q"], rr, ans, env)
        results[tag] = {"detect": det, "answer": ans}
        rows[name] = {"detect": score("detect", det, env), "detect_s": det_s,
                      "ambigqa": score("ambigqa", ans, env), "answer_s": ans_s}
    d_det = paired("detect", results["float32"]["detect"], results["shipped"]["detect"], env)
    d_ans = paired("ambigqa", results["float32"]["answer"], results["shipped"]["answer"], env)

    def agree(task_key: str, files: dict) -> tuple[int, int, float]:
        a = [json.loads(x) for x in open(files["float32"])]
        b = [json.loads(x) for x in open(files["shipped"])]
        if task_key == "detect":
            same = sum(x["ambiguity"]["label"] == y["ambiguity"]["label"] for x, y in zip(a, b))
            diff = max(abs(x["ambiguity"]["score"] - y["ambiguity"]["score"]) for x, y in zip(a, b))
        else:
            same = sum([t["text"] for t in x["answers"]] == [t["text"] for t in y["answers"]] for x, y in zip(a, b))
            diff = float("nan")
        return same, len(a), diff

    det_same = agree("detect", {k: v["detect"] for k, v in results.items()})
    ans_same = agree("answer", {k: v["answer"] for k, v in results.items()})
    lines = [
        "# The shipped models against the models they were compacted from",
        "",
        f"`make ship-models` (bench/shipped.py) on {machine()}. Shipped = `cq train compact` of the float32 model: "
        "int8 weights with one scale per row, loaded back as float32 (cqtools/models/compact.py).",
        "",
        f"## Ambiguity classifier: {det_same[1]} covered AmbigNQ dev questions (question only, `--passages 0`)",
        "",
    ]
    lines += table(rows, "detect", "detect_s", [("accuracy", "Acc"), ("precision", "P"), ("recall", "R"), ("f1", "F1"),
                                                  ("auroc", "AUROC")])
    lines += ["", f"Same label on {det_same[0]} of {det_same[1]} questions; largest P(ambiguous) difference "
              f"{det_same[2]:.4f}. Paired difference (shipped - float32): {diff_text(d_det, 'auroc')}.", "",
              f"## Extractive reader: the first {ans_same[1]} covered AmbigNQ dev questions (BM25 20, reranked top 5, "
              "`cq answer --mode multi`)", ""]
    lines += table(rows, "ambigqa", "answer_s", [("f1_ans", "F1 ans (all)"), ("f1_ans_multi", "F1 ans (multi)")])
    lines += ["", f"Same answers on {ans_same[0]} of {ans_same[1]} questions. Paired difference (shipped - float32): "
              f"{diff_text(d_ans, 'f1_ans')}.", "",
              "The reranker is the offline INT8 ONNX cross-encoder: its scores depend on the CPU's instruction set "
              "(fixtures/replay/README.md), so the reader's numbers reproduce on the same CPU family.", ""]
    args.out.write_text("\n".join(lines))
    for name, measured in (("detect", rows), ("reader", rows)):
        write_card(args.shipped / name, name, measured, args, det_same if name == "detect" else ans_same)
    print("\n".join(lines))


def table(rows: dict, task: str, seconds: str, columns: list[tuple[str, str]]) -> list[str]:
    out = ["| model | " + " | ".join(label for _, label in columns) + " | seconds |",
           "|---|" + "---|" * len(columns) + "---|"]
    for name, row in rows.items():
        out.append(f"| {name} | " + " | ".join(fmt(row[task], key) for key, _ in columns) + f" | {row[seconds]:.0f} |")
    return out


def diff_text(metrics: dict, key: str) -> str:
    d = metrics.get(key)
    return f"{key} {d['diff']:+.1f} [{d['low']:+.1f}, {d['high']:+.1f}]" if d else "–"


def write_card(folder: Path, name: str, rows: dict, args, same) -> None:
    train = json.loads((folder / "cq_train.json").read_text())
    packed = json.loads((folder / "cq_compact.json").read_text())
    cfg = train["config"]
    flags = " ".join(f"--{k.replace('_', '-')}" + ("" if v is True else f" {v}") for k, v in sorted(cfg.items())
                     if v is not None and v is not False and k not in ("out", "device", "train", "dev", "more_train", "unseen",
                                                               "checkpoints", "save_every", "resume", "resume_from"))
    if name == "detect":
        s, task = rows["float32"]["detect"], "ambiguity classifier (`cq detect --method classifier`, the default)"
        q = rows["shipped int8"]["detect"]
        data = (f"AmbigNQ train (train_light.json, {train.get('train_records')} questions, {train.get('train_ambiguous')} "
                f"ambiguous); checkpoint chosen by AUROC on {train.get('dev_records')} train questions held out by a "
                "seeded draw (their ids in cq_train.json). Input: the question alone (48 tokens).")
        numbers = (f"AUROC {fmt(s, 'auroc')} float32, {fmt(q, 'auroc')} shipped; F1 {fmt(s, 'f1')} / {fmt(q, 'f1')} "
                   f"on the {same[1]} covered AmbigNQ dev questions (never trained on); same label on {same[0]}.")
        target = "make train-detect"
    else:
        s, task = rows["float32"]["ambigqa"], "extractive reader (`cq answer`'s default reader)"
        q = rows["shipped int8"]["ambigqa"]
        sup = train.get("supervision", {})
        data = (f"AmbigNQ dev_light + train_light questions with BM25 top-10 passages from the shared 9.5k-passage "
                f"corpus (distant supervision: {sup.get('positive')} passages holding a gold answer, "
                f"{sup.get('negative')} without, from {sup.get('questions_used')} questions"
                + (f" and {sup['dq_questions_used']} of their {sup['dq_questions']} disambiguated questions, each with "
                   "its own answers over the same passages" if "dq_questions" in sup else "")
                + f"); the first {args.n_reader} "
                "covered dev questions are held out (the grid's model tier)"
                + ("; so are docs/benchmarks/first-contact.md's report questions (`--unseen`: covered dev from 551, "
                   "uncovered from 491, in file order): their ids and questions are dropped from training, and no "
                   "training span is one of their gold answers in one of their own passages" if cfg.get("unseen")
                   else "") + ".")
        numbers = (f"F1_ans (all) {fmt(s, 'f1_ans')} float32, {fmt(q, 'f1_ans')} shipped; F1_ans (multi) "
                   f"{fmt(s, 'f1_ans_multi')} / {fmt(q, 'f1_ans_multi')} on the first {same[1]} covered AmbigNQ dev "
                   f"questions (never trained on; BM25 20, reranked top 5, `cq answer --mode multi`); same answers on "
                   f"{same[0]}.")
        target = "make train-reader"
    # Models trained before cq_train.json recorded its threads: the Makefile's count for that target.
    threads = train.get("threads") or {"detect": 1, "reader": 2}[name]
    steps = train.get("steps")
    stopped = train.get("stopped")
    from cqtools.models.export import hf_header

    text = hf_header(name, train['base_model'].split(' from ')[0]) + f"""# Model card: {name} (shipped with cqtools)

**What**: the {task}. {train['base_model'].split(' from ')[0]} fine-tuned by `cq train {train['task']}`; shipped
as int8 weights with one float32 scale per row ({packed['bytes'] / 1e6:.1f} MB; the float32 model:
{packed['source_bytes'] / 1e6:.1f} MB, sha256 {packed['source_sha256'][:16]}...), loaded back as float32.

**Data**: {data}

**Command**: `{target}` (Makefile, OMP_NUM_THREADS={threads}), i.e. `cq train {train['task']} {flags}`; then
`cq train compact`. Budget in steps: {steps} optimiser steps ({stopped}); seed {cfg.get('seed')};
device {train.get('device')}{f"; code of commit {args.trained_at}" if args.trained_at else ""}.

**Validation** (bench/shipped.py, docs/benchmarks/shipped.md; 95% bootstrap intervals, 1000 resamples, seed 0):
{numbers}

**Rebuild**: `make models` trains the same configuration with the same seed and step budget; on the same
machine type and thread count the weights come out the same (tests/test_train.py checks two runs give the
same model); other CPUs or thread counts change float rounding, and the scores by a few tenths.

**Limits**: a {packed['source_bytes'] / 4e6:.0f}M-parameter MiniLM trained on a 9.5k-passage corpus built for AmbigNQ dev: a competent
default for the offline box, far from the papers' BERT/BART-large models (AskCQ, AmbigQA).

**Without cq**: `cq models export {name} DIR` writes it as a Hugging Face model directory (float32
model.safetensors) that transformers' `from_pretrained(DIR)` loads.
"""
    (folder / "README.md").write_text(text)


if __name__ == "__main__":
    main()
