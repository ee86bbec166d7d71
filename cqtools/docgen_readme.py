"""README's "Reproduce a paper" section, generated from the presets' rows (``make docs``; tests/test_docs.py
checks it is current): one pipeline per preset, what it needs, and how many of its settings still differ."""
from __future__ import annotations

BEGIN = "<!-- generated:begin presets (make docs) -->"
END = "<!-- generated:end -->"

# What each stage of a pipeline reads besides the previous stage's records (the preset-independent part).
INPUTS = {"retrieve": "--index IDX < questions.jsonl", "answer": "", "disambiguate": "", "detect": "",
          "gen-cq": "", "oracle": "", "score": ""}
SCORE_TASK = {"toc": "asqa", "ambigqa": "ambigqa", "disambig-first": "ambigqa", "refuel": "ambigqa",
              "askcq": "cbqa"}
# Where a preset's stages read their passages from, when its rows start after retrieval.
FIRST = {"clam": "cq detect --preset clam < questions.jsonl",
         "askcq": "cq retrieve --index IDX --hits 100 < questions.jsonl | cq rerank --top 100"}
# The order the stages run in, where it is not the order of the preset's rows.
ORDER = {"disambig-first": ("detect", "disambiguate", "answer"), "askcq": ("detect", "answer:multi", "gen-cq", "answer")}
# What a stage needs beyond the offline defaults (a model cq cannot ship), per preset.
NEEDS = {("askcq", "detect"): " --model CLASSIFIER_DIR", ("askcq", "gen-cq"): " --model GENERATOR_DIR"}
NOTES = {"askcq": "CLASSIFIER_DIR: a classifier trained on the question with its passages (`make train-detect "
                  "DETECT_PASSAGES=100 DETECT_MAX_LENGTH=512`; the shipped one reads the question alone and is "
                  "refused); GENERATOR_DIR: `cq train gen-cq --input-layout askcq --two-options comma` "
                  "(docs/methods.md); the first `cq answer` gives gen-cq its predicted answers."}


def _pipeline(name: str, preset) -> str:
    stages = list(ORDER.get(name) or [c for c in preset.commands() if c != "score"])
    parts = []
    if name in FIRST:
        parts.append(FIRST[name])
        stages = [c for c in stages if not FIRST[name].startswith(f"cq {c} ")]
    elif "retrieve" not in stages:
        parts.append("cq retrieve --index IDX --hits 100 < questions.jsonl")
    for command in stages:
        if command == "answer:multi":
            parts.append("cq answer --mode multi --reader generative")
            continue
        extra = " --index IDX" if command == "answer" and preset.values("answer").get("mode") == "dqs" else ""
        tail = " < questions.jsonl" if command == "retrieve" else ""
        parts.append(f"cq {command} --preset {name}{extra}{NEEDS.get((name, command), '')}"
                     + (" --index IDX" if command == "retrieve" else "") + tail)
    score = "cq score --preset clam" if "score" in preset.commands() else f"cq score --task {SCORE_TASK.get(name, 'ambigqa')}"
    return " \\\n  | ".join(parts + [score])


def presets_section() -> str:
    from . import presets

    lines = [BEGIN, "", "| preset | paper | stages it sets | settings that still differ |", "|---|---|---|---|"]
    blocks = []
    for name in presets.names():
        preset = presets.get(name)
        differs = sum(bool(s.differs) for s in preset.settings) + len(preset.departures)
        paper = preset.paper.split(" (")[0].replace("../shared/papers/", "")
        lines.append(f"| `{name}` | {paper} | {', '.join(preset.commands())} | {differs} "
                     f"([docs/methods.md](docs/methods.md)) |")
        blocks += ["", f"`--preset {name}`: {preset.help}.", "", "```text", _pipeline(name, preset), "```"]
        if name in NOTES:
            blocks += ["", NOTES[name]]
    lines += blocks
    lines += ["", "Every stage reads the offline SmolLM2-135M unless `--model` names another (any Hugging Face id, "
                  "local directory or `openai:NAME` on an OpenAI-compatible server: "
                  "[docs/cluster.md](docs/cluster.md)); the papers' numbers need the papers' model sizes. Data: "
                  "`make data` (AmbigNQ, ASQA, NQ-open; [docs/data.md](docs/data.md)), an index of their passages "
                  "(`cq index`, or Pyserini's prebuilt `wikipedia-dpr-100w`).", "", END]
    return "\n".join(lines)


def with_presets_section(text: str) -> str:
    """``text`` (README.md) with its generated presets section replaced by the current one."""
    head, rest = text.split(BEGIN, 1)
    return head + presets_section() + rest.split(END, 1)[1]
