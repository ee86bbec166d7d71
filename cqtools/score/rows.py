"""Per-question rows and the metrics declared over them (what every `cq score` task shares).

A task turns each scored record into one row of numbers, one per name in its ``columns`` (the
aggregation's inputs), and declares its metrics as a list of :class:`Metric`, each a function of
:class:`Rows`. The summary, each ``--by`` group, each ``--ci`` resample and each side of
``--paired`` are the same declaration evaluated on other rows (ir_measures derives its
aggregations the same way from per-query rows):

* a population (:class:`Population`): every scored record of the input, of one ``--by`` group,
  or of a selection (the B side of a paired group); its sums run record by record, in input
  order, so they equal sums kept while the records streamed by;
* a resample (:class:`Resample`) of a population's questions, drawn with replacement by
  :mod:`cqtools.metrics.bootstrap`; its sums weigh each question by how often it was drawn.

Rows are numbers only (float64, kept by batch in numpy arrays): a record's text never stays.
A column value None is kept as NaN (read it with :meth:`Rows.column`; it poisons sums). A task
may name *set columns* whose row values are sets (distinct answers, say): they are pooled per
population as they arrive, never resampled, and read with :meth:`Rows.distinct`.
"""
from __future__ import annotations

from array import array
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from ..errors import InputError

if TYPE_CHECKING:  # numpy is imported where rows are computed: loading the tasks (cq --help) stays light
    import numpy as np

NAN = float("nan")
FLUSH_ROWS = 1024  # rows kept as Python lists before they become a numpy chunk


@dataclass(frozen=True)
class Metric:
    """One entry of a task's summary, computed from rows.

    ``name`` is dotted for a nested group of the summary (``"all.accuracy"``); ``resampled``
    False marks what gets no interval and no paired difference: counts, options echoed back,
    values over the whole set that a resample would misstate."""

    name: str
    compute: Callable[["Rows"], object]
    resampled: bool = True


def _scaled(value: float, percent: bool) -> float:
    return 100.0 * value if percent else value


def mean(name: str, column: str, percent: bool = True) -> Metric:
    """sum(column) / questions (a percentage unless ``percent`` is False); None without rows."""
    return Metric(name, lambda rows: _scaled(rows.sum(column) / rows.n, percent) if rows.n else None)


def ratio(name: str, numerator: str, denominator: str, percent: bool = True, empty=None) -> Metric:
    """sum(numerator) / sum(denominator), a micro average (a percentage unless ``percent`` is
    False); ``empty`` where the denominator sums to 0."""
    def compute(rows):
        den = rows.sum(denominator)
        return _scaled(rows.sum(numerator) / den, percent) if den else empty

    return Metric(name, compute)


def count(name: str, column: str) -> Metric:
    """sum(column) as an integer (no interval)."""
    return Metric(name, lambda rows: int(round(rows.sum(column))), resampled=False)


def value(name: str, constant) -> Metric:
    """A value that does not depend on the rows (an option echoed back, a null): no interval."""
    return Metric(name, lambda rows: constant, resampled=False)


def evaluate(metrics: list[Metric], rows: "Rows", resampled_only: bool = False) -> dict:
    """{name: value} of ``metrics`` on ``rows`` (``resampled_only``: those with an interval)."""
    return {m.name: m.compute(rows) for m in metrics if m.resampled or not resampled_only}


class Rows:
    """What a metric reads: ``n`` (records), ``sum(column)``, ``column(column)`` (one value per
    record or drawn question), ``distinct(column)`` (a set column's pooled size, populations
    only), ``population`` (the rows a resample is drawn from; a population's is itself),
    ``group`` (the ``--by`` group, None for the whole input) and ``memo`` (a value computed once
    per rows, e.g. several metrics of one confusion matrix)."""

    n: int
    group: str | None
    population: "Population"

    def sum(self, column: str) -> float:
        raise NotImplementedError

    def column(self, column: str) -> np.ndarray:
        raise NotImplementedError

    def distinct(self, column: str) -> int:
        raise InputError(f"the distinct values of {column!r} are pooled over whole groups, not resamples")

    def memo(self, key, compute: Callable[["Rows"], object]):
        cache = self.__dict__.setdefault("_memo", {})
        if key not in cache:
            cache[key] = compute(self)
        return cache[key]


class Population(Rows):
    """Scored records (``matrix``: one row each, in input order) and, for resampling, their
    questions: records whose task merges them into one question (``units``) are summed into
    one row of ``unit_matrix``; ``unit_ids`` name the questions (for pairing)."""

    def __init__(self, columns: tuple[str, ...], matrix: np.ndarray, missing: np.ndarray, group: str | None = None,
                 pools: dict | None = None, units: list | None = None, ids: list | None = None):
        self.columns, self.matrix, self.missing_flags, self.group = columns, matrix, missing, group
        self.missing = int(missing.sum())
        self.index = {name: j for j, name in enumerate(columns)}
        self.n = len(matrix)
        self.population = self
        self._pools, self._units, self._ids = pools, units, ids
        self._unit_matrix = self._unit_ids = self._sums = self.unit_sizes = None

    def column_index(self, column: str) -> int:
        try:
            return self.index[column]
        except KeyError:
            raise InputError(f"no column {column!r} in the task's rows ({', '.join(self.columns)})") from None

    def sum(self, column):
        """The running sum over the records, in input order (as a task adding row by row gets it)."""
        if self._sums is None:
            self._sums = running_sums(self.matrix)
        return float(self._sums[self.column_index(column)])

    def column(self, column):
        return self.matrix[:, self.column_index(column)]

    def distinct(self, column):
        if self._pools is None or column not in self._pools:
            raise InputError(f"set column {column!r} is pooled per input and --by group only")
        return len(self._pools[column])

    def _build_units(self) -> None:
        import numpy as np

        if self._ids is None:
            raise InputError("resampling needs the scored question ids: score with ScoreOptions(keep_questions=True)")
        if self._units is None or all(unit is None for unit in self._units):
            self._unit_ids, self._unit_matrix, self.unit_sizes = list(self._ids), self.matrix, None
            return
        at: dict = {}
        ids, of_record = [], []
        for record_id, unit in zip(self._ids, self._units):
            if unit is None:  # a record of its own
                of_record.append(len(ids))
                ids.append(record_id)
                continue
            if unit not in at:
                at[unit] = len(ids)
                ids.append(unit)
            of_record.append(at[unit])
        of_record = np.asarray(of_record, dtype=int)
        matrix = np.zeros((len(ids), len(self.columns)))
        np.add.at(matrix, of_record, self.matrix)  # a question's records added in input order
        self._unit_ids, self._unit_matrix = ids, matrix
        self.unit_sizes = np.bincount(of_record, minlength=len(ids))

    @property
    def unit_ids(self) -> list:
        if self._unit_ids is None:
            self._build_units()
        return self._unit_ids

    @property
    def unit_matrix(self) -> np.ndarray:
        if self._unit_matrix is None:
            self._build_units()
        return self._unit_matrix

    @property
    def record_ids(self) -> list:
        """The ids of the records, in order (with ``keep_ids``)."""
        if self._ids is None:
            raise InputError("pairing needs the scored record ids: score with ScoreOptions(keep_questions=True)")
        return self._ids

    def positions_of(self, record_ids: set) -> list[int]:
        """Positions of the records whose id is in ``record_ids``."""
        return [i for i, record_id in enumerate(self.record_ids) if record_id in record_ids]

    def select(self, positions, group: str | None = None, pools: dict | None = None) -> "Population":
        """The population of the records at ``positions`` (``pools``: its pooled set columns, if any)."""
        import numpy as np

        positions = np.asarray(positions, dtype=int)
        pick = positions.tolist()
        return Population(self.columns, self.matrix[positions], self.missing_flags[positions], group, pools,
                          None if self._units is None else [self._units[i] for i in pick],
                          None if self._ids is None else [self._ids[i] for i in pick])


def running_sums(matrix: np.ndarray, block: int = 4096) -> np.ndarray:
    """Each column's sum added one row after another, in order (numpy's ``sum`` adds pairwise, which
    rounds differently), ``block`` rows at a time so the partial sums never take another matrix."""
    import numpy as np

    sums = np.zeros(matrix.shape[1])
    for start in range(0, len(matrix), block):
        sums = np.add.accumulate(np.vstack([sums, matrix[start:start + block]]), axis=0)[-1]
    return sums


class Resample(Rows):
    """The questions ``idx`` (positions in ``population.unit_ids``, repeats counted) of a population."""

    def __init__(self, population: Population, idx: np.ndarray):
        import numpy as np

        self.population, self.group, self.idx = population, population.group, idx
        matrix = population.unit_matrix
        self._counts = np.bincount(idx, minlength=len(matrix)).astype(float)
        self._sums = None
        sizes = population.unit_sizes  # None: one record per question
        self.n = len(idx) if sizes is None else int(sizes[idx].sum())

    def sum(self, column):
        if self._sums is None:
            self._sums = self._counts @ self.population.unit_matrix
        return float(self._sums[self.population.column_index(column)])

    def column(self, column):
        return self.population.unit_matrix[self.idx, self.population.column_index(column)]


class RowTable:
    """Every scored record's row (numbers in ``columns``, kept by batch), whether it lacks the
    prediction, its ``--by`` group and, with ``keep_ids``, its id and question (for resampling and
    pairing); the ``set_columns`` pooled per group as rows arrive."""

    def __init__(self, columns: tuple[str, ...], set_columns: tuple[str, ...] = (), keep_ids: bool = False):
        self.columns, self.set_columns = tuple(columns), tuple(set_columns)
        self._chunks: list[np.ndarray] = []
        self._pending: list[list[float]] = []
        self._missing = bytearray()
        self._groups = array("i")
        self.group_names: list[str] = []
        self._group_at: dict[str, int] = {}
        self._ids: list | None = [] if keep_ids else None
        self._units: list | None = [] if keep_ids else None
        self._pools: dict = {None: {c: set() for c in self.set_columns}}
        self._populations: dict = {}

    def add(self, record_id, values: dict, missing: bool, group: str | None = None, unit=None) -> None:
        row = []
        for column in self.columns:
            if column not in values:
                raise InputError(f"record {record_id}: the task's row lacks its column {column!r}")
            number = values[column]
            row.append(NAN if number is None else float(number))
        self._pending.append(row)
        if len(self._pending) == FLUSH_ROWS:
            self._flush()
        self._missing.append(bool(missing))
        self._groups.append(self._group_index(group))
        if self._ids is not None:
            self._ids.append(record_id)
            self._units.append(unit)
        for column in self.set_columns:
            for key in (None, group) if group is not None else (None,):
                self._pools[key][column] |= set(values[column])
        self._populations.clear()

    def _group_index(self, group: str | None) -> int:
        if group is None:
            return -1
        if group not in self._group_at:
            self._group_at[group] = len(self.group_names)
            self.group_names.append(group)
            self._pools[group] = {c: set() for c in self.set_columns}
        return self._group_at[group]

    def _flush(self) -> None:
        """The pending rows (Python lists) into one numpy chunk: 8 bytes a number."""
        import numpy as np

        if self._pending:
            self._chunks.append(np.asarray(self._pending, dtype=float).reshape(len(self._pending), len(self.columns)))
            self._pending = []

    def matrix(self) -> np.ndarray:
        import numpy as np

        self._flush()
        if len(self._chunks) != 1:
            self._chunks = [np.concatenate(self._chunks) if self._chunks else np.zeros((0, len(self.columns)))]
        return self._chunks[0]

    def population(self, group: str | None = None) -> Population:
        """Every scored record of the input (``group`` None) or of one ``--by`` group."""
        import numpy as np

        if group not in self._populations:
            if group is None:
                missing = np.frombuffer(bytes(self._missing), dtype=np.uint8).astype(bool)
                self._populations[None] = Population(self.columns, self.matrix(), missing, None, self._pools[None],
                                                     self._units, self._ids)
            else:
                index = self._group_index(group)
                members = np.flatnonzero(np.frombuffer(self._groups.tobytes(), dtype=np.intc) == index)
                self._populations[group] = self.population().select(members, group, self._pools[group])
        return self._populations[group]
