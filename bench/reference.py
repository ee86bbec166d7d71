"""Reference bundles (issue 59, item 4; cqtools/score/reference.py is the format and `cq score --against`).

    python bench/reference.py write --out fixtures/reference     # the fixture cells' bundle kept in the repo
    python bench/reference.py check --against fixtures/reference # `make check-reference`: every cell run again,
                                                                 # each compared with `cq score --against`
    python bench/reference.py grid --scores EXP/scores --out EXP/reference --commit C --models M --flags F \
        --data FILE...                                           # `make compare`: the grid's cells as a bundle

The fixture cells run real stages and scorers on the repository's fixtures, with no model and no JVM (seconds,
deterministic): the simulated user in each persona on CQs built from the gold DQs, answer-based detection and the
scores of the replayed pipeline's answers (fixtures/replay, written by tiny seeded models). A change that moves any
of their numbers or any record's score fails `make check-reference` (part of `make test`), naming the records that
moved; a change meant to move them rewrites the bundle with `write` and says so in its commit message.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cqtools.score import reference  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
QUESTIONS = "fixtures/questions.jsonl"
REPLAY = "fixtures/replay/pipeline.jsonl"
GEN = [["oracle", "--expand"], ["gen-cq", "--method", "from-dqs"]]
# name: (input: a file or a replay step, the stages after it, the score task and its options)
CELLS = {
    **{f"oracle.{p}": (QUESTIONS, [*GEN, ["oracle", "--persona", p]], "oracle", []) for p in
       ("cooperative", "terse", "vague", "uncooperative")},
    "detect.answers": ("replay:answer-multi", [["detect", "--method", "answers"]], "detect", []),
    "cbqa.answer-cq": ("replay:answer-cq", [], "cbqa", []),
    "clam.answer-cq": ("replay:answer-cq", [], "clam", []),
}


def _invoke(args: list[str], text: str):
    from click.testing import CliRunner

    from cqtools.cli import cli

    return CliRunner().invoke(cli, args, input=text)


def _cq(args: list[str], text: str) -> str:
    """A stage's output records (in this process: no model, no JVM, so no process of its own is needed)."""
    result = _invoke([*args, "-q"], text)
    if result.exit_code:
        raise SystemExit(f"cq {' '.join(args)} failed ({result.exit_code}): {result.stderr.strip()[-500:]}")
    return result.stdout


def _score(args: list[str], text: str) -> tuple[int, str, str]:
    result = _invoke(["score", *args], text)
    if result.exit_code not in (0, 1) or result.exception and not isinstance(result.exception, SystemExit):
        raise SystemExit(f"cq score {' '.join(args)} failed ({result.exit_code}): {result.stderr.strip()[-500:]}")
    return result.exit_code, result.stdout, result.stderr


def _input(source: str) -> str:
    if not source.startswith("replay:"):
        return (ROOT / source).read_text()
    step = source.split(":", 1)[1]
    for line in (ROOT / REPLAY).read_text().splitlines():
        data = json.loads(line)
        if data["step"] == step:
            return "".join(json.dumps(r) + "\n" for r in data["records"])
    raise SystemExit(f"{REPLAY}: no step {step}")


def run_cell(name: str) -> str:
    """The cell's records (JSONL text): its input through its stages."""
    source, stages, _, _ = CELLS[name]
    text = _input(source)
    for stage in stages:
        text = _cq(stage, text)
    return text


def write(out: Path) -> None:
    import tempfile

    cells = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, (_, _, task, args) in CELLS.items():
            text = run_cell(name)
            rows_path = Path(tmp) / f"{name}.rows.jsonl"
            code, stdout, stderr = _score(["--task", task, *args, "--per-record", str(rows_path)], text)
            if code:
                raise SystemExit(f"cq score --task {task} failed: {stderr.strip()[-500:]}")
            records = [json.loads(line) for line in text.splitlines() if line.strip()]
            rows = [json.loads(line) for line in rows_path.read_text().splitlines()]
            cells[name] = reference.write_cell(out, name, records, rows, json.loads(stdout), ["--task", task, *args])
    reference.write_manifest(out, cells, None, {}, {"cells": "bench/reference.py CELLS"},
                             {name: ROOT / name for name in (QUESTIONS, REPLAY)})
    print(f"wrote {out}: {len(cells)} cells")


def check(bundle: Path, tolerance: float) -> int:
    """Every cell of the bundle run again and compared with it; the number of cells that moved."""
    _, manifest = reference.read_manifest(str(bundle))
    failed = 0
    for name, entry in sorted(manifest["cells"].items()):
        if name not in CELLS:
            raise SystemExit(f"{bundle}: cell {name} is not one of bench/reference.py's CELLS; rewrite the bundle")
        code, stdout, stderr = _score([*entry["score_args"], "--against", str(bundle), "--cell", name,
                                    "--tolerance", str(tolerance), "--format", "table"], run_cell(name))
        print(stdout.rstrip() or stderr.strip())
        failed += code != 0
    return failed


def _score_args(cmd: Path) -> list[str]:
    """The `cq score` options of a grid cell, from the last line of its .cmd."""
    last = cmd.read_text().strip().splitlines()[-1] if cmd.exists() else ""
    return last.split("cq score ", 1)[1].split() if "cq score " in last else []


def grid(scores: Path, out: Path, commit: str | None, models: str, flags: str, data: list[str]) -> None:
    """`make compare`'s bundle: every scored cell with its records and its per-record scores (NAME.json.rows.jsonl.gz,
    written by the grid's score step); a cell without them is named and left out."""
    import gzip

    from bench.grid.floor import records_of

    cells = {}
    for path in sorted(scores.glob("*.json")):
        rows_path, records = Path(f"{path}.rows.jsonl.gz"), records_of(scores, path.stem)
        if not rows_path.exists() or records is None:
            print(f"skip  {path.stem}: no per-record scores or records beside it")
            continue
        with gzip.open(rows_path, "rt") as fh:
            rows = [json.loads(line) for line in fh if line.strip()]
        with open(records) as fh:
            recs = [json.loads(line) for line in fh if line.strip()]
        cells[path.stem] = reference.write_cell(out, path.stem, recs, rows, json.loads(path.read_text()),
                                                _score_args(Path(f"{path}.cmd")))
    reference.write_manifest(out, cells, commit, {"models": models}, {"make": flags},
                             {d: d for d in data if Path(d).is_file()})
    print(f"reference bundle  {out}: {len(cells)} cells")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="what", required=True)
    w = sub.add_parser("write")
    w.add_argument("--out", type=Path, default=ROOT / "fixtures" / "reference")
    c = sub.add_parser("check")
    c.add_argument("--against", type=Path, default=ROOT / "fixtures" / "reference")
    c.add_argument("--tolerance", type=float, default=0.0)
    g = sub.add_parser("grid")
    g.add_argument("--scores", type=Path, required=True)
    g.add_argument("--out", type=Path, required=True)
    g.add_argument("--commit")
    g.add_argument("--models", default="")
    g.add_argument("--flags", default="")
    g.add_argument("--data", nargs="*", default=[])
    args = ap.parse_args(argv)
    if args.what == "write":
        write(args.out)
    elif args.what == "check":
        failed = check(args.against, args.tolerance)
        if failed:
            raise SystemExit(f"check-reference: {failed} cell(s) moved against {args.against}")
    else:
        grid(args.scores, args.out, args.commit, args.models, args.flags, args.data)


if __name__ == "__main__":
    main()
