"""`cq score --task T`: score predictions against the gold written by `cq convert`."""
from __future__ import annotations

import sys

import click
import orjson

from ..errors import InputError
from ..jsonl import dumps, read_records
from ..registry import SCORE_TASKS
from .method_flags import method_options, method_values, preset_option
from .options import batch_option, compose, device_options, run_config, seed_option, stream_options
from ..score.settings import MIN_PAIRED_N
from .score_options import BootstrapFlags, OutputFlags, bootstrap_options, open_per_record, output_options

# Every task's options as flags (generated from the tasks' options dataclasses, a plugin's too), and -O.
task_options, TASK_FLAGS = method_options(SCORE_TASKS)


@click.command(name="score")
@click.argument("runs", nargs=-1, type=click.Path(exists=True, dir_okay=False), metavar="[RUN.jsonl]...")
@preset_option("score")
@click.option("--task", type=click.Choice(SCORE_TASKS.names()),
              help=f"Which metrics (see docs/metrics.md; required unless a --preset names them). {SCORE_TASKS.help()}.")
@output_options
@task_options
@bootstrap_options
@click.option("--cell", metavar="NAME", help="--against BUNDLE: the bundle's cell to compare with (default: its "
                                            "one cell of --task).")
@click.option("--tolerance", type=click.FloatRange(min=0), default=0.0, show_default=True,
              help="--against BUNDLE: how far (in the metric's units, points for a percentage) a summary metric may "
                   "move before the comparison fails.")
@compose(batch_option, device_options, stream_options, seed_option)
def cli(runs, task, output: OutputFlags, boot: BootstrapFlags, cell, tolerance, batch_size, device, dtype, on_error,
        quiet, seed, **flags):
    """Score predicted records against their gold; print a summary on stdout.

    Reads records (predictions plus the "gold" key of `cq convert`) from RUN.jsonl (gzipped or
    not), or stdin when no file is given. Several RUNs: one table with a row per run and, for each
    run after the first, its paired difference from the first (B - A on the same question ids,
    paired-bootstrap interval; --intersect to compare on the ids both score) and the spread of each
    metric across the runs (max - min, paired bootstrap interval: e.g. one dialogue answered by
    several `cq oracle` prompts or models, docs/metrics.md). A record
    without the prediction a task needs scores 0 and is counted in "missing"; records whose
    gold lacks what the task needs are skipped and counted in "notes". Scores are percentages.
    Defaults reproduce the papers' released scorers; "variant" in the summary names the
    options that select cq's own alternatives (--cq-parser, --matcher, --unique-answers,
    --str-em, --ac-average); "metric" names everything that made the numbers (options, recipe,
    models used), and --paired refuses two sides whose "metric" differs (docs/metrics.md).

    \b
    Example:
      cq convert ambignq dev_light.json --join cambignq:cq_dev.json \\
        | cq retrieve --index idx | cq detect | cq score --task detect --sweep --plot det.png
      ... | cq gen-cq | cq score --task cq --bertscore-model sentence-transformers/all-MiniLM-L6-v2
      cq score --task cbqa --ci < a.jsonl; cq score --task cbqa --paired b.jsonl < a.jsonl
      cq score --task cbqa --format md a.jsonl b.jsonl c.jsonl
    """
    if task is None:
        raise click.UsageError("Missing option '--task' (or a --preset that names it).")
    import logging

    if quiet:
        logging.getLogger("cqtools").setLevel(logging.WARNING)
    from ..score import ScoreOptions
    from ..score.groups import check_by

    opts = ScoreOptions(task, device=device, batch_size=batch_size, on_error=on_error, by=check_by(output.by),
                        keep_questions=boot.ci or boot.paired is not None or len(runs) > 1)
    bundle = flags.pop("against", None) if task != "judge" else None  # --against: the judge's people, else a bundle
    task_opts = method_values(SCORE_TASKS, task, flags, TASK_FLAGS)  # a flag --task does not take: an error
    SCORE_TASKS.get(task).values(task_opts)  # checked before any record is read
    if bundle is not None:
        _against(runs, opts, task, task_opts, on_error, bundle, cell, tolerance, output.fmt)
        return
    if len(runs) > 1:
        for flag, given in (("--paired", boot.paired), ("--per-record", output.per_record), ("--plot", output.plot)):
            if given:
                raise click.UsageError(f"{flag} takes one run; several RUN files are compared with the first already")
        click.echo(_several_runs(runs, opts, task, task_opts, on_error, boot, seed, output.fmt))
        return
    result, summary = _score_one(runs, opts, task, task_opts, on_error, output)
    if boot.paired is not None or boot.ci:
        summary = _with_bootstrap(summary, result, opts, task, task_opts, on_error, boot, seed, runs)
    if output.fmt == "json":
        sys.stdout.buffer.write(orjson.dumps(_rounded(summary)) + b"\n")
    elif boot.paired is not None:
        click.echo(format_paired_table(summary) if output.fmt == "table" else _grid(*_paired_rows(summary),
                                                                                     fmt=output.fmt))
    elif output.fmt == "table":
        click.echo(format_table(summary) + curve_tables(summary, "table"))
    else:
        click.echo(_grid(*_summary_rows(summary), fmt=output.fmt) + curve_tables(summary, output.fmt))


def _against(runs, opts, task, task_opts, on_error, bundle, cell, tolerance, fmt) -> None:
    """--against BUNDLE: the run compared with the reference bundle's cell; exit 1 when it moved."""
    from ..score import reference

    if len(runs) > 1:
        raise click.UsageError("--against BUNDLE compares one run with the reference")
    report = reference.check(read_records(_input(runs), ("question",), on_error), opts, task, task_opts, run_config(),
                             bundle, cell, tolerance)
    click.echo(orjson.dumps(_rounded(report)).decode() if fmt == "json" else "\n".join(reference.lines(report)))
    if not report["passed"]:
        raise SystemExit(1)


def _score_one(runs, opts, task, task_opts, on_error, output: OutputFlags):
    """(the scored result, its summary) of the one run (or stdin), with --per-record and --plot written."""
    from ..jsonl import Skipped
    from ..score import score_records

    skipped = Skipped()
    records = read_records(_input(runs), ("question",), on_error, skipped)
    out = open_per_record(output.per_record) if output.per_record else None
    try:
        scorer = SCORE_TASKS.build(task, run_config(), opts=opts, **task_opts)  # the task's factory (cqtools.score or a plugin)
        result = score_records(records, opts, on_row=(lambda row: out.write(dumps(row))) if out else None,
                               task=scorer)
        if out:
            out.commit()
    finally:
        if out:
            out.abort()  # after commit: nothing; after a failure or a kill: no half file is left
    summary = result.summary()
    if summary.get("n") == 0:  # every record skipped: an error; no record at all: a warning beside the summary
        why = "; ".join(note for note in summary.get("notes", []) if "record(s) skipped" in note)
        if summary.get("skipped"):
            raise InputError(f"--task {task}: no record was scored ({why}): is this {task}'s data (e.g. cq convert "
                             f"of its data set), or another --task?")
        click.echo(f"cq score: warning: --task {task}: the input has no record; every metric is null", err=True)
    if skipped.count:
        summary["notes"].append(f"{skipped.count} malformed line(s) skipped (--on-error skip)")
    if output.plot:
        result.plot(output.plot)
    return result, summary


def _with_bootstrap(summary, result, opts, task, task_opts, on_error, boot: BootstrapFlags, seed, runs) -> dict:
    """--paired: the paired report against the other run (instead of the summary); --ci: the summary
    with an interval beside every metric."""
    from ..score import score_records
    from ..score.ci import paired as paired_report
    from ..score.ci import with_intervals

    options = boot.options(seed)
    if boot.paired is None:
        return with_intervals(summary, result, options)
    with open(boot.paired, "rb") as fh:
        other = score_records(read_records(fh, ("question",), on_error), opts,
                              task=SCORE_TASKS.build(task, run_config(), opts=opts, **task_opts))
    other.summary()  # finishes the task (its notes) as for A
    summary = paired_report(result, other, options, runs[0] if runs else "stdin", boot.paired, boot.intersect)
    if boot.ci:
        summary["notes"].append("--ci: the paired report already gives intervals (of B - A)")
    return summary


def _input(runs):
    """The binary stream to score: the one RUN file, or standard input."""
    if not runs:
        from .stream import click_stdin

        return click_stdin()
    from ..jsonl import open_input

    return open_input(runs[0])


def _several_runs(runs, opts, task, task_opts, on_error, boot: BootstrapFlags, seed, fmt) -> str:
    """Every run scored; the first is the baseline of each paired difference."""
    from ..jsonl import open_input
    from ..score import score_records
    from ..score.ci import paired as paired_report
    from ..score.spread import spread as spread_of

    results, summaries = [], []
    for path in runs:
        with open_input(path) as stream:
            result = score_records(read_records(stream, ("question",), on_error), opts,
                                   task=SCORE_TASKS.build(task, run_config(), opts=opts, **task_opts))
        results.append(result)
        summaries.append(result.summary())
    options = boot.options(seed)
    diffs = [paired_report(results[0], other, options, runs[0], path, boot.intersect)
             for path, other in zip(runs[1:], results[1:])]
    spread = spread_of(results, list(runs), options, boot.intersect)
    if fmt == "json":
        report = {"runs": [{"run": path, **summary} for path, summary in zip(runs, summaries)],
                  "differences": diffs, "spread": spread}
        return orjson.dumps(_rounded(report)).decode()
    metrics = list(dict.fromkeys(name for s in summaries for name in _flat(s)))
    header = ["run", *metrics]
    rows = [[_run_label(path, s), *(_number(_flat(s).get(m)) for m in metrics)] for path, s in zip(runs, summaries)]
    for path, diff in zip(runs[1:], diffs):
        cells = []
        for m in metrics:
            d = _paired_metrics(diff).get(m)
            cells.append("" if d is None else f"{d['diff']:+.2f} {_interval(d['low'], d['high'])}"
                         + ("*" if d["excludes_zero"] else " (cannot tell)" if d.get("cannot_tell") else ""))
        rows.append([f"{path} - {runs[0]}", *cells])
    spread_notes = [f"spread: the range of each metric across the {len(runs)} runs on the {spread['n']} questions "
                    f"all score, its paired bootstrap interval", *spread["notes"]]
    if len(runs) > 2:  # two runs: the spread is the difference's size, already in the table
        ranges = spread["metrics"]
        rows.append(["spread (max - min)", *("" if m not in ranges else f"{ranges[m]['range']:.2f} "
                                            f"{_interval(ranges[m]['low'], ranges[m]['high'])}" for m in metrics)])
    notes = [f"{len(runs) - 1} paired difference(s) against {runs[0]}: B - A on the same question ids, "
             f"{options.level:.0%} {options.method} paired bootstrap, {options.n_boot} resamples, seed {options.seed}; "
             f"* = the interval excludes 0; (cannot tell) = fewer than {MIN_PAIRED_N} shared questions or a "
             f"zero-width interval", *(spread_notes if len(runs) > 2 else []), f"every run scored by {summaries[0]['metric']['name']} version "
             f"{summaries[0]['metric']['version']} with the same variant (--format json shows it)"]
    notes += [f"{path}: {note}" for path, s in zip(runs, summaries) for note in _notes(s)]
    return _grid(header, rows, notes, fmt=fmt)


def _run_label(path: str, summary: dict) -> str:
    """A run's row name: its path, and the persona of its simulated user where `cq oracle --persona` set one."""
    oracle = summary.get("oracle")
    personas = sorted({o["persona"] for o in (oracle if isinstance(oracle, list) else [oracle])
                       if isinstance(o, dict) and o.get("persona")})
    return f"{path} (persona {', '.join(personas)})" if personas else path


def curve_tables(summary: dict, fmt: str) -> str:
    """``--task clam --curves`` in a table per curve after the summary (the summary's own table leaves lists out;
    a --by group's curves are in the JSON only); thresholds keep their digits (CLAM's -0.3 is not -0.2999)."""
    curves = summary.get("curves") or {}
    out = []
    for name, points in curves.items():
        if points:
            header = list(points[0])
            rows = [[_number(p[key]) if key != "threshold" else "(below all)" if p[key] is None else f"{p[key]:.6g}"
                     for key in header] for p in points]
            out.append(_grid(header, rows, fmt=fmt))
    return "".join(("\n\n" if fmt != "csv" else "\n") + table for table in out)


def _flat(summary: dict) -> dict:
    """A summary's metrics as {"group.metric": value} (notes, intervals, metric and oracle identities left out)."""
    from ..metrics.bootstrap import flatten

    flat = flatten({k: v for k, v in summary.items() if k not in ("notes", "ci", "metric", "oracle")})
    return {k: v for k, v in flat.items() if v is None or isinstance(v, (int, float)) and not isinstance(v, bool)}


def _number(value) -> str:
    return "-" if value is None else f"{value:.2f}" if isinstance(value, float) else str(value)


def _intervals(summary: dict) -> dict:
    """Every interval of a summary by its metric's flat name (a --by group's as groups.GROUP.metric)."""
    from ..metrics.bootstrap import flatten

    out = flatten(summary["ci"]["intervals"]) if "ci" in summary else {}
    for group, body in summary.get("groups", {}).items():
        if "ci" in body:
            out.update(flatten(body["ci"]["intervals"], f"groups.{group}."))
    return out


def _notes(summary: dict) -> list[str]:
    """A summary's notes, then each --by group's ("FIELD=GROUP: note")."""
    return summary.get("notes", []) + [f"{summary['by']}={group}: {note}" for group, body in
                                       summary.get("groups", {}).items() for note in body.get("notes", [])]


def _paired_metrics(report: dict) -> dict:
    """A paired report's metrics by flat name, a --by group's as groups.GROUP.metric."""
    return {**report["metrics"], **{f"groups.{group}.{name}": m for group, body in report.get("groups", {}).items()
                                    for name, m in body["metrics"].items()}}


def _paired_notes(report: dict) -> list[str]:
    """A paired report's notes, then each --by group's size and notes."""
    return report.get("notes", []) + [note for group, body in report.get("groups", {}).items() for note in
                                      [f"{report['by']}={group}: {body['n']} paired questions"]
                                      + [f"{report['by']}={group}: {n}" for n in body["notes"]]]


def _summary_rows(summary: dict):
    intervals = _intervals(summary)
    header = ["metric", "value"] + (["low", "high"] if intervals else [])
    rows = []
    for name, value in _flat(summary).items():
        row = [name, _number(value)]
        if intervals:
            low, high = intervals.get(name, (None, None))
            row += [_number(low), _number(high)]
        rows.append(row)
    return header, rows, _notes(summary)


def _paired_rows(report: dict):
    header = ["metric", "A", "B", "B-A", "low", "high", "excludes 0"]
    rows = [[name, f"{m['a']:.2f}", f"{m['b']:.2f}", f"{m['diff']:+.2f}", _number(m["low"]), _number(m["high"]),
             _excludes(m)] for name, m in _paired_metrics(report).items()]
    return header, rows, [f"A = {report['a']}, B = {report['b']}, {report['n']} paired questions"] + \
        _paired_notes(report)


def _excludes(m: dict) -> str:
    """The "excludes 0" cell: yes, no, or the reason the difference cannot be read (too few questions)."""
    return "yes" if m["excludes_zero"] else m.get("cannot_tell", "no")


def _grid(header: list, rows: list, notes=(), *, fmt: str) -> str:
    """One table as aligned text ("table"), Markdown ("md") or CSV ("csv"; notes left out)."""
    if fmt == "csv":
        import csv
        import io

        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)
        return buf.getvalue().rstrip("\n")
    if fmt == "md":
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |" for row in rows]
        lines += [""] + [f"- {note}" for note in notes] if notes else []
        return "\n".join(lines)
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(f"{str(c):<{widths[0]}}" if i == 0 else f"{str(c):>{widths[i]}}" for i, c in enumerate(row))
             .rstrip() for row in [header, *rows]]
    return "\n".join(lines + [f"note: {note}" for note in notes])


def _rounded(value):
    if isinstance(value, float):
        return round(value, 4)
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


def format_table(summary: dict) -> str:
    """Aligned "metric  value" lines; nested groups (clam) become group.metric; with --ci the
    interval follows the value."""
    rows = []

    def add(prefix, data):
        for key, value in data.items():
            if key in ("notes", "ci", "curves"):  # the curves: tables of their own (curve_tables)
                continue
            name = f"{prefix}{key}"
            if isinstance(value, dict):
                add(f"{name}.", value)
            elif isinstance(value, float):
                rows.append((name, f"{value:.2f}"))
            else:
                rows.append((name, "-" if value is None else str(value)))

    add("", summary)
    width = max(len(name) for name, _ in rows)
    if "ci" not in summary:
        lines = [f"{name:<{width}}  {value:>10}" for name, value in rows]
    else:
        intervals = _intervals(summary)
        lines = [f"{name:<{width}}  {value:>10}  {_interval(*intervals[name]) if name in intervals else ''}".rstrip()
                 for name, value in rows]
        ci = summary["ci"]
        lines.append(f"note: intervals: {ci['level']:.0%} {ci['method']} bootstrap over questions, "
                     f"{ci['n_boot']} resamples, seed {ci['seed']}")
    lines += [f"note: {note}" for note in _notes(summary)]
    return "\n".join(lines)


def _interval(low, high) -> str:
    return "[-, -]" if low is None else f"[{low:.2f}, {high:.2f}]"


def format_paired_table(report: dict) -> str:
    """One line per metric: A, B, B-A and its interval; '*' where the interval excludes 0."""
    rows = [("metric", "A", "B", "B-A", "interval", "")]
    for name, m in _paired_metrics(report).items():
        rows.append((name, f"{m['a']:.2f}", f"{m['b']:.2f}", f"{m['diff']:+.2f}", _interval(m["low"], m["high"]),
                     "*" if m["excludes_zero"] else m.get("cannot_tell", "")))
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    lines = [f"{r[0]:<{widths[0]}}  " + "  ".join(f"{c:>{w}}" for c, w in zip(r[1:5], widths[1:])) + f" {r[5]}"
             for r in rows]
    ci = report["ci"]
    lines = [line.rstrip() for line in lines]
    lines.append(f"note: A = {report['a']}, B = {report['b']}, {report['n']} paired questions; "
                 f"{ci['level']:.0%} {ci['method']} paired bootstrap, {ci['n_boot']} resamples, seed {ci['seed']}; "
                 f"* = the interval of B-A excludes 0")
    lines += [f"note: {note}" for note in _paired_notes(report)]
    return "\n".join(lines)
