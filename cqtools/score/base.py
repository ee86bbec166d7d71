"""What every `cq score --task` shares: :class:`ScoreOptions`, the :class:`Task` base class,
:func:`score_records` (the batch loop) and small record helpers.

A task is built by a factory registered in :data:`cqtools.registry.SCORE_TASKS` with its options
dataclass (its flags, ``-O``, --help, validation and presets derive from it, as for a stage's
method); the factory receives the options, the run configuration and the shared ``opts``, and
returns a fresh :class:`Task`::

    from dataclasses import dataclass
    from cqtools.plugins import hookimpl
    from cqtools.registry import option
    from cqtools.score.base import Scored, Task
    from cqtools.score.rows import mean, value

    @dataclass(frozen=True)
    class LengthOptions:  # its docstring is the task's help
        words: int = option(8, "a long answer has more words than this", min=1)

    @hookimpl
    def register_score_tasks(register):
        register("length", lambda options, config, opts: LengthTask(opts, options), options=LengthOptions)

What a task implements (subclass :class:`Task`, a dataclass; add your own fields with defaults).
A task only turns records into rows and declares metrics over rows; every count (``n``,
``missing``, ``skipped``), the summary, ``--ci`` intervals, ``--paired`` differences and ``--by``
groups derive from them here and in :mod:`.ci`, the same for every task::

    @dataclass
    class LengthTask(Task):
        columns = ("long", "words")  # the numbers of one question's row

        def score_record(self, record):
            words = len(str(record.get("long_answer") or "").split())
            return Scored({"id": record["id"], "long": int(words > self.options.words), "words": words},
                          missing=record.get("long_answer") is None)

        def aggregation(self, rows):
            return [mean("long", "long"), mean("avg_words", "words", percent=False),
                    value("words", self.options.words)]

gives ``{"task": "length", "n", "missing", "long", "avg_words", "words", "notes"}``, and with
``--ci``, ``--paired`` and ``--by`` intervals, differences and groups of ``long`` and
``avg_words``. A new metric is one more entry in ``aggregation`` (and, if it reads a new number,
one more column).

``columns``  (class attribute, or a property when the task's options decide them)
    The names of the numbers in one question's row, what the metrics are computed from.
``score_record(record) -> Scored`` or ``score_scorable(records) -> list[Scored]``  (one of them)
    Score one non-skipped record (or a batch of them, in order: a model reads a batch at once):
    ``Scored(row, values=None, missing=False)``. ``row`` is what ``--per-record`` writes
    (``{"id": record["id"], ...}``); ``values`` is ``{column: number}`` (None: read from ``row``;
    a None number is kept as NaN); ``missing`` says the record lacks the prediction (it scores 0
    and is counted, never dropped). Keep no sums yourself: the rows are kept (numbers only,
    never the records). Raise :class:`cqtools.errors.InputError` for a malformed record (the loop
    adds the line numbers).
``aggregation(rows) -> list[Metric]``  (required)
    The summary's entries, in order (:mod:`cqtools.score.rows`): ``mean(name, column)``,
    ``ratio(name, numerator, denominator)`` (a micro average), ``count(name, column)``,
    ``value(name, constant)``, or ``Metric(name, function of rows, resampled=...)`` for
    anything else (AUROC from ``rows.column``, corpus BLEU from summed n-gram counts). Scores are
    percentages, counts raw; a dotted name nests (``"all.accuracy"``). ``rows`` is what the
    summary is of (the input, or one ``--by`` group), so the declaration may depend on it;
    ``resampled=False`` entries (counts, options echoed back, set-level values) get no interval
    and no paired difference. With no records scored every float of the summary is null
    (counts named ``n`` stay).
``notes_for(rows, values) -> list[str]``  (optional)
    Notes on the metrics ``values`` of ``rows`` (``rows.group`` is None for the whole input).
``skip_reason(record) -> str | None``  (optional)
    Why a record cannot be scored at all (its *gold* lacks what the task compares against),
    or None. Skipped records get the row ``{"id", "skipped": reason}``, are counted per reason
    in ``skipped`` and named in the notes; they never reach ``score_scorable``.
``unit_of(record)``  (optional)
    The question a record belongs to when several records are one question (`cq oracle
    --expand`): their rows are summed and resampled together. None (the default): its own.
``set_columns``  (optional, class attribute or property)
    Columns whose values are sets (distinct answers): pooled per input and ``--by`` group,
    read with ``rows.distinct(column)``, never resampled.
``plot(path)``  (optional)
    Write a figure for ``--plot`` (from ``self.rows()``); the default says the task has none.
``reads``         (optional, class attribute) the predictions it reads (keys of :data:`PREDICTIONS`):
                  each is checked for its shape first (an error; under ``--on-error skip`` a warning,
                  and the record counts as missing that prediction)
``variant_keys``  (optional, class attribute)
    Names of the task's options that choose between scorer variants; the summary reports them
    under ``"variant"``.

The summary is ``{"task", "n", "missing", ["variant"], "metric", ["skipped"], **metrics, ["by", "groups"],
"notes"}`` (``metric``: what made the numbers, :mod:`cqtools.score.identity`). A task reads its own options from ``self.options`` and what all tasks share from
``self.opts``; it loads models only on first use, never at import time.
"""
from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field
from itertools import islice
from typing import Callable, ClassVar, Iterable, Iterator

from ..errors import InputError
from .groups import NO_VALUE, check_by, group_of  # noqa: F401 (--by's groups; check_by for the CLI)
from ..records import answer_texts  # noqa: F401 (the tasks' accessor: None when a record has no answers)
from ..registry import option
from .identity import identity
from .rows import Metric, Population, Resample, Rows, RowTable, evaluate

DEFAULT_BERTSCORE_MODEL = "roberta-large"
log = logging.getLogger("cqtools")


@dataclass
class ScoreOptions:
    """What every task shares. A task's own settings (``--lambda``, ``--matcher``, ...) are its options
    dataclass, declared in its module and registered with it; the task reads them as ``self.options``."""

    task: str
    device: str = "auto"
    batch_size: int = 64
    keep_questions: bool = False  # keep the scored question ids, to resample and pair them (--ci, --paired)
    on_error: str = "fail"  # skip: a record whose prediction is malformed scores as missing, with a warning
    by: str | None = None  # --by: a dotted key path into the record; the summary has a group per value


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
class Scored:
    """One scored record: ``row`` is what ``--per-record`` writes, ``values`` its numbers per
    column (None: read from ``row``), ``missing`` whether it lacks the prediction."""

    row: dict
    values: dict | None = None
    missing: bool = False


@dataclass
class Tally:
    """What a --by group counts besides its rows: skipped records per reason, malformed predictions."""

    skipped: Counter = field(default_factory=Counter)
    malformed: int = 0


@dataclass
class Task:
    """Base of every task: rows kept, the batch hook, the summary and resampling derived from the
    task's columns and aggregation (see the module docstring for what a subclass implements)."""

    variant_keys: ClassVar[tuple[str, ...]] = ()
    reads: ClassVar[tuple[str, ...]] = ()  # the predictions (PREDICTIONS keys) it reads, checked by readable()
    columns: ClassVar[tuple[str, ...]] = ()  # the numbers of one question's row
    set_columns: ClassVar[tuple[str, ...]] = ()  # set-valued columns, pooled per group (rows.distinct)

    opts: ScoreOptions
    options: object = None  # the task's own options dataclass (None: it declares none)
    config: object = None  # the run configuration its models load under (None: the process's)
    n: int = 0
    missing: int = 0
    skipped: Counter = field(default_factory=Counter)
    notes: list[str] = field(default_factory=list)
    malformed_count: int = 0  # records whose prediction was malformed, scored as missing (--on-error skip)
    group_tallies: dict = field(default_factory=dict)  # --by: group -> its Tally (what its rows do not count)
    _table: RowTable | None = field(default=None, repr=False)

    @property
    def table(self) -> RowTable:
        if self._table is None:
            self._table = RowTable(self.columns, self.set_columns, keep_ids=self.opts.keep_questions)
        return self._table

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
        """The per-record rows of ``records``; the scored ones are kept in :attr:`table`."""
        groups = [group_of(r, self.opts.by) if self.opts.by else None for r in records]
        rows, todo = [], []
        for record, group in zip(records, groups):
            tally = self.group_tallies.setdefault(group, Tally()) if group is not None else None
            clean = self.readable(record)
            if tally is not None and clean is not record:
                tally.malformed += 1
            reason = self.skip_reason(clean)
            if reason:
                self.skipped[reason] += 1
                if tally is not None:
                    tally.skipped[reason] += 1
                rows.append({"id": clean["id"], "skipped": reason})
            else:
                rows.append(None)
                todo.append((clean, group))
        scored = self.score_scorable([r for r, _ in todo]) if todo else []
        if len(scored) != len(todo) or not all(isinstance(item, Scored) for item in scored):
            raise TypeError(f"score task {self.opts.task}: score_scorable must return one Scored per record "
                            f"(cqtools.score.base documents the protocol)")
        for (record, group), item in zip(todo, scored):
            self.n += 1
            self.missing += bool(item.missing)
            unit = self.unit_of(record) if self.opts.keep_questions else None
            self.table.add(record["id"], item.row if item.values is None else item.values, item.missing, group, unit)
        scored_rows = iter(item.row for item in scored)
        return [row if row is not None else next(scored_rows) for row in rows]

    def skip_reason(self, record: dict) -> str | None:
        return None

    def score_scorable(self, records: list[dict]) -> list[Scored]:
        return [self.score_record(record) for record in records]

    def score_record(self, record: dict) -> Scored:
        raise NotImplementedError(f"score task {self.opts.task}: implement score_record or score_scorable")

    def unit_of(self, record: dict):
        return None

    def aggregation(self, rows: Rows) -> list[Metric]:
        raise NotImplementedError(f"score task {self.opts.task}: implement aggregation")

    def notes_for(self, rows: Rows, values: dict) -> list[str]:
        return []

    def rows(self, group: str | None = None) -> Population:
        """The scored rows of the input, or of one ``--by`` group."""
        return self.table.population(group)

    def declared(self, rows: Rows) -> list[Metric]:
        """The task's metrics for the population ``rows`` (declared once per population)."""
        return rows.population.memo("declared", self.aggregation)

    def statistic(self, rows: Population) -> Callable:
        """idx -> {metric: value} of the resampled metrics on the questions ``idx`` of ``rows``."""
        metrics = self.declared(rows)
        return lambda idx: evaluate(metrics, Resample(rows, idx), resampled_only=True)

    def resample(self, idx) -> dict:
        """The resampled metrics on the input's questions at positions ``idx`` (repeats allowed)."""
        return self.statistic(self.rows())(idx)

    @property
    def question_ids(self) -> list:
        """The scored questions, in order (with ``opts.keep_questions``; else empty)."""
        return self.rows().unit_ids if self.opts.keep_questions else []

    def summarise(self, rows: Population, tally: Tally, notes: list[str]) -> dict:
        """``{["skipped"], **metrics}`` of ``rows``, its notes appended to ``notes``."""
        from ..metrics.bootstrap import unflatten

        out = {}
        if not rows.n:
            notes.append("no records to score: every metric is null")
        if tally.skipped:
            out["skipped"] = sum(tally.skipped.values())
            for reason, count in sorted(tally.skipped.items()):
                notes.append(f"{count} record(s) skipped: {reason}")
        if rows.missing:
            notes.append(f"{rows.missing} record(s) lack the prediction and score 0")
        if tally.malformed:
            notes.append(f"{tally.malformed} of them had a malformed prediction (--on-error skip)")
        values = evaluate(self.declared(rows), rows)
        notes.extend(self.notes_for(rows, values))
        if not rows.n:
            values = {k: _nulled(v) for k, v in values.items()}
        out.update(unflatten(values))
        return out

    def summary(self) -> dict:
        out = {"task": self.opts.task, "n": self.n, "missing": self.missing}
        if self.variant_keys:
            out["variant"] = {key: getattr(self.options, key) for key in self.variant_keys}
        out["metric"] = identity(self)  # after scoring: what it used (models loaded or not) is known
        out.update(self.summarise(self.rows(), Tally(self.skipped, self.malformed_count), self.notes))
        if self.opts.by:
            out["by"] = self.opts.by
            out["groups"] = {group: self.group_summary(group) for group in sorted(self.group_tallies)}
        out["notes"] = self.notes
        return out

    def group_summary(self, group: str) -> dict:
        rows, notes = self.rows(group), []
        return {"n": rows.n, "missing": rows.missing, **self.summarise(rows, self.group_tallies[group], notes),
                "notes": notes}

    def plot(self, path: str) -> None:
        raise InputError(f"--plot is available for --task detect, --task cq and --task clam --curves, "
                         f"not {self.opts.task}")


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
                lines = [line for line, record in batch
                         if err.record_id is not None and record.get("id") == err.record_id]
                err.where = (f"line {lines[0]}" if len(lines) == 1 else f"line {batch[0][0]}" if len(batch) == 1
                             else f"lines {batch[0][0]}-{batch[-1][0]}")
            raise
        if on_row is not None:
            for row in rows:
                on_row(row)
    return task
