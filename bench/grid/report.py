"""`make compare`'s report: docs/results.md from the grid's scores at the end (each cell's wall time is
bench/grid/wall.py's F.wall, recorded by cell.py as the cell runs).

    report.py results --scores DIR --pairs DIR --out docs/results.md ...
    report.py wall start F / wall stop F IN     a stage's wall time by hand (wall.py; cell.py does both)

Every score row shows `value [low, high]` (the summary's bootstrap interval, `cq score --ci`), n,
the cell's wall seconds, and links to the exact pipeline that produced it (the ``.cmd`` file beside
each score). Each paired comparison (`cq score --paired`) becomes sentences that state a
difference only when its interval excludes 0. Papers' numbers stand beside ours with what differs.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.common import portable  # noqa: E402
from bench.grid import figures, frontier  # noqa: E402
from bench.grid.cost import cost_section  # noqa: E402
from bench.grid.floor import gold_reads_file, load, records_of, undefined, zero_reason  # noqa: E402
from bench.grid.pairs import MIN_PAIRED_N, PAIR_METRICS, UNITS, cannot_tell  # noqa: E402
from bench.grid.text import anchor, fmt, fmt_ci, value  # noqa: E402
from bench.grid.wall import read_wall, wall_start, wall_stop  # noqa: E402,F401 (read_wall: the report reads F.wall)
from cqtools.score.ci import counted  # noqa: E402

# (title, task, score-name prefix, columns, papers)
FAMILIES = [
    ("Ambiguity detection (AskCQ Task 1, CLAM)", "detect", "ambignq.det.",
     [("accuracy", "Acc"), ("precision", "P"), ("recall", "R"), ("f1", "F1"), ("auroc", "AUROC")],
     "AskCQ (BERT-base classifier, full CAmbigNQ/AmbigNQ dev): F1 61.3; predicted-answers detector F1 34.3. "
     "CLAM (GPT-3 few-shot, its own easier set): AUROC 0.93."),
    ("Clarification question generation (AskCQ Task 2)", "cq", "ambignq.cq.",
     [("bleu", "BLEU"), ("category_em", "Cat. EM"), ("options_precision", "Opt. P"), ("options_recall", "Opt. R"),
      ("options_f1", "Opt. F1"), ("avg_options", "#opts")],
     "AskCQ (BART-large fine-tuned on CAmbigNQ, gold CQs): options F1 24.5 with no answers, 34.3 with gold answers. "
     "Ours are scored against silver CQs built from gold DQs (`--silver-cq`), not CAmbigNQ's human CQs."),
    ("Clarification-based QA (AskCQ Task 3, end to end)", "cbqa", "ambignq.",
     [("precision", "P"), ("recall", "R"), ("f1", "F1"), ("em", "EM"), ("avg_answers", "#ans"),
      ("avg_unique_answers", "#unique")],
     "AskCQ reports partial-match F1 of clarification-based QA with a BART reader; see its Table 6."),
    ("AmbigQA / REFUEL (answers and disambiguated questions)", "ambigqa", "ambignq.",
     [("f1_ans", "F1 ans (all)"), ("f1_ans_multi", "F1 ans (multi)"), ("f1_bleu", "F1 BLEU"),
      ("f1_edit_f1", "F1 EDIT-F1"), ("comb", "Comb.")],
     "AmbigQA SpanSeqGen: F1_ans 39.7 (dev, full Wikipedia, BART-large); REFUEL: 48.3."),
    ("CLAM protocol (simulated user holds the intended DQ)", "clam", "clam.",
     [("ambiguous.accuracy", "Acc amb."), ("ambiguous.adjusted_accuracy", "Adj. amb."),
      ("unambiguous.accuracy", "Acc unamb."), ("unambiguous.adjusted_accuracy", "Adj. unamb."),
      ("all.accuracy", "Acc all"), ("all.adjusted_accuracy", "Adj. all"), ("all.clarification_rate", "Ask rate")],
     "CLAM (GPT-3, its own ambiguous-question set): asking only when needed beats never and always asking."),
    ("CLAMBER: when to clarify (detection; issue 46)", "detect", "field.clamber.",
     [("accuracy", "Acc"), ("precision", "P"), ("recall", "R"), ("f1", "F1"), ("auroc", "AUROC")],
     "CLAMBER (Zhang et al. 2024) evaluates ChatGPT-class LLMs on its 3,202 queries; ours is a 135M model on "
     "an even sample of them (every k-th), per category in the breakdowns below. No paper number is compared."),
    ("CondAmbigQA: every answer from the given passages (issue 46)", "cbqa", "field.condambigqa.",
     [("precision", "P"), ("recall", "R"), ("f1", "F1"), ("avg_answers", "#ans")],
     "CondAmbigQA (innovation64/CondAmbigQA) scores conditions and answers with an LLM judge; here the answers "
     "alone, against the answer of each condition (cbqa's alias match). No paper number is compared."),
    ("Tree of Clarifications on ASQA", "asqa", "asqa.toc.",
     [("rouge_l", "ROUGE-L"), ("str_em", "STR-EM"), ("disambig_f1", "D-F1"), ("dr", "DR"), ("answer_f1", "Answer F1")],
     "ToC (GPT-3, Bing + ColBERT retrieval, full ASQA dev): D-F1 33.7, DR 36.6."),
    ("Retrieval (answer coverage)", "retrieval", "",
     [("ac@5", "AC@5"), ("ac@10", "AC@10"), ("ac@20", "AC@20")],
     "ToC reports AC@k of its retrieval on ASQA; our corpus is the small shared one (9,532 passages)."),
]

RESUMED = "†"
SHARED = "‡"
CACHED = "§"
UPPER = " ⊤"  # after a cell's name: it reads gold (an upper bound), bench/grid/floor.py's gold_reads


# ---------------------------------------------------------------------------------------------
# formatting


def fmt_wall(wall: dict | None) -> str:
    if wall is None:
        return "–"
    return (f"{wall['total_s']:.0f}" + (RESUMED if wall.get("resumed") else "")
            + (SHARED if wall.get("shared") else "") + (CACHED if wall.get("gen_cache") else ""))


def pair_sentence(a: str, b: str, label: str, metric: dict | None, n: int, unit: str = "questions",
                  min_n: int = MIN_PAIRED_N) -> str:
    """One sentence on d = B - A: a difference only when its interval excludes 0 on at least ``min_n`` shared
    questions and has some width; "cannot tell" below that; else "no difference shown"."""
    if metric is None or metric.get("diff") is None:
        return f"{label}: not measured (undefined on these records)."
    diff, low, high = metric["diff"], metric.get("low"), metric.get("high")
    refused = cannot_tell(metric, n, unit, min_n)
    if refused:
        return f"{label}: {refused} (d = {diff:+.1f})."
    if low is not None and high is not None and (low > 0 or high < 0):
        higher, lower = (b, a) if low > 0 else (a, b)
        d, lo, hi = (diff, low, high) if low > 0 else (-diff, -high, -low)
        return f"{label}: {higher} is higher than {lower} by {d:.1f} [{lo:.1f}, {hi:.1f}] on {counted(n, unit)}."
    interval = "–" if low is None or high is None else f"{low:.1f}, {high:.1f}"
    return f"{label}: no difference shown (d = {diff:+.1f} [{interval}], n = {n})."


# ---------------------------------------------------------------------------------------------
# docs/results.md


def header(args, scores: dict) -> list[str]:
    n_all, n_model, n_asqa, n_toc, n_deep = (args.tiers.split(",") + ["?"] * 5)[:5]
    deep = (f"; the cells that read the deep reranked pool (the AmbigQA, AskCQ and REFUEL presets) on the first "
            f"{n_deep} of those" if n_deep not in ("?", n_model) else "")
    ci = next((s["ci"] for s in scores.values() if "ci" in s), None)
    interval = (f"bootstrap {ci['level']:.0%} interval ({ci['method']}, {ci['n_boot']} resamples of the scored "
                f"questions, seed {ci['seed']}; `cq score --ci`)" if ci else "interval (none here: scored without --ci)")
    index_wall = read_wall(args.index_wall) if args.index_wall else None
    index = f": {index_wall['stage_s']:.0f} s" if index_wall else ""
    return [
        "# Results: the five approaches on the same records", "", *size_note(args, n_all, n_deep),
        f"`{args.command}` on {time.strftime('%Y-%m-%d')}. Tiers of size: the cells without a model (retrieval, "
        f"detection always/never/classifier, CQs from gold DQs) on {n_all} covered AmbigNQ dev questions; every cell "
        f"that calls the LLM or the reranker on the first {n_model} of them{deep} (pairs across tiers compare on "
        "the shared questions); "
        f"Tree of Clarifications on the first {n_asqa} covered ASQA dev questions (the released loop, "
        f"`--preset toc`, on the first {n_toc} of those). Models: {portable(args.models)}; corpus "
        "../shared/data/corpus (9,532 passages).", "",
        f"Each number is `value [low, high]`: the value and its {interval}. n: questions scored (CLAM: one "
        "record per intended DQ). **wall s**: wall-clock seconds of this machine's run "
        f"({os.cpu_count()} CPU cores, DEVICE={args.device}; 15-minute load average {os.getloadavg()[2]:.1f} when "
        "this report was written" + (": above the core count, the machine was shared and every cell slower"
                                      if os.getloadavg()[2] > os.cpu_count() else "") + ") from the "
        "question file to the score, every stage the "
        "cell reads from included (shared stages count in each cell, so the column does not add up; the corpus "
        f"index, built once for every tier, is not counted{index}). {RESUMED}: some stage was killed and resumed; its attempts are summed, each up to "
        f"the last record it wrote. {SHARED}: some stage ran beside other cells (`make -jN`), so its seconds are "
        f"those of a shared machine. {CACHED}: some stage read generations an earlier cell had made from the "
        "grid's generation cache (`GEN_CACHE`, cqtools/models/gencache.py: the same records), so its seconds "
        f"count only the generations new to it. {UPPER.strip()} after a cell: an upper bound, not a system (a stage "
        "read gold as its input, e.g. CQs built from the gold DQs; CLAM's simulated user, who holds the intended DQ "
        "in every CLAM cell, does not count). **why at the floor**: for a number that is 0 or undefined (n/a), "
        "what the cell's own records show. Every number links to the pipeline that produced it. These are small-model, "
        "small-corpus numbers: compare methods with each other, not with the papers' absolute values.", ""]


def size_note(args, n_all: str, n_deep: str) -> list[str]:
    """The page's first words on a run too small to tell methods apart (its largest tier under the paired claims'
    minimum): a smoke run of N questions, whose "cannot tell" comparisons are expected; and the run's time and
    load where bench/smoke.py's run.json is given (--run)."""
    lines = []
    if n_all.isdigit() and int(n_all) < args.min_paired_n:
        deep = f" (the preset cells that read the deep pool on {n_deep})" if n_deep.isdigit() and n_deep != n_all else ""
        lines += [f"**A smoke run of {n_all} questions**{deep}: it checks that every cell runs end to end, not which "
                  f"method is better. A paired difference is stated only on at least {args.min_paired_n} shared "
                  "questions, so every comparison below marked \"cannot tell\" is expected at this size; no number "
                  "on this page is a finding. The default pipeline on 352-463 held-out questions, with 95% intervals "
                  "that do tell its comparisons apart, is on [benchmarks/first-contact.md](benchmarks/first-contact.md)"
                  " (a page of docs/; the larger run of this grid is `make compare` with no N).", ""]
    if args.run:
        run = json.loads(Path(args.run).read_text())
        lines += [f"The run (`{run.get('command', '?')}`, bench/smoke.py, {run.get('date', '?')}) took "
                  f"{run['seconds']:.0f} s; the 1-minute load average was {run['load_start_1min']:.1f} when it "
                  f"started and the 15-minute one {run['load_end_15min']:.1f} when it ended, on {os.cpu_count()} "
                  "cores" + (": the machine was shared with other work, so every wall time here is slower than on "
                             "a quiet machine." if run["load_end_15min"] > os.cpu_count() else "."), ""]
    return lines


def table(title: str, task: str, prefix: str, columns: list, paper: str, scores: dict, scores_dir: Path,
          used: set) -> list[str]:
    rows = [(name, s) for name, s in scores.items()
            if name.startswith(prefix) and s.get("task") == task and name not in used]
    if not rows:
        return []
    floors = {name: at_the_floor(task, s, columns, scores_dir, name) for name, s in rows}
    bounds = {name: gold_reads_file(records_of(scores_dir, name)) for name, _ in rows}
    why = any(reason for _, reason in floors.values())
    lines = [f"## {title}", "", "| cell | preset | n | " + " | ".join(c[1] for c in columns) + " | wall s |"
             + (" why at the floor |" if why else ""),
             "|---|---|---|" + "---|" * len(columns) + "---|" + ("---|" if why else "")]
    for name, s in rows:
        used.add(name)
        cells, reason = floors[name]
        lines.append(f"| [{name}](#{anchor(name)}){UPPER if bounds[name] else ''} | "
                     f"{preset_of(scores_dir / f'{name}.json.cmd')} | {s.get('n')} | "
                     + " | ".join(cells.get(key) or fmt_ci(s, key) for key, _ in columns)
                     + f" | {fmt_wall(read_wall(scores_dir / f'{name}.json.wall'))} |"
                     + (f" {reason} |" if why else ""))
    legend = [f"{UPPER.strip()} upper bound, not a system: {name} reads gold as input ({', '.join(reads)})."
              for name, reads in bounds.items() if reads]
    return lines + [""] + ([" ".join(legend), ""] if legend else []) + [f"Papers: {paper}", ""]


def at_the_floor(task: str, summary: dict, columns: list, scores_dir: Path, name: str) -> tuple[dict, str]:
    """({column: text in place of the number}, why the cell's zeros and undefined numbers are so), read from the
    cell's records (bench/grid/floor.py): "" when no number of the row is 0 or undefined."""
    headline = PAIR_METRICS.get(task, [(None,)])[0][0]
    keys = [(key, label) for key, label in columns if value(summary, key) in (0, None)]
    if not keys:
        return {}, ""
    records = load(records_of(scores_dir, name))
    cells, reasons = {}, {}
    for key, label in keys:
        if value(summary, key) is None:
            found = undefined(task, key, records, summary.get("notes") or [])
            if found is None:
                continue
            cells[key], reason = found
        else:
            reason = zero_reason(task, key, headline, records)
        if reason:
            reasons.setdefault(reason, []).append(label)
    return cells, "; ".join(f"{', '.join(labels)}: {reason}" for reason, labels in reasons.items())


def preset_of(cmd: Path) -> str:
    """The presets a cell's pipeline ran under (``--preset NAME`` in its .cmd), or "cq" (cq's own variant)."""
    import re

    found = re.findall(r"--preset[ =](\S+)", cmd.read_text()) if cmd.exists() else []
    return ", ".join(dict.fromkeys(found)) or "cq"


def paired_section(pairs_dir: Path | None, min_n: int = MIN_PAIRED_N) -> list[str]:
    files = sorted(pairs_dir.glob("*--*.json")) if pairs_dir and pairs_dir.is_dir() else []
    if not files:
        return []
    lines = ["## Paired comparisons", "",
             "`cq score --paired B.jsonl < A.jsonl`: B − A on the ids both cells score, with its paired bootstrap "
             f"interval; a difference is stated only when the interval excludes 0, on at least {min_n} shared "
             "questions (fewer, or an interval of zero width: \"cannot tell\").", ""]
    for path in files:
        a, b = path.name[:-len(".json")].split("--", 1)
        result = json.loads(path.read_text())
        task = result.get("task")
        sentences = [pair_sentence(a, b, label, result.get("metrics", {}).get(key), result.get("n"),
                                   UNITS.get(task, "questions"), min_n)
                     for key, label in PAIR_METRICS.get(task, [])]
        lines.append(f"- **{b} vs {a}** ({task}; d = {b} − {a}): " + " ".join(sentences))
    return lines + [""]


def breakdown_section(scores: dict) -> list[str]:
    """Every cell scored with `cq score --by FIELD`: a table per cell, one row per group, the columns of its task's
    first family above (the value and its interval, `--ci`)."""
    columns = {}
    for _, task, _, cols, _ in FAMILIES:
        columns.setdefault(task, cols)
    cells = [(name, s) for name, s in scores.items() if s.get("by") and isinstance(s.get("groups"), dict)
             and s.get("task") in columns]
    if not cells:
        return []
    lines = ["## Breakdowns", "",
             "`cq score --by FIELD` (docs/metrics.md): each group of records with the same FIELD scored alone, with "
             "its own interval; a group's n can be small, so read its interval before its value.", ""]
    for name, s in cells:
        cols = columns[s["task"]]
        lines += [f"**[{name}](#{anchor(name)})** by `{s['by']}`:", "",
                  "| group | n | " + " | ".join(label for _, label in cols) + " |", "|---|---|" + "---|" * len(cols)]
        lines += [f"| {group} | {g.get('n')} | " + " | ".join(fmt_ci(g, key) for key, _ in cols) + " |"
                  for group, g in sorted(s["groups"].items())]
        lines.append("")
    return lines


def oracle_section(scores: dict, used: set) -> list[str]:
    """The simulated user's agreement with gold (`cq score --task oracle`, one row per oracle cell) and, for every
    score of several oracle runs together (`cq score --task oracle A B C`), the spread of agreement across them."""
    cells = [(name, s) for name, s in scores.items() if s.get("task") == "oracle"]
    spreads = [(name, s) for name, s in scores.items() if isinstance(s.get("spread"), dict)
               and all(r.get("task") == "oracle" for r in s.get("runs", []))]
    if not cells and not spreads:
        return []
    lines = ["## Oracle agreement", "",
             "`cq score --task oracle` (docs/metrics.md): how often the simulated user's reply is the option of the DQ "
             "it was told it meant, with the agreement of a user picking at random (chance) and the questions left "
             "out (skipped: no CQ, no option of the intended DQ). A CLAM number made with an oracle near chance "
             "measures the oracle as much as the system.", "",
             "| cell | oracle | n | skipped | agreement | chance | Wilson 95% |", "|---|---|---|---|---|---|---|"]
    for name, s in cells:
        used.add(name)
        oracle = s.get("oracle")
        said = ", ".join(str(o.get("method", "?")) + (f" {o['template']}" if o.get("template") else "")
                         + (f" persona {o['persona']}" if o.get("persona") else "")
                         for o in (oracle if isinstance(oracle, list) else [oracle]) if isinstance(o, dict)) or "–"
        wilson = s.get("wilson_95")
        lines.append(f"| [{name}](#{anchor(name)}) | {said} | {s.get('n')} | {s.get('skipped', s.get('missing', 0))} | "
                     f"{fmt_ci(s, 'agreement')} | {fmt(s.get('chance'))} | "
                     + (f"[{wilson[0]:.1f}, {wilson[1]:.1f}]" if isinstance(wilson, list) else "–") + " |")
    for name, s in spreads:
        used.add(name)
        m = s["spread"]["metrics"].get("agreement")
        if m:
            runs = [Path(r).name for r in s["spread"]["runs"]]
            lines += ["", f"Spread of agreement across {len(runs)} oracles ([{name}](#{anchor(name)}), on the "
                          f"{s['spread']['n']} questions all score): {fmt(m['range'])} [{fmt(m['low'])}, {fmt(m['high'])}] "
                          "(max − min, paired bootstrap interval); per oracle: "
                          + ", ".join(f"{run} {fmt(v)}" for run, v in zip(runs, m["values"])) + "."]
    return lines + [""]


def write_results(args) -> None:
    scores_dir = Path(args.scores)
    scores = {p.name[:-5]: json.loads(p.read_text()) for p in sorted(scores_dir.glob("*.json"))}
    lines = header(args, scores)
    if args.partial:
        lines += [f"**Partial run** ({args.partial}): only the cells below have finished; every other cell of "
                  "`make compare` has not run yet (the same command resumes it). No cell here is a cut-down version "
                  "of its full-size self.", ""]
    used: set = set()
    for title, task, prefix, columns, paper in FAMILIES:
        lines += table(title, task, prefix, columns, paper, scores, scores_dir, used)
    lines += breakdown_section({name: s for name, s in scores.items() if name in used})
    lines += cost_section({name: s for name, s in scores.items() if name in used}, scores_dir)
    lines += oracle_section(scores, used)
    lines += paired_section(Path(args.pairs) if args.pairs else None, args.min_paired_n)
    lines += frontier.section(scores_dir)  # bench/grid/frontier.py: answer quality against questions asked
    lines += figures.section(scores_dir, Path(args.pairs) if args.pairs else None)  # forest plots, embedded
    lines += ["## Commands", ""]
    for name in sorted(used):
        cmd = scores_dir / f"{name}.json.cmd"
        lines += [f'<a id="{anchor(name)}"></a>**{name}**', "", "```",
                  portable(cmd.read_text().rstrip()) if cmd.exists() else "(no command recorded)", "```", ""]
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)  # RESULTS in a folder not made yet
    Path(args.out).write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out} ({len(used)} cells)")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="action", required=True)
    results = sub.add_parser("results", help="write docs/results.md from the score summaries and paired comparisons")
    results.add_argument("--scores", required=True, help="directory of `cq score --ci` summaries (NAME.json)")
    results.add_argument("--pairs", help="directory of `cq score --paired` outputs named A--B.json")
    results.add_argument("--out", default="docs/results.md")
    results.add_argument("--command", default="make compare", help="the command that ran the grid (header)")
    results.add_argument("--tiers", default="?,?,?", help="questions in the tiers: all,model,asqa,toc[,deep]")
    results.add_argument("--models", default="?", help="the models, in words (header)")
    results.add_argument("--device", default="auto")
    results.add_argument("--index-wall", help="the corpus index's F.wall (its build time, in the header)")
    results.add_argument("--min-paired-n", type=int, default=MIN_PAIRED_N, metavar="N",
                         help=f"state a paired difference only on at least N shared questions (default {MIN_PAIRED_N})")
    results.add_argument("--run", metavar="RUN_JSON",
                         help="bench/smoke.py's run.json: the run's seconds and load, stated at the top")
    results.add_argument("--partial", default=None, metavar="WHY",
                         help="say in the report that the grid has not finished, and why (the cells present are whole)")
    wall = sub.add_parser("wall", help="record a stage's wall time: start F, then stop F INPUT")
    wall.add_argument("when", choices=["start", "stop"])
    wall.add_argument("out", help="the stage's output file F")
    wall.add_argument("input", nargs="?", help="stop: the stage's input (its F.wall total is added)")
    args = ap.parse_args(argv)
    if args.action == "results":
        write_results(args)
    elif args.when == "start":
        wall_start(args.out)
    else:
        if not args.input:
            ap.error("wall stop needs the stage's input: wall stop F INPUT")
        wall_stop(args.out, args.input)


if __name__ == "__main__":
    main()
