"""Why a cell of the grid scores at the floor, read from the records it scored (docs/results.md writes it
beside the number: issue 35 item 8, issue 48), and whether the cell read gold (an upper bound, not a system).
Nothing here is a fixed sentence about a method: the asking, the detector's scores and threshold, the answers,
the CQs' n-grams, the gold labels and the stages' meta are counted in the cell's own records."""
from __future__ import annotations

import json
import re
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


def load(path: Path | None) -> list[dict] | None:
    if path is None:
        return None
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


GOLD_INPUT = re.compile(r'"(?:reads|with_answers)"\s*:\s*"gold')


def gold_reads_file(path: Path | None) -> list[str]:
    """:func:`gold_reads` of a records file, streamed: only a line whose text names a gold input is parsed, and
    the first whose meta confirms it answers (a stage's meta is the same on every record it wrote)."""
    if path is None:
        return []
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            if GOLD_INPUT.search(line):
                found = gold_reads([json.loads(line)])
                if found:
                    return found
    return []


def gold_reads(records: list[dict] | None) -> list[str]:
    """What the cell's stages read from gold as input, from their meta ("gen_cq: gold.dqs", "gen_cq: gold.answers"
    for --with-answers gold); [] for a system. The simulated user of CLAM's protocol (meta.oracle) holds the
    intended DQ by design in every CLAM cell, so it is the protocol, not an upper bound."""
    found: dict = {}
    for record in records or []:
        for stage, info in (record.get("meta") or {}).items():
            if not isinstance(info, dict) or stage == "oracle":
                continue
            reads = info.get("reads")
            if isinstance(reads, str) and reads.startswith("gold"):
                found[f"{stage}: {reads}"] = True
            if info.get("with_answers") == "gold":
                found[f"{stage}: gold.answers"] = True
    return list(found)


def cq_texts(records: list[dict]) -> list[tuple[str, str]]:
    """(the record's CQ text, its gold CQ) of the records that have a gold CQ; "" where no CQ was written."""
    out = []
    for r in records:
        gold = (r.get("gold") or {}).get("cq")
        if gold:
            cq = r.get("cq")
            text = cq.get("text") if isinstance(cq, dict) else cq
            out.append((str(text or ""), str(gold)))
    return out


def bleu_reason(records: list[dict]) -> str:
    """Why corpus BLEU-4 is 0 (it has no smoothing: one n-gram order with no match gives 0)."""
    from cqtools.metrics.bleu import BleuStats

    pairs = cq_texts(records)
    written = [(p, g) for p, g in pairs if p.strip()]
    if not written:
        return f"no CQ on any of {len(pairs)} records with a gold CQ"
    stats = BleuStats(4)
    for pred, gold in written:
        stats.add(pred, [gold])
    precisions = "/".join(f"{100 * m / p:.0f}" if p else "–" for m, p in zip(stats.matches, stats.possible))
    empty = next((n + 1 for n, m in enumerate(stats.matches) if m == 0), None)
    what = f"no {empty}-gram of {len(written)} CQs is in its gold CQ" if empty else "no n-gram matched"
    return f"{what} (1-4-gram precision {precisions} %; BLEU has no smoothing)"


def one_class_reason(records: list[dict]) -> str | None:
    """"one class" when every scored record has the same gold.ambiguous (AUROC is undefined)."""
    labels = [bool(r["gold"]["ambiguous"]) for r in records
              if isinstance(r.get("gold"), dict) and r["gold"].get("ambiguous") is not None]
    if labels and len(set(labels)) == 1:
        return f"every one of {len(labels)} questions is gold-{'ambiguous' if labels[0] else 'unambiguous'}"
    return None


def options_reason(records: list[dict]) -> str:
    """Why EM (answers tied to a gold CQ's options) is undefined: which answers name an option, if any."""
    gold_cq = sum(bool((r.get("gold") or {}).get("cq")) for r in records)
    answers = [a for r in records for a in r.get("answers") or [] if isinstance(a, dict)]
    named = sum(a.get("option") is not None for a in answers)
    if not gold_cq:
        return f"no gold CQ on any of {len(records)} records"
    if not named:
        return f"none of {len(answers)} answers names a CQ option"
    return f"{named} answers name options of generated CQs, none of the gold CQ's"


def labels_reason(records: list[dict]) -> str | None:
    """Why detection's P/R/F1 are 0: how many records the detector labelled ambiguous."""
    labelled = [r["ambiguity"] for r in records if isinstance(r.get("ambiguity"), dict)]
    if not labelled:
        return f"no ambiguity label on any of {len(records)} records"
    positive = sum(bool(a.get("label")) for a in labelled)
    return f"labelled {positive} of {len(labelled)} ambiguous" if positive == 0 else None


def undefined(task: str, key: str, records: list[dict] | None, notes: list) -> tuple[str, str] | None:
    """(short cell text, reason) for a metric the summary leaves undefined (None); None when nothing says why."""
    note = next((n.split(":", 1)[1].strip() for n in notes if isinstance(n, str) and n.startswith(f"{key}:")), None)
    if records is not None and task == "detect" and key == "auroc":
        one = one_class_reason(records)
        if one:
            return "n/a (one class)", one
    if records is not None and task == "cbqa" and key == "em":
        return "n/a (no options)", options_reason(records)
    return ("n/a", note) if note else None


def zero_reason(task: str, key: str, headline: str, records: list[dict] | None) -> str | None:
    """Why the metric ``key`` of a cell is 0, from its records; None for one this module does not explain."""
    if records is None:
        return "records not found" if key == headline or (task, key) == ("cq", "bleu") else None
    if not records:
        return "no records"
    if (task, key) == ("cq", "bleu"):
        return bleu_reason(records)
    if task == "detect" and key in ("precision", "recall", "f1"):
        return labels_reason(records)
    return floor_records(records, task) if key == headline else None


def floor_reason(path: Path | None, task: str) -> str | None:
    """The reasons a cell's headline metric is 0, from its records ("records not found" without them);
    None for a task whose floor this module does not explain."""
    if task not in ("clam", "ambigqa", "cbqa", "cq"):
        return None
    if path is None:
        return "records not found"
    records = load(path)
    return floor_records(records, task) if records else "no records"


def floor_records(records: list[dict], task: str) -> str | None:
    """:func:`floor_reason` of records already read."""
    if task not in ("clam", "ambigqa", "cbqa", "cq"):
        return None
    if task == "cq":
        return cq_reason(records)
    reasons = [asking_reason(records)] if task == "clam" else []
    return "; ".join(r for r in [*reasons, answer_reason(records)] if r)
