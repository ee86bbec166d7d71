"""Reference bundles and ``cq score --against BUNDLE`` (issue 59, item 4): results that guard themselves.

A bundle is a directory: ``manifest.json`` (format, commit, models, flags, the checksums of the data it read, and
per cell its task, score options, summary and file) and one ``CELL.jsonl.gz`` per cell, a line per record:
``{"id", "prediction": the record less its gold, passages and meta, "scores": its --per-record row}``. Gzip is
written with mtime 0 and keys sorted, so the same run writes the same bytes.

``cq score --task T --against BUNDLE [--cell NAME] [--tolerance X] RUN.jsonl`` scores the run as the cell was
scored, and compares: every summary metric (reference, run, difference, whether it moved beyond the tolerance),
the record ids (only in one of them), and per record every number of its row; the records that moved most are
named (largest absolute difference first, then id). It fails (exit 1) when a metric moved beyond the tolerance
or a record is in one side only; a run scored with another metric identity (``metric``) is an error, as
``--paired`` refuses one.
"""
from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

from ..errors import InputError

FORMAT = "cq-reference/1"
LEFT_OUT = ("gold", "passages", "meta")  # not predictions: inputs, or what varies by machine (seconds)
SUMMARY_LEFT_OUT = ("notes", "ci", "metric", "oracle", "card", "by")
MOVED_MOST = 10
DIGITS = 4  # what `cq score` prints: a bundle's summaries are its JSON output


def sha256_of(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def numbers(mapping: dict, prefix: str = "", left_out: tuple = ()) -> dict:
    """{dotted key: number} of the numbers (bools as 0/1, rounded to :data:`DIGITS`) in a nested dict; lists and
    strings left out."""
    out = {}
    for key, value in mapping.items():
        if key in left_out:
            continue
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(numbers(value, name + "."))
        elif isinstance(value, (bool, int, float)):
            out[name] = round(float(value), DIGITS)
    return out


def _dump(value) -> bytes:
    return json.dumps(value, sort_keys=True, ensure_ascii=False).encode() + b"\n"


def write_cell(bundle: Path, name: str, records: list[dict], rows: list[dict], summary: dict,
               score_args: list[str]) -> dict:
    """Write ``bundle/NAME.jsonl.gz`` (a line per record, its row beside it) and return its manifest entry."""
    by_id = {str(row.get("id")): row for row in rows}
    bundle.mkdir(parents=True, exist_ok=True)
    path = bundle / f"{name}.jsonl.gz"
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as fh:
        for record in records:
            rid = str(record.get("id"))
            fh.write(_dump({"id": rid, "prediction": {k: v for k, v in record.items() if k not in LEFT_OUT and k != "id"},
                            "scores": by_id.get(rid)}))
    return {"task": summary.get("task"), "score_args": list(score_args), "records": len(records), "file": path.name,
            "sha256": sha256_of(path), "summary": summary}


def write_manifest(bundle: Path, cells: dict, commit: str | None, models: dict, flags: dict, data: dict) -> Path:
    """``bundle/manifest.json``; ``data``: {the name shown: the path of a file the cells read} (its sha256 kept)."""
    manifest = {"format": FORMAT, "commit": commit, "models": models, "flags": flags,
                "data": {name: sha256_of(path) for name, path in sorted(data.items())}, "cells": cells}
    path = bundle / "manifest.json"
    path.write_text(json.dumps(manifest, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    return path


def read_manifest(bundle: str) -> tuple[Path, dict]:
    path = Path(bundle)
    path = path / "manifest.json" if path.is_dir() else path
    try:
        manifest = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise InputError(f"--against {bundle}: not a reference bundle (a directory with manifest.json): {err}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise InputError(f"--against {bundle}: manifest.json is not {FORMAT}; write bundles with `make compare` or "
                         "`bench/reference.py`")
    return path.parent, manifest


def pick_cell(manifest: dict, task: str, cell: str | None, where: str) -> str:
    cells = manifest.get("cells") or {}
    if cell is not None:
        if cell not in cells:
            raise InputError(f"--against {where}: no cell {cell!r}; it has {', '.join(sorted(cells)) or 'none'}")
        if cells[cell].get("task") != task:
            raise InputError(f"--against {where}: cell {cell} was scored with --task {cells[cell].get('task')}, "
                             f"not {task}")
        return cell
    same = sorted(name for name, body in cells.items() if body.get("task") == task)
    if len(same) != 1:
        raise InputError(f"--against {where}: {len(same)} cells scored with --task {task}"
                         f"{' (' + ', '.join(same) + ')' if same else ''}; name one with --cell")
    return same[0]


def reference_rows(directory: Path, entry: dict) -> dict:
    """{id: {column: number}} of a cell's per-record scores."""
    out = {}
    with gzip.open(directory / entry["file"], "rt", encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            body = json.loads(line)
            out[body["id"]] = numbers(body.get("scores") or {}, left_out=("id",))
    return out


def compare(reference: dict, ref_rows: dict, summary: dict, rows: dict, tolerance: float) -> dict:
    """The report of a run (``summary``, ``rows``: {id: {column: number}}) against a cell's ``reference``."""
    if reference["summary"].get("metric") != summary.get("metric"):
        raise InputError(f"--against: the run is scored with {summary.get('metric')}, the reference with "
                         f"{reference['summary'].get('metric')}; pass the cell's options: {' '.join(reference['score_args'])}")
    ref, run = numbers(reference["summary"], left_out=SUMMARY_LEFT_OUT), numbers(summary, left_out=SUMMARY_LEFT_OUT)
    metrics = {}
    for name in sorted(set(ref) | set(run)):
        a, b = ref.get(name), run.get(name)
        diff = None if a is None or b is None else b - a
        metrics[name] = {"reference": a, "run": b, "diff": diff,
                         "moved": diff is None or abs(diff) > tolerance + 1e-9}
    only_run, only_ref = sorted(set(rows) - set(ref_rows)), sorted(set(ref_rows) - set(rows))
    moves = []
    for rid in sorted(set(rows) & set(ref_rows)):
        a, b = ref_rows[rid], rows[rid]
        for column in sorted(set(a) | set(b)):
            x, y = a.get(column), b.get(column)
            diff = abs(y - x) if x is not None and y is not None else float("inf")
            if diff > 1e-9:
                moves.append({"id": rid, "column": column, "reference": x, "run": y, "abs_diff": diff})
    moves.sort(key=lambda m: (-m["abs_diff"], m["id"], m["column"]))
    moved_records = sorted({m["id"] for m in moves})
    failed = [n for n, m in metrics.items() if m["moved"]]
    return {"tolerance": tolerance, "passed": not failed and not only_run and not only_ref,
            "metrics_moved": failed, "metrics": metrics,
            "records": {"compared": len(set(rows) & set(ref_rows)), "moved": len(moved_records),
                        "only_in_run": only_run[:MOVED_MOST], "only_in_reference": only_ref[:MOVED_MOST],
                        "n_only_in_run": len(only_run), "n_only_in_reference": len(only_ref)},
            "moved_most": [{**m, "abs_diff": None if m["abs_diff"] == float("inf") else m["abs_diff"]}
                           for m in moves[:MOVED_MOST]]}


def lines(report: dict) -> list[str]:
    """The report as text: a verdict, the metrics that moved, the records that moved most."""
    verdict = "PASS" if report["passed"] else "FAIL"
    rec = report["records"]
    out = [f"{verdict} against {report['bundle']} cell {report['cell']} (tolerance {report['tolerance']}): "
           f"{len(report['metrics_moved'])} metric(s) moved, {rec['moved']} of {rec['compared']} record(s) moved, "
           f"{rec['n_only_in_run']} only in the run, {rec['n_only_in_reference']} only in the reference"]
    for name in report["metrics_moved"]:
        m = report["metrics"][name]
        out.append(f"  metric {name}: reference {m['reference']} run {m['run']} diff {m['diff']}")
    for m in report["moved_most"]:
        out.append(f"  record {m['id']} {m['column']}: reference {m['reference']} run {m['run']}")
    out += [f"  only in the run: {i}" for i in rec["only_in_run"]]
    out += [f"  only in the reference: {i}" for i in rec["only_in_reference"]]
    return out


def check(records, opts, task: str, task_opts: dict, config, bundle: str, cell: str | None,
          tolerance: float) -> dict:
    """Score ``records`` ((line, record) pairs) with ``task`` and compare them with the bundle's cell."""
    from ..registry import SCORE_TASKS
    from .base import score_records

    directory, manifest = read_manifest(bundle)
    name = pick_cell(manifest, task, cell, bundle)
    entry = manifest["cells"][name]
    rows: dict = {}

    def keep(row: dict) -> None:
        rows[str(row.get("id"))] = numbers(row, left_out=("id",))

    result = score_records(records, opts, on_row=keep, task=SCORE_TASKS.build(task, config, opts=opts, **task_opts))
    report = compare(entry, reference_rows(directory, entry), result.summary(), rows, tolerance)
    return {"bundle": str(bundle), "cell": name, "commit": manifest.get("commit"), **report}
