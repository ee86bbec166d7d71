"""What every `cq score --task` shares: :class:`ScoreOptions`, the :class:`Task` base class,
:func:`score_records` (the batch loop) and small record helpers.

A task is built by a factory registered in :data:`cqtools.registry.SCORE_TASKS` with its options
dataclass (its flags, ``-O``, --help, validation and presets derive from it, as for a stage's
method); the factory receives the options, the run configuration and the shared ``opts``, and
returns a fresh :class:`Task`::

    from dataclasses import dataclass
    from cqtools.plugins import hookimpl
    from cqtools.registry import option
    from cqtools.score.base import Task

    @dataclass(frozen=True)
    class LengthOptions:  # its docstring is the task's help
        words: int = option(8, "a long answer has more words than this", min=1)

    @hookimpl
    def register_score_tasks(register):
        register("length", lambda options, config, opts: LengthTask(opts, options), options=LengthOptions)

What a task implements (subclass :class:`Task`, a dataclass; add your own fields with defaults):

``skip_reason(record) -> str | None``
    Why a record cannot be scored at all (its *gold* lacks what the task compares against),
    or None. Skipped records get the row ``{"id", "skipped": reason}``, are counted per reason
    in ``skipped`` and named in the notes; they never reach ``score_scorable``.
``score_scorable(records) -> list[dict]``  (required)
    Score a batch of non-skipped records: return one row per record, in order, each
    ``{"id": record["id"], ...plain numbers}`` (what ``--per-record`` writes). Add 1 to
    ``self.n`` per record and 1 to ``self.missing`` per record that lacks the prediction (it
    scores 0, it is never dropped). Keep running sums, not records: batches are dropped once
    scored. Raise :class:`cqtools.errors.InputError` for a malformed record (the loop adds
    the line numbers).
``metrics() -> dict``  (required)
    The task's metrics from its running sums, called once after the last batch; scores are
    percentages (:func:`pct`), counts raw. It may append to ``self.notes``. With no records
    scored, :meth:`Task.summary` turns every float into null (counts named ``n`` stay).
``plot(path)``  (optional)
    Write a figure for ``--plot``; the default says the task has none.
``reads``         (optional, class attribute) the predictions it reads (keys of :data:`PREDICTIONS`):
                  each is checked for its shape first (an error; under ``--on-error skip`` a warning,
                  and the record counts as missing that prediction)
``variant_keys``  (optional, class attribute)
    Names of the task's options that choose between scorer variants; the summary reports them
    under ``"variant"``.
``resample(idx) -> dict``  (optional; needed by ``--ci`` and ``--paired``)
    The task's metrics recomputed on the scored questions at positions ``idx`` (a numpy array,
    repeats allowed), as flat ``{name: number or None}`` (a group's metric is ``"group.name"``),
    with the same aggregation as :meth:`metrics` (``resample(arange(n))`` gives its numbers).
    What it needs per question is kept by :meth:`Task.keep`, called by ``score_scorable`` for
    every scored record, only while ``opts.keep_questions`` is set (the stream is not held
    otherwise). :meth:`Task.kept_sums` adds up kept rows of numbers for sum-based aggregations.

The summary is ``{"task", "n", "missing", ["variant"], ["skipped"], **metrics(), "notes"}``.
A task reads its own options from ``self.options`` and what all tasks share from ``self.opts``; it
loads models only on first use, never at import time.
"""
from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field
from itertools import islice
from typing import Callable, ClassVar, Iterable, Iterator

from ..errors import InputError
from ..registry import option
from ..records import answer_texts  # noqa: F401 (the tasks' accessor: None when a record has no answers)

DEFAULT_BERTSCORE_MODEL = "roberta-large"
log = logging.getLogger("cqtools")


@dataclass
class ScoreOptions:
    """What every task shares. A task's own settings (``--lambda``, ``--matcher``, ...) are its options
    dataclass, declared in its module and registered with it; the task reads them as ``self.options``."""

    task: str
    device: str = "auto"
    batch_size: int = 64
    keep_questions: bool = False  # keep per-question numbers for Task.resample (--ci, --paired)
    on_error: str = "fail"  # skip: a record whose prediction is malformed scores as missing, with a warning


def matcher_option():
    """cq and cbqa's partial-match length (one declaration for both tasks)."""
    from ..metrics.normalize import RELEASED_MATCHER

    return option(RELEASED_MATCHER, "partial-match length: difflib's SequenceMatcher as AskCQ ships it (autojunk on "
                             "for 200+ characters) or the exact longest common substring.", choices=("difflib", "lcs"))


# The predictions the stages write, and the shape each must have (checked before any task reads them).
PREDICTIONS = {
    "passages": (list, dict, "a list of {title, text} objects (as `cq retrieve` writes)"),
    "answers": (list, (dict, str), "a list of {text, ...} objects (as `cq answer` writes)"),
    "dqs": (list, dict, "a list of {question, answer} objects (as `cq disambiguate` writes)"),
    "cq": (dict, None, "a {text, options, ...} object (as `cq gen-cq` writes) or null"),
    "ambiguity": (dict, None, "a {label, score, ...} object (as `cq detect` writes)"),
}


def malformed_prediction(record: dict, key: str) -> str | None:
    """What is wrong with ``record[key]`` (a prediction of :data:`PREDICTIONS`), or None."""
    value = record.get(key)
    if value is None:
        return None
    outer, inner, shape = PREDICTIONS[key]
    if isinstance(value, outer) and (inner is None or all(isinstance(item, inner) for item in value)):
        return None
    return f"'{key}' must be {shape}, not {type(value).__name__}"


@dataclass
class Task:
    """Base of every task: the counters all share, the batch hook and the summary (see the module
    docstring for what a subclass implements)."""

    variant_keys: ClassVar[tuple[str, ...]] = ()
    reads: ClassVar[tuple[str, ...]] = ()  # the predictions (PREDICTIONS keys) it reads, checked by readable()

    opts: ScoreOptions
    options: object = None  # the task's own options dataclass (None: it declares none)
    config: object = None  # the run configuration its models load under (None: the process's)
    n: int = 0
    missing: int = 0
    skipped: Counter = field(default_factory=Counter)
    notes: list[str] = field(default_factory=list)
    question_ids: list = field(default_factory=list)  # with opts.keep_questions: ids of scored records
    question_stats: list = field(default_factory=list)  # ... and what each adds to the aggregation
    malformed_count: int = 0  # records whose prediction was malformed, scored as missing (--on-error skip)
    _matrix: object = field(default=None, repr=False)

    def readable(self, record: dict) -> dict:
        """``record``, or under ``--on-error skip`` a copy without the predictions it cannot read
        (each named in a warning; the task then counts them missing). Without skip: an error."""
        bad = {key: problem for key, problem in ((k, malformed_prediction(record, k)) for k in self.reads) if problem}
        if not bad:
            return record
        message = f"record {record['id']}: " + "; ".join(bad.values())
        if self.opts.on_error != "skip":
            raise InputError(message)
        log.warning("%s; scored as a missing prediction (--on-error skip)", message)
        self.malformed_count += 1
        return {k: v for k, v in record.items() if k not in bad}

    def score_batch(self, records: list[dict]) -> list[dict]:
        rows = []
        records = [self.readable(r) for r in records]
        for record in records:
            reason = self.skip_reason(record)
            if reason:
                self.skipped[reason] += 1
                rows.append({"id": record["id"], "skipped": reason})
            else:
                rows.append(None)
        todo = [r for r, row in zip(records, rows) if row is None]
        scored = iter(self.score_scorable(todo) if todo else [])
        return [row if row is not None else next(scored) for row in rows]

    def skip_reason(self, record: dict) -> str | None:
        return None

    def score_scorable(self, records: list[dict]) -> list[dict]:
        raise NotImplementedError

    def metrics(self) -> dict:
        raise NotImplementedError

    def summary(self) -> dict:
        out = {"task": self.opts.task, "n": self.n, "missing": self.missing}
        if self.variant_keys:
            out["variant"] = {key: getattr(self.options, key) for key in self.variant_keys}
        if not self.n:
            self.notes.append("no records to score: every metric is null")
        if self.skipped:
            out["skipped"] = sum(self.skipped.values())
            for reason, count in sorted(self.skipped.items()):
                self.notes.append(f"{count} record(s) skipped: {reason}")
        if self.missing:
            self.notes.append(f"{self.missing} record(s) lack the prediction and score 0")
        if self.malformed_count:
            self.notes.append(f"{self.malformed_count} of them had a malformed prediction (--on-error skip)")
        metrics = self.metrics()
        if not self.n:
            metrics = {k: _nulled(v) for k, v in metrics.items()}
        out.update(metrics)
        out["notes"] = self.notes
        return out

    def plot(self, path: str) -> None:
        raise InputError(f"--plot is available for --task detect and --task cq, not {self.opts.task}")

    def keep(self, record_id, stats=None) -> None:
        """Remember a scored question for :meth:`resample` (only with ``opts.keep_questions``)."""
        if self.opts.keep_questions:
            self.question_ids.append(record_id)
            self.question_stats.append(stats)
            self._matrix = None

    def kept_sums(self, idx, columns: tuple[str, ...]) -> dict[str, float]:
        """{column: sum over the questions ``idx``} of kept stats that are tuples in ``columns`` order."""
        import numpy as np

        if self._matrix is None:
            self._matrix = np.asarray(self.question_stats, dtype=float).reshape(len(self.question_stats),
                                                                                 len(columns))
        counts = np.bincount(idx, minlength=len(self.question_stats)).astype(float)
        return dict(zip(columns, (float(v) for v in counts @ self._matrix)))

    def resample(self, idx) -> dict:
        raise InputError(f"--task {self.opts.task} cannot recompute its metrics on resampled questions, "
                         f"so it has no --ci or --paired (its Task implements no resample)")


def _nulled(value):
    """A metric of an empty input: numbers become null (counts stay), groups recursively."""
    if isinstance(value, dict):
        return {k: v if k == "n" else _nulled(v) for k, v in value.items()}
    return None if isinstance(value, float) else value


def gold_of(record: dict) -> dict:
    """The record's ``gold`` object ({} when absent or not an object)."""
    gold = record.get("gold")
    return gold if isinstance(gold, dict) else {}


def pct(value: float | None) -> float | None:
    return None if value is None else 100.0 * value


def make_task(opts: ScoreOptions, **options) -> Task:
    """The registered task ``opts.task``, built with ``opts`` and its own ``options`` (by name, checked
    against its schema: an unknown name or a bad value is an InputError)."""
    from ..registry import SCORE_TASKS

    return SCORE_TASKS.build(opts.task, opts=opts, **options)


def score_records(
    records: Iterable[tuple[int, dict]],
    opts: ScoreOptions,
    on_row: Callable[[dict], None] | None = None,
    task: Task | None = None,
    **options,
) -> Task:
    """Score ``(line, record)`` pairs batch by batch with ``task`` (by default the registered task
    ``opts.task`` with its ``options``); ``on_row`` gets every per-record row.

    Returns the task, whose :meth:`Task.summary` is the result. Records are dropped as soon as
    their batch is scored.
    """
    task = task if task is not None else make_task(opts, **options)
    it: Iterator = iter(records)
    while batch := list(islice(it, opts.batch_size)):
        try:
            rows = task.score_batch([r for _, r in batch])
        except InputError as err:
            if err.where is None:
                err.where = f"lines {batch[0][0]}-{batch[-1][0]}" if len(batch) > 1 else f"line {batch[0][0]}"
            raise
        if on_row is not None:
            for row in rows:
                on_row(row)
    return task
