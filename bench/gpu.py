"""`make bench-gpu`: the model stages on a CUDA GPU against the CPU, same questions, same models.

README says ``--device auto`` puts every model on the GPU when there is one. This checks what that
gives: each model stage runs alone (its own process: start-up and model load included) on the
same questions with ``--device cpu`` and on the GPU in three ways, and its records are compared
with the CPU's, record by record (``meta`` aside): exactly, with floats within 1e-3 (scores), and
with floats ignored (the text a user reads: labels, answers, questions):

  cpu           --device cpu (float32; each input alone: the reference)
  cuda          --device cuda, dtype auto (bfloat16 for language models; encoders stay float32)
  cuda fp32     --device cuda --dtype float32 (language-model stages only)
  cuda padded   --device cuda with CQ_PADDED_BATCHES=1 (padded batches: the GPU's speed lever)

Stages (each reads the same input in every variant, so a difference is that stage's own):

  answer single / multi, extractive reader   --reader extractive --model READER (work/models/reader)
  answer single, LM reader                   --reader generative --model GENERATOR
  detect llm, gen-cq llm                     --model GENERATOR (gen-cq reads detect's CPU records)
  disambiguate tree+prune                    --method rac --tree --prune --model GENERATOR

Each (stage, variant) also runs on the first question alone: its wall time is the process's
start-up and model load, and the time per question reported is (t(n) - t(1)) / (n - 1).

Needs a CUDA GPU; the input is reranked questions with passages (e.g. the grid's ambignq.m.rr.jsonl).
Writes ``--out`` (docs/benchmarks/gpu.md) after every run, so a run cut short still reports, and
resumes: a run whose row is in ``--work``/rows.jsonl (and whose output is there) is not repeated.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import CQ, ROOT, env_for, machine, read_jsonl, without_meta, write_jsonl  # noqa: E402

VARIANTS = [("cpu", ["--device", "cpu"], {}), ("cuda", ["--device", "cuda"], {}),
            ("cuda fp32", ["--device", "cuda", "--dtype", "float32"], {}),
            ("cuda padded", ["--device", "cuda"], {"CQ_PADDED_BATCHES": "1"})]


def stages(reader: str, generator: str) -> list[tuple[str, list[str], str | None, bool]]:
    """(name, arguments, the stage whose CPU records it reads or None for the input, language model)."""
    return [
        ("answer single, extractive reader", ["answer", "--mode", "single", "--reader", "extractive", "--model", reader],
         None, False),
        ("answer multi, extractive reader", ["answer", "--mode", "multi", "--reader", "extractive", "--model", reader],
         None, False),
        ("answer single, LM reader", ["answer", "--mode", "single", "--reader", "generative", "--model", generator],
         None, True),
        ("detect llm", ["detect", "--method", "llm", "--model", generator], None, True),
        ("gen-cq llm", ["gen-cq", "--method", "llm", "--model", generator], "detect llm", True),
        ("disambiguate tree+prune", ["disambiguate", "--method", "rac", "--tree", "--prune", "--model", generator],
         None, True),
    ]


def slug(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name)


def _close(a, b) -> bool:
    """Equal, floats within 1e-3 (absolute or relative)."""
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, (int, float)) and isinstance(b, (int, float)) and abs(a - b) <= 1e-3 * max(1, abs(a))
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))
    return a == b


def _text(value):
    """``value`` with every float left out: what a user reads."""
    if isinstance(value, dict):
        return {k: _text(v) for k, v in value.items() if not isinstance(v, float)}
    if isinstance(value, list):
        return [_text(v) for v in value if not isinstance(v, float)]
    return value


def agreement(reference: Path, other: Path) -> dict:
    """How many of ``other``'s records equal the reference's (``meta`` aside): exactly, within 1e-3,
    with floats ignored; and the device and dtype the stage's meta names."""
    a, b = read_jsonl(reference), read_jsonl(other)
    if len(a) != len(b):
        raise SystemExit(f"bench: {other} has {len(b)} records, {reference} {len(a)}")
    pairs = [(without_meta(x), without_meta(y)) for x, y in zip(a, b)]
    meta = list(b[0].get("meta", {}).values())[-1] if b and b[0].get("meta") else {}
    return {"exact": sum(x == y for x, y in pairs), "close": sum(_close(x, y) for x, y in pairs),
            "text": sum(_text(x) == _text(y) for x, y in pairs), "records": len(pairs),
            "device": meta.get("device", "?"), "dtype": meta.get("dtype", "?")}


def device_name() -> str:
    import torch

    if not torch.cuda.is_available():
        raise SystemExit("bench-gpu needs a CUDA GPU (torch sees none)")
    return f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}"


NOTES = "## What these numbers say"
NOISE_S = 2.0  # start-up varies by about a second between runs: a smaller t(n) - t(1) is not a measurement


def report(rows: list[dict], n: int, where: dict, source: str) -> list[str]:
    lines = ["# Model stages on a GPU against the CPU", "",
             f"`make bench-gpu` on {where['date']}: {where['gpu']}; {where['machine']}; generated by bench/gpu.py.",
             f"{n} questions from {source}; each stage alone in its own process, the same input in every",
             "variant. cuda = `--device cuda` (dtype auto); cuda fp32 adds `--dtype float32`; cuda padded sets",
             "CQ_PADDED_BATCHES=1 (padded batches instead of each input alone). start-up = the wall time of the",
             "same command on the first question alone (process start, model load); s/question = (t(n) - t(1)) /",
             f"(n - 1), shown only where t(n) - t(1) is at least {NOISE_S:.0f} s (start-up alone varies by about a",
             "second); speed-up = the CPU's s/question over the variant's. Records compared with the CPU's (`meta`",
             "aside): exactly, with floats within 1e-3, and with floats ignored (labels, answers, questions: the",
             "text a user reads). device/dtype: what the stage's meta says it ran on.", "",
             f"| stage | variant | device, dtype | wall s, {n} q | start-up s | s/question | speed-up vs cpu | exact | "
             "floats 1e-3 | floats ignored |", "|---|---|---|---|---|---|---|---|---|---|"]
    measured = lambda r: r["seconds"] - r["startup"] >= NOISE_S  # noqa: E731
    cpu = {r["stage"]: r for r in rows if r["variant"] == "cpu"}
    for r in rows:
        base = cpu[r["stage"]]
        per_q = f"{r['per_q']:.2f}" if measured(r) else f"< {NOISE_S / max(n - 1, 1):.2f}"
        speed = (f"{base['per_q'] / r['per_q']:.1f}x" if r["variant"] != "cpu" and measured(r) and measured(base)
                 else "")
        same = [f"{r[k]}/{r['records']}" if r["variant"] != "cpu" else "" for k in ("exact", "close", "text")]
        lines.append(f"| {r['stage']} | {r['variant']} | {r['device']}, {r['dtype']} | {r['seconds']:.1f} | "
                     f"{r['startup']:.1f} | {per_q} | {speed} | " + " | ".join(same) + " |")
    return lines + [""]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--input", required=True, help="reranked questions with passages (JSONL)")
    ap.add_argument("--n", type=int, default=24)
    ap.add_argument("--reader", default="work/models/reader")
    ap.add_argument("--generator", default="HuggingFaceTB/SmolLM2-135M-Instruct")
    ap.add_argument("--work", default="work/bench-gpu")
    ap.add_argument("--out", default="docs/benchmarks/gpu.md")
    ap.add_argument("--only", default="", help="stage names separated by ';' (default: all)")
    ap.add_argument("--render", action="store_true", help="only rewrite --out from --work's rows (no GPU needed)")
    args = ap.parse_args()
    work = Path(args.work).resolve()
    if args.render:
        return render(work, Path(args.out), Path(args.input).name)
    work.mkdir(parents=True, exist_ok=True)
    where = {"gpu": device_name(), "machine": machine(), "date": time.strftime("%Y-%m-%d")}
    (work / "device.json").write_text(json.dumps(where))
    questions = read_jsonl(args.input)[:args.n]
    src, first = work / "input.jsonl", work / "first.jsonl"
    write_jsonl(src, questions)
    write_jsonl(first, questions[:1])
    n = len(questions)
    env = env_for()
    log = work / "rows.jsonl"
    config = {"input": str(Path(args.input).resolve()), "reader": args.reader, "generator": args.generator}
    done = {(r["stage"], r["variant"], r["n"]): r for r in (read_jsonl(log) if log.exists() else [])
            if r.get("config") == config}  # a run with other models or questions is not resumed from
    rows, outputs = [], {}
    wanted = set(filter(None, args.only.split(";")))

    def timed_run(stage_args, flags, extra, fin: Path, out: Path, what: str) -> float:
        start = time.perf_counter()
        with open(fin, "rb") as fh, open(out, "wb") as fout:
            proc = subprocess.run(CQ + stage_args + flags + ["-q"], stdin=fh, stdout=fout, stderr=subprocess.PIPE,
                                  env={**env, **extra}, cwd=ROOT)
        if proc.returncode != 0:
            raise SystemExit(f"bench-gpu: {what} failed:\n{proc.stderr.decode()[-2000:]}")
        return round(time.perf_counter() - start, 2)

    # untimed: a GGUF generator is converted to safetensors once (CQ_CACHE), by its first process
    timed_run(["answer", "--mode", "single", "--reader", "generative", "--model", args.generator], ["--device", "cpu"],
              {}, first, work / "first.out.jsonl", "warm-up")
    for name, stage_args, source, lm in stages(args.reader, args.generator):
        if wanted and name not in wanted:
            continue
        for variant, flags, extra in VARIANTS:
            if variant == "cuda fp32" and not lm:
                continue
            out = work / f"{slug(name)}.{slug(variant)}.jsonl"
            if source is None:
                current, one = src, first
            else:
                if (source, "cpu") not in outputs:
                    raise SystemExit(f"bench-gpu: {name} reads {source}'s records: add {source!r} to --only")
                current = outputs[(source, "cpu")]
                one = work / f"{slug(source)}.cpu.first.jsonl"
                write_jsonl(one, read_jsonl(current)[:1])
            row = done.get((name, variant, n)) if out.exists() else None
            if row is None:
                row = {"stage": name, "variant": variant, "n": n, "config": config,
                       "seconds": timed_run(stage_args, flags, extra, current, out, f"{name} ({variant})")}
            if "startup" not in row:  # a row resumed from a run that timed the n questions only
                row["startup"] = timed_run(stage_args, flags, extra, one, work / "first.out.jsonl",
                                           f"{name} ({variant}), first question")
                row["per_q"] = round(max(row["seconds"] - row["startup"], 0.0) / max(n - 1, 1), 3)
                with open(log, "a") as fh:
                    fh.write(json.dumps(row) + "\n")
            outputs[(name, variant)] = out
            row = {**row, **agreement(outputs[(name, "cpu")], out)}
            rows.append(row)
            print(json.dumps(row), flush=True)
            write(Path(args.out), report(rows, n, where, Path(args.input).name))


def write(out: Path, lines: list[str]) -> None:
    """``out`` from ``lines``, keeping its hand-written notes section (NOTES) across regenerations."""
    notes = out.read_text().split(NOTES, 1) if out.exists() else []
    out.write_text("\n".join(lines) + "\n" + (NOTES + notes[1] if len(notes) == 2 else ""))


def render(work: Path, out: Path, source: str) -> None:
    """``out`` rewritten from a finished (or cut short) run's work directory, copied off the GPU machine."""
    where = json.loads((work / "device.json").read_text())
    n = len(read_jsonl(work / "input.jsonl"))
    done = {(r["stage"], r["variant"]): r for r in read_jsonl(work / "rows.jsonl") if r["n"] == n and "startup" in r}
    rows = []
    for name, _, _, _ in stages("", ""):
        for variant, _, _ in VARIANTS:
            if (name, variant) in done:
                cpu, mine = (work / f"{slug(name)}.{slug(v)}.jsonl" for v in ("cpu", variant))
                rows.append({**done[(name, variant)], **agreement(cpu, mine)})
    write(out, report(rows, n, where, source))


if __name__ == "__main__":
    main()
