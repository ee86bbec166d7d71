"""How long each paper's preset pipeline takes a question, from a finished grid run (`make bench-smoke` calls it on
its `make compare N=5`): for each preset, the grid cell that runs it, and the seconds per question of every stage
from the question file to that cell (each stage's F.wall stage_s over the records it wrote, summed along the
cell's inputs). Writes docs/benchmarks/preset-times.json; README's "Reproduce a paper" states these as each
block's expected time (cqtools/docgen_readme.py)."""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import ROOT, machine  # noqa: E402

OUT = ROOT / "docs" / "benchmarks" / "preset-times.json"
# preset -> (the grid cell that runs it, the question file its block starts from, how the cell differs from the block)
CELLS = {
    "toc": ("asqa.toc.preset.bm25.jsonl", "asqa.t.jsonl", "BM25 for the 100 passages"),
    "clam": ("clam.clam.jsonl", "ambignq.m.rr.jsonl", "none; a question is one interpretation (oracle --expand)"),
    "ambigqa": ("ambignq.qd.preset.jsonl", "ambignq.m.jsonl", "BM25 top 40, all reranked, for the dense top 100"),
    "disambig-first": ("ambignq.disambigfirst.jsonl", "ambignq.m.jsonl", "BM25 top 20 reranked to 5 before the "
                       "classifier; each DQ retrieved with BM25; the shipped classifier and reader"),
    "refuel": ("ambignq.refuel.preset.jsonl", "ambignq.m.jsonl", "BM25 top 40, all reranked, for the dense top 100"),
    "askcq": ("ambignq.cqa.preset.jsonl", "ambignq.m.jsonl", "BM25 top 40 reranked; the prompted LLM writes the "
              "CQ (no trained generator) and no classifier runs first"),
}


def _records(path: Path) -> int:
    with open(path, "rb") as fh:
        return sum(1 for _ in fh)


def per_question(exp: Path, name: str, start: str) -> tuple[float, int, list[str], int]:
    """Seconds a question for the grid file ``name`` and every stage it was made from after ``start`` (each stage's
    seconds over the records it wrote); the cell's own records; the stages, first to last; the generations they
    read from the grid's shared generation cache (made by another cell: not timed here)."""
    seconds, stages, path, hits = 0.0, [], exp / name, 0
    while path.parent == exp and path.name != start and (wall := path.with_name(path.name + ".wall")).exists():
        info = json.loads(wall.read_text())
        n = _records(path)
        seconds += (info.get("stage_s") or 0.0) / max(n, 1)
        hits += info.get("gen_cache_hits") or 0
        stages.insert(0, path.name)
        path = Path(info.get("input") or "")
        path = exp / path.name if path.name and (exp / path.name).exists() else Path("/")
    return seconds, _records(exp / name), stages, hits


def write(exp: Path, command: str, load: float, date: str, out: Path = OUT) -> None:
    """``out``: each preset's cell in the grid run ``exp`` (made by ``command``) and its seconds a question."""
    from cqtools import presets as registered
    from cqtools.docgen_readme import NOT_MEASURED

    # a preset no grid cell runs yet (a new one) is "not measured yet": README says so
    presets = {name: {"status": NOT_MEASURED} for name in registered.names() if name not in CELLS}
    for preset, (cell, start, differs) in CELLS.items():
        if not (exp / cell).exists():
            raise SystemExit(f"{exp / cell} is missing: run the grid first (make compare N=5)")
        seconds, n, stages, hits = per_question(exp, cell, start)
        per = round(seconds) if seconds >= 10 else round(seconds, 1)  # a cached cell takes under a second
        presets[preset] = {"cell": cell[:-len(".jsonl")], "questions": n, "seconds_per_question": per,
                           "stages": len(stages), "cached_generations": hits, "differs": differs}
    out.write_text(json.dumps({"measured": date, "command": command, "machine": machine(), "load": round(load, 1),
                               "presets": presets}, indent=1) + "\n")
    print(f"wrote {out}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("exp", type=Path, help="a finished grid run's EXP directory (work/.../exp-all_5-...)")
    ap.add_argument("--command", default="make compare N=5", help="what made it (said in the file)")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    # the last 15 minutes' load: most of a smoke run, when called at its end
    write(args.exp, args.command, os.getloadavg()[2], time.strftime("%Y-%m-%d"), args.out)


if __name__ == "__main__":
    main()
