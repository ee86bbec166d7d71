"""``--task judgements``: the judgements a ``cq view --study`` collected (one JSONL line each):
the share of each preference (or of "yes" per CLAM turn question) with Wilson 95% intervals,
agreement between annotators (Cohen's kappa for two, Fleiss' kappa for three or more, over the items
every annotator judged) and, for a preference study, the paired comparison of its two sides: each
item's majority preference, wins and ties, and the exact sign test."""
from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from ..errors import InputError
from ..metrics.agreement import cohen_kappa, fleiss_kappa, sign_test
from ..view.study import KINDS, SIDES, TURN_QUESTIONS
from .base import Scored, ScoreOptions, Task
from .reading import pct
from .rows import Metric, mean, value
from .study import wilson

TURNS = tuple(key for key, _ in TURN_QUESTIONS)
EQUAL = 2  # label codes: 0 and 1 the kind's two sides (SIDES), 2 equal


def _labels(kind: str) -> tuple[str, str, str]:
    return (*SIDES[kind], "equal")


@dataclass
class JudgementsTask(Task):
    columns = ("label", "item", "annotator", *TURNS)
    kind: str | None = None
    codes: dict = field(default_factory=lambda: {"item": {}, "annotator": {}})

    def skip_reason(self, record):
        return None if record.get("study") in KINDS else "no 'study' kind (records from cq view --study)"

    def score_record(self, record):
        if self.kind is None:
            self.kind = record["study"]
        elif record["study"] != self.kind:
            raise InputError(f"record {record['id']}: study {record['study']!r} in a file of {self.kind!r} "
                             "judgements; score one study at a time", record_id=record["id"])
        names = [record.get("item"), record.get("annotator")]
        if not all(isinstance(n, str) for n in names):
            raise InputError(f"record {record['id']}: a judgement needs 'item' and 'annotator' strings",
                             record_id=record["id"])
        row = {"id": record["id"], "item": self._code("item", names[0]),
               "annotator": self._code("annotator", names[1]), "label": None, **dict.fromkeys(TURNS)}
        if self.kind in SIDES:
            labels = _labels(self.kind)
            if record.get("label") not in labels:
                raise InputError(f"record {record['id']}: label must be one of {', '.join(labels)}",
                                 record_id=record["id"])
            row["label"] = labels.index(record["label"])
        else:
            given = record.get("judgements") if isinstance(record.get("judgements"), dict) else {}
            if not all(isinstance(given.get(key), bool) for key in TURNS):
                raise InputError(f"record {record['id']}: judgements must hold {', '.join(TURNS)} as true/false",
                                 record_id=record["id"])
            row.update({key: int(given[key]) for key in TURNS})
        return Scored(row)

    def _code(self, what: str, name: str) -> int:
        return self.codes[what].setdefault(name, len(self.codes[what]))

    def aggregation(self, rows):
        if self.kind is None:
            return [value("study", None)]
        if self.kind in SIDES:
            labels = _labels(self.kind)
            shares = [Metric(f"prefer_{name}", _share(code)) for code, name in enumerate(labels)]
            counts = {f"prefer_{name}": (lambda r, c=code: int(_count(r, c))) for code, name in enumerate(labels)}
            return [value("study", self.kind), *shares, Metric("counts", _each(counts), resampled=False),
                    Metric("wilson_95", _each({k: _wilson_of(f) for k, f in counts.items()}), resampled=False),
                    Metric("agreement", lambda r: self.agreement(r, "label"), resampled=False),
                    Metric("paired", lambda r: self.paired(r), resampled=False)]
        return [value("study", self.kind), *(mean(key, key) for key in TURNS),
                Metric("wilson_95", _each({k: _wilson_of(lambda r, k=k: r.sum(k)) for k in TURNS}), resampled=False),
                Metric("agreement", lambda r: {k: self.agreement(r, k) for k in TURNS}, resampled=False)]

    def by_item(self, rows, column: str) -> dict[int, dict[int, int]]:
        """{item: {annotator: label}} of ``column``."""
        out: dict = defaultdict(dict)
        for item, who, label in zip(rows.column("item"), rows.column("annotator"), rows.column(column)):
            if not math.isnan(label):
                out[int(item)][int(who)] = int(label)
        return out

    def agreement(self, rows, column: str) -> dict:
        """Cohen's kappa (two annotators) or Fleiss' kappa (more) over the items every annotator judged."""
        items = self.by_item(rows, column)
        annotators = sorted({who for judged in items.values() for who in judged})
        common = [judged for judged in items.values() if len(judged) == len(annotators)]
        names = {code: name for name, code in self.codes["annotator"].items()}
        out = {"annotators": [names[a] for a in annotators], "items_all_judged": len(common)}
        if len(annotators) == 2:
            out["cohen_kappa"] = cohen_kappa([j[annotators[0]] for j in common], [j[annotators[1]] for j in common])
        elif len(annotators) > 2:
            out["fleiss_kappa"] = fleiss_kappa([[j[a] for a in annotators] for j in common])
        return out

    def paired(self, rows) -> dict:
        """Each item's majority preference (a tie of votes: equal); wins of each side, ties, the sign test."""
        first, second = SIDES[self.kind]
        tally = Counter()
        for judged in self.by_item(rows, "label").values():
            votes = Counter(judged.values())
            tally[0 if votes[0] > votes[1] else 1 if votes[1] > votes[0] else EQUAL] += 1
        decided = tally[0] + tally[1]
        return {"items": sum(tally.values()), f"wins_{first}": tally[0], f"wins_{second}": tally[1],
                "ties": tally[EQUAL], f"win_rate_{first}": pct(tally[0] / decided) if decided else None,
                "wilson_95": wilson(tally[0], decided), "sign_test_p": sign_test(tally[0], tally[1])}


def _count(rows, code: int) -> float:
    return float(sum(1 for label in rows.column("label") if label == code))


def _share(code: int):
    return lambda rows: pct(_count(rows, code) / rows.n) if rows.n else None


def _each(functions: dict):
    return lambda rows: {name: f(rows) for name, f in functions.items()}


def _wilson_of(count):
    return lambda rows: wilson(int(count(rows)), rows.n)


@dataclass(frozen=True)
class JudgementsScoring:
    """human judgements of cq view --study (preference shares, kappa, sign test)"""


def judgements_task(options: JudgementsScoring, config, opts: ScoreOptions) -> Task:
    return JudgementsTask(opts, options)


TASK = ("judgements", judgements_task, JudgementsScoring)  # registered by cqtools/score/builtin_methods.py
