"""Why a cell of the grid scores at the floor, read from the records it scored (docs/results.md writes it
beside the number: issue 35 item 8). Nothing here is a fixed sentence about a method: the asking, the
detector's scores and threshold, and the answers are counted in the cell's own records."""
from __future__ import annotations

import json
from pathlib import Path

# What a detector's ambiguity.score is, by its method (meta written by cq detect); others: "score".
SCORE_NAMES = {"clam": "log p(True)", "llm": "log p(True) - log p(False)", "classifier": "P(ambiguous)"}


def records_of(scores_dir: Path, name: str) -> Path | None:
    """The records a score summary was computed from: its F.wall's input (wall.py wall_stop), else the
    grid's naming (EXP/NAME.jsonl beside EXP/scores, or NAME less its task suffix)."""
    wall = scores_dir / f"{name}.json.wall"
    if wall.exists():
        path = json.loads(wall.read_text()).get("input")
        if path and Path(path).exists():
            return Path(path)
    for stem in (name, name.rsplit(".", 1)[0]):
        path = scores_dir.parent / f"{stem}.jsonl"
        if path.exists():
            return path
    return None


def _texts(answers) -> list[str]:
    out = []
    for a in answers or []:
        text = a.get("text") if isinstance(a, dict) else a
        if isinstance(text, str) and text.strip():
            out.append(text.strip())
    return out


def _gold_example(record: dict) -> str | None:
    gold = record.get("gold") or {}
    answers = gold.get("answers") or []
    if not answers:
        return None
    first = answers[gold.get("intended", 0)] if isinstance(gold.get("intended"), int) else answers[0]
    while isinstance(first, list) and first:
        first = first[0]
    return first if isinstance(first, str) else None


def asking_reason(records: list[dict]) -> str | None:
    """"never asked: ..." when no record carries a clarifying question, with the detector's best score
    against its threshold where the records hold cq detect's output."""
    if any(r.get("cq") for r in records):
        return None
    labelled = [r["ambiguity"] for r in records if isinstance(r.get("ambiguity"), dict)]
    scores = [a["score"] for a in labelled if isinstance(a.get("score"), (int, float))]
    if not labelled or not scores:
        return f"never asked: no clarifying question on any of {len(records)} records"
    method, threshold = labelled[0].get("method"), labelled[0].get("threshold")
    if method == "never":
        return "never asked: detect --method never"
    name = SCORE_NAMES.get(method, f"{method} score")
    return f"never asked: max {name} {max(scores):.2f} ≤ threshold {threshold}"


def answer_reason(records: list[dict]) -> str:
    answered = [r for r in records if _texts(r.get("answers"))]
    if not answered:
        return f"no answer on any of {len(records)} records"
    first = answered[0]
    gold = _gold_example(first)
    example = f' (e.g. "{_texts(first["answers"])[0][:40]}"' + (f' for gold "{gold[:40]}")' if gold else ")")
    return f"answers on {len(answered)} of {len(records)} records, none credited{example}"


def cq_reason(records: list[dict]) -> str:
    asked = sum(bool(r.get("cq")) for r in records)
    return (f"no CQ on any of {len(records)} records" if not asked
            else f"CQs on {asked} of {len(records)} records, no option credited")


def floor_reason(path: Path | None, task: str) -> str | None:
    """The reasons a cell's headline metric is 0, from its records ("records not found" without them);
    None for a task whose floor this module does not explain."""
    if task not in ("clam", "ambigqa", "cbqa", "cq"):
        return None
    if path is None:
        return "records not found"
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    if not records:
        return "no records"
    if task == "cq":
        return cq_reason(records)
    reasons = [asking_reason(records)] if task == "clam" else []
    return "; ".join(r for r in [*reasons, answer_reason(records)] if r)
