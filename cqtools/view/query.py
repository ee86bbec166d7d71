"""The list's search and filters over a run's index, and the pairs of two runs (no HTML here)."""
from __future__ import annotations

from dataclasses import dataclass

from .index import RunIndex

GOLD_CHOICES = ("any", "ambiguous", "unambiguous")
WRONG_CHOICES = ("any", "detect", "answers", "cq")  # the record's prediction disagrees with gold on that
WRONG_METRIC = {"detect": "detect_correct", "answers": "answer_f1", "cq": "cq_options_f1"}
SORT_CHOICES = ("file", "worst", "best")  # by --metric: lowest first, highest first (records without it last)
PAGE_SIZE = 50


@dataclass(frozen=True)
class Filters:
    q: str = ""
    gold: str = "any"
    predicted: str = "any"  # cq detect's label
    wrong: str = "any"
    metric: str = ""
    sort: str = "file"
    page: int = 1

    @classmethod
    def parse(cls, params: dict[str, str]) -> "Filters":
        """From a request's query; an unknown choice falls back to its default (a URL is typed by hand)."""
        def pick(name, choices):
            value = params.get(name, choices[0])
            return value if value in choices else choices[0]
        try:
            page = max(1, int(params.get("page", "1")))
        except ValueError:
            page = 1
        return cls(q=params.get("q", "")[:200], gold=pick("gold", GOLD_CHOICES),
                   predicted=pick("predicted", GOLD_CHOICES), wrong=pick("wrong", WRONG_CHOICES),
                   metric=params.get("metric", "")[:40], sort=pick("sort", SORT_CHOICES), page=page)


def _keep(run: RunIndex, i: int, f: Filters, needle: str) -> bool:
    entry = run.entries[i]
    if needle and needle not in entry.question.lower() and needle not in entry.id.lower():
        return False
    if f.gold != "any" and entry.gold is not (f.gold == "ambiguous"):
        return False
    if f.predicted != "any" and entry.predicted is not (f.predicted == "ambiguous"):
        return False
    if f.wrong != "any":
        value = (run.metrics[i] or {}).get(WRONG_METRIC[f.wrong])
        return value is not None and value < 1.0
    return True


def select(run: RunIndex, f: Filters) -> list[int]:
    """Positions of the records that pass the filters, in the asked order."""
    needle = f.q.strip().lower()
    kept = [i for i in range(len(run)) if _keep(run, i, f, needle)]
    if f.sort != "file" and f.metric:
        sign = 1 if f.sort == "worst" else -1

        def key(i):
            value = (run.metrics[i] or {}).get(f.metric)
            return (value is None, 0.0 if value is None else sign * value, i)
        kept.sort(key=key)
    return kept


def page_of(items: list, page: int) -> tuple[list, int]:
    """The items of page ``page`` (1-based, clamped) and the number of pages."""
    pages = max(1, -(-len(items) // PAGE_SIZE))
    page = min(page, pages)
    return items[(page - 1) * PAGE_SIZE:page * PAGE_SIZE], pages


@dataclass(frozen=True)
class Pair:
    id: str
    a: int
    b: int
    deltas: dict  # metric -> B - A, where both have it
    differ: bool  # the predictions differ (fingerprints) or a metric does

    @property
    def largest(self) -> float:
        return max((abs(d) for d in self.deltas.values()), default=0.0)


def pairs(a: RunIndex, b: RunIndex, only_different: bool = True, needle: str = "") -> list[Pair]:
    """Records of both runs paired by id, largest metric change first (ties: A's file order)."""
    needle = needle.strip().lower()
    out = []
    for i, entry in enumerate(a.entries):
        j = b.position.get(entry.id)
        if j is None or (needle and needle not in entry.question.lower() and needle not in entry.id.lower()):
            continue
        ma, mb = a.metrics[i] or {}, b.metrics[j] or {}
        deltas = {m: mb[m] - ma[m] for m in ma if m in mb}
        differ = entry.fingerprint != b.entries[j].fingerprint or any(deltas.values())
        if differ or not only_different:
            out.append(Pair(entry.id, i, j, deltas, differ))
    out.sort(key=lambda p: -p.largest)  # stable: file order within ties
    return out
