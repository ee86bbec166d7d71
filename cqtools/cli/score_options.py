"""`cq score`'s options in bundles: each bundle declares its click options once and hands the command
one frozen value (what the options set for the metrics, the bootstrap, the output) instead of a
parameter per flag."""
from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

import click

from ..score.settings import BootstrapOptions
from .declared import declared_flags

FORMATS = ["json", "table", "md", "csv"]


def bundle(name: str, cls, *options):
    """A decorator: the click ``options`` (top to bottom, as stacked decorators would be), whose values
    reach the command as one ``cls`` (a dataclass with a field per option) in keyword ``name``."""
    fields = [f.name for f in dataclasses.fields(cls)]

    def decorate(func):
        @functools.wraps(func)
        def command(*args, **kwargs):
            kwargs[name] = cls(**{key: kwargs.pop(key) for key in fields})
            return func(*args, **kwargs)

        for option in reversed(options):
            command = option(command)
        return command

    return decorate


@dataclass(frozen=True)
class OutputFlags:
    """Where and how the summary goes (--format, --per-record, --plot, --by)."""
    fmt: str
    per_record: str | None
    plot: str | None
    by: str | None


output_options = bundle(
    "output", OutputFlags,
    click.option("--format", "fmt", type=click.Choice(FORMATS), default="json", show_default=True,
                 help="Summary as one JSON object, an aligned table for people, a Markdown table or CSV."),
    click.option("--per-record", type=click.Path(dir_okay=False, writable=True), metavar="FILE",
                 help="Write one JSONL line of scores per record ({id, ...}) to FILE."),
    click.option("--plot", type=click.Path(dir_okay=False, writable=True), metavar="FILE.png",
                 help="detect: ROC and precision-recall curves; cq: options per CQ, predicted vs gold; "
                      "clam --curves: accuracy against the share clarified, adjusted accuracy against lambda."),
    click.option("--by", metavar="FIELD",
                 help="Also score each group of records with the same FIELD, a dotted key path into the record "
                      "(gold.type, dataset): \"groups\" has every metric per group, with --ci its interval, with "
                      "--paired its difference. A record without FIELD (or null there) is in the group \"(none)\", "
                      "counted, never dropped; a string that would read as another value (\"1\" beside 1, "
                      "\"true\", \"(none)\") is shown quoted."),
)


@dataclass(frozen=True)
class BootstrapFlags:
    """--ci, --paired and how their intervals are drawn."""
    ci: bool
    paired: str | None
    intersect: bool
    n_boot: int
    ci_method: str

    def options(self, seed: int):
        return BootstrapOptions(n_boot=self.n_boot, seed=seed, method=self.ci_method)


bootstrap_options = bundle(
    "boot", BootstrapFlags,
    click.option("--ci", is_flag=True,
                 help="Add a bootstrap 95% interval to every metric: questions resampled, the task's own "
                      "aggregation recomputed (docs/metrics.md)."),
    click.option("--paired", type=click.Path(exists=True, dir_okay=False), metavar="OTHER.jsonl",
                 help="Compare with OTHER.jsonl (B) on the same question ids: A (stdin), B and B-A with its "
                      "paired-bootstrap interval, instead of the summary."),
    click.option("--intersect", is_flag=True, help="--paired: compare on the ids both score instead of refusing."),
    declared_flags(BootstrapOptions, "n_boot", "method", params={"method": "ci_method"}),
)


def open_per_record(path: str):
    """``--per-record FILE``, written all or nothing (a temp file renamed when scoring ends well)."""
    from ..errors import CQError
    from ..jsonl import AtomicFile

    try:
        return AtomicFile(path)
    except CQError as err:
        raise CQError(f"--per-record {path}: {err}; pass a writable path") from None
