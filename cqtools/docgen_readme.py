"""README's "Reproduce a paper" section, generated from the presets' rows (``make docs``; tests/test_docs.py
checks it is current): one pipeline per preset (a ```bash block, which tests/test_docs_run.py runs on the
fixtures), what it needs, its expected time, and how many of its settings still differ."""
from __future__ import annotations

from pathlib import Path

BEGIN = "<!-- generated:begin presets (make docs) -->"
END = "<!-- generated:end -->"

# What each stage of a pipeline reads besides the previous stage's records (the preset-independent part).
INPUTS = {"retrieve": "--index IDX < questions.jsonl", "answer": "", "disambiguate": "", "detect": "",
          "gen-cq": "", "oracle": "", "score": ""}
SCORE_TASK = {"toc": "asqa", "ambigqa": "ambigqa", "disambig-first": "ambigqa", "refuel": "ambigqa",
              "askcq": "cbqa"}
# Where a preset's stages read their passages from, when its rows start after retrieval.
# AmbigQA and REFUEL read DPR's 100 passages reranked (AmbigQA §5, REFUEL §2.1); AskCQ reranks 100 retrieved ones.
RERANKED = "cq retrieve --index IDX --method dense --hits 100 < questions.jsonl | cq rerank --top 100"
FIRST = {"clam": "cq oracle --expand < questions.jsonl | cq detect --preset clam",  # one record per interpretation
         "askcq": "cq retrieve --index IDX --hits 100 < questions.jsonl | cq rerank --top 100",
         "ambigqa": RERANKED, "refuel": RERANKED}
# The questions a block reads, where not the AmbigNQ ones of README's pipeline (`cq score --task asqa` scores only
# records with ASQA's long answers).
QUESTIONS = {"toc": "asqa_dev.jsonl"}
# The order the stages run in, where it is not the order of the preset's rows.
ORDER = {"disambig-first": ("detect", "disambiguate", "answer"), "askcq": ("detect", "answer:ambigqa", "gen-cq", "answer")}
# What a stage needs beyond the offline defaults (a model cq cannot ship, a demo pool), per preset.
NEEDS = {("askcq", "detect"): " --model CLASSIFIER_DIR", ("askcq", "gen-cq"): " --model GENERATOR_DIR",
         ("toc", "disambiguate"): " --shots ASQA_TRAIN", ("disambig-first", "answer"): " --reader extractive"}
DENSE_NOTE = "IDX: an index with dense vectors (`cq index --dense`), as the paper retrieves with DPR; "
NOTES = {"askcq": "CLASSIFIER_DIR: a classifier trained on the question with its passages (`make train-detect "
                  "DETECT_PASSAGES=100 DETECT_MAX_LENGTH=512`; the shipped one reads the question alone and is "
                  "refused); GENERATOR_DIR: `cq train gen-cq --input-layout askcq --two-options comma "
                  "--with-answers gold` (gold answers in the input, as AskCQ trained it; docs/methods.md); the first `cq answer` (`--preset ambigqa`: SpanSeqGen's reading) gives gen-cq "
                  "its predicted answers.",
         "toc": "asqa_dev.jsonl: ASQA's dev questions (`cq convert asqa dev.json > asqa_dev.jsonl`, `make data`'s "
                "asqa/dev.json). ASQA_TRAIN: ASQA records with their long answers, the pool ToC's kNN demos are drawn from (ToC's "
                "is ASQA train: `cq convert asqa train.json > asqa_train.jsonl`; `make compare` uses dev questions it "
                "does not score); without --shots the built-in demos are used.",
         "clam": "`cq oracle --expand`: one record per interpretation (gold DQ) of each question, as CLAM evaluates.",
         "disambig-first": "--reader extractive: the span reader `make models` installs (DPR's reader is a span "
                           "reader; cq answer names it, it does not fall back to another).",
         "ambigqa": DENSE_NOTE + "the answer stage reads the reranked 100 up to its budget. SpanSeqGen itself: "
                    "`cq train spanseqgen --preset ambigqa` trains it (BART-large, the release's recipe), and "
                    "`cq answer --reader seqgen --model DIR` reads with it; `cq train qd --preset ambigqa` trains the "
                    "question-disambiguation BART that `cq disambiguate --method qd --model DIR` writes with.",
         "refuel": DENSE_NOTE + "the answer stage reads the reranked 100 as far as the reader's input goes."}


def _pipeline(name: str, preset) -> str:
    # a `cq train` row is a recipe (a model to train first), not a stage of the pipeline
    stages = list(ORDER.get(name) or [c for c in preset.commands() if c != "score" and not c.startswith("train ")])
    parts = []
    if name in FIRST:
        parts.append(FIRST[name])
        stages = [c for c in stages if f"cq {c} --preset" not in FIRST[name]]
    elif "retrieve" not in stages:
        parts.append("cq retrieve --index IDX --hits 100 < questions.jsonl")
    for command in stages:
        if command == "answer:ambigqa":
            parts.append("cq answer --preset ambigqa")
            continue
        extra = " --index IDX" if command == "answer" and preset.values("answer").get("mode") == "dqs" else ""
        tail = f" < {QUESTIONS.get(name, 'questions.jsonl')}" if command == "retrieve" else ""
        parts.append(f"cq {command} --preset {name}{extra}{NEEDS.get((name, command), '')}"
                     + (" --index IDX" if command == "retrieve" else "") + tail)
    score = "cq score --preset clam" if "score" in preset.commands() else f"cq score --task {SCORE_TASK.get(name, 'ambigqa')}"
    return " \\\n  | ".join(parts + [score])


# Each block's expected time: bench/preset_times.py's measurement (`make bench-smoke` writes it), in the checkout.
TIMES = Path(__file__).resolve().parent.parent / "docs" / "benchmarks" / "preset-times.json"
NOT_MEASURED = "not measured yet"  # a preset's row before `make bench-smoke` has timed its block (or without one)


def expected_time(name: str, times: dict) -> str:
    """The line under a preset's block saying how long it takes a question, and where that was measured."""
    row = times.get("presets", {}).get(name)
    if row is None or row.get("status") == NOT_MEASURED:
        return (f"Expected time: {NOT_MEASURED} (`make bench-smoke` measures every preset's block into "
                "[docs/benchmarks/preset-times.json](docs/benchmarks/preset-times.json)).")
    n = row["questions"]
    cores = int(times["machine"].split(" CPU cores")[0].split()[-1]) if " CPU cores" in times["machine"] else 1
    busy = ": a shared machine, slower than a quiet one" if times["load"] > cores else ""  # the grid runs 2 cells
    return (f"Expected time: about {row['seconds_per_question']} s a question with SmolLM2-135M on "
            f"{times['machine']} (load {times['load']}{busy}), measured {times['measured']} by `{times['command']}` "
            f"(`make bench-smoke`), cell {row['cell']}, on {n} question{'s' if n != 1 else ''}, every stage "
            f"from the questions on (it differs: {row['differs']}"
            + (f"; {row['cached_generations']} generations read from the grid's cache, made by other cells"
               if row.get("cached_generations") else "") + "; "
            "[docs/benchmarks/preset-times.json](docs/benchmarks/preset-times.json)).")


def _differs_count(preset) -> str:
    """How many of a preset's settings still differ, by kind (docs/methods.md marks each row), and the departures
    that are not one option's value."""
    from .presets.base import FLAG, MACHINE

    rows = [s for s in preset.settings if s.differs]
    forced, flag = sum(s.stays == MACHINE for s in rows), sum(s.stays == FLAG for s in rows)
    real = len(rows) - forced - flag
    return (f"{len(rows) + len(preset.departures)}: {forced} forced here, {flag} a flag switches, {real} real "
            f"divergence{'s' * (real != 1)}, {len(preset.departures)} beyond one option")


def presets_section() -> str:
    import json

    from . import presets

    times = json.loads(TIMES.read_text()) if TIMES.exists() else {}
    lines = [BEGIN, "", "| preset | paper | stages it sets | settings that still differ |", "|---|---|---|---|"]
    blocks = []
    for name in presets.names():
        preset = presets.get(name)
        paper = preset.paper.split(" (")[0].replace("../shared/papers/", "")
        lines.append(f"| `{name}` | {paper} | {', '.join(preset.commands())} | {_differs_count(preset)} "
                     f"([docs/methods.md](docs/methods.md)) |")
        blocks += ["", f"`--preset {name}`: {preset.help}.", "", "```bash", _pipeline(name, preset), "```"]
        blocks += ["", expected_time(name, times) + (f" {NOTES[name]}" if name in NOTES else "")]
    lines += blocks
    lines += ["", "Every stage reads the offline SmolLM2-135M unless `--model` names another (any Hugging Face id, "
                  "local directory or `openai:NAME` on an OpenAI-compatible server: "
                  "[docs/cluster.md](docs/cluster.md)); the papers' numbers need the papers' model sizes. Data: "
                  "`make data` (AmbigNQ, ASQA, NQ-open; [docs/data.md](docs/data.md)), IDX, an index of their "
                  "passages (`cq index`, or Pyserini's prebuilt `wikipedia-dpr-100w`). tests/test_docs_run.py runs "
                  "every block on the fixtures.", "", END]
    return "\n".join(lines)


def with_presets_section(text: str) -> str:
    """``text`` (README.md) with its generated presets section replaced by the current one."""
    head, rest = text.split(BEGIN, 1)
    return head + presets_section() + rest.split(END, 1)[1]
