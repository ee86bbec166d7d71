"""`make compare`: gather the experiment grid's scores into docs/results.md.

Every row links to the exact pipeline that produced it (the ``.cmd`` file beside each score).
Papers' numbers stand beside ours with what differs; ours come from this machine's models.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

FAMILIES = [
    ("Ambiguity detection (AskCQ Task 1, CLAM)", "ambignq.det.",
     [("accuracy", "Acc"), ("precision", "P"), ("recall", "R"), ("f1", "F1"), ("auroc", "AUROC")],
     "AskCQ (BERT-base classifier, full CAmbigNQ/AmbigNQ dev): F1 61.3; predicted-answers detector F1 34.3. "
     "CLAM (GPT-3 few-shot, its own easier set): AUROC 0.93."),
    ("Clarification question generation (AskCQ Task 2)", "ambignq.cq.",
     [("bleu", "BLEU"), ("category_em", "Cat. EM"), ("options_precision", "Opt. P"), ("options_recall", "Opt. R"),
      ("options_f1", "Opt. F1"), ("avg_options", "#opts")],
     "AskCQ (BART-large fine-tuned on CAmbigNQ, gold CQs): options F1 24.5 with no answers, 34.3 with gold answers. "
     "Ours are scored against silver CQs built from gold DQs (`--silver-cq`), not CAmbigNQ's human CQs."),
    ("Clarification-based QA (AskCQ Task 3, end to end)", "ambignq.",
     [("precision", "P"), ("recall", "R"), ("f1", "F1"), ("em", "EM"), ("avg_answers", "#ans"),
      ("avg_unique_answers", "#unique")],
     "AskCQ reports partial-match F1 of clarification-based QA with a BART reader; see its Table 6."),
    ("AmbigQA / REFUEL (answers and disambiguated questions)", "ambignq.",
     [("f1_ans", "F1 ans (all)"), ("f1_ans_multi", "F1 ans (multi)"), ("f1_bleu", "F1 BLEU"),
      ("f1_edit_f1", "F1 EDIT-F1"), ("comb", "Comb.")],
     "AmbigQA SpanSeqGen: F1_ans 39.7 (dev, full Wikipedia, BART-large); REFUEL: 48.3."),
    ("CLAM protocol (simulated user holds the intended DQ)", "clam.",
     [("ambiguous.accuracy", "Acc amb."), ("ambiguous.adjusted_accuracy", "Adj. amb."),
      ("unambiguous.accuracy", "Acc unamb."), ("unambiguous.adjusted_accuracy", "Adj. unamb."),
      ("all.accuracy", "Acc all"), ("all.adjusted_accuracy", "Adj. all"), ("all.clarification_rate", "Ask rate")],
     "CLAM (GPT-3, its own ambiguous-question set): asking only when needed beats never and always asking."),
    ("Tree of Clarifications on ASQA", "asqa.toc.",
     [("rouge_l", "ROUGE-L"), ("str_em", "STR-EM"), ("disambig_f1", "D-F1"), ("dr", "DR"), ("answer_f1", "Answer F1")],
     "ToC (GPT-3, Bing + ColBERT retrieval, full ASQA dev): D-F1 33.7, DR 36.6."),
    ("Retrieval (answer coverage)", "",
     [("ac@5", "AC@5"), ("ac@10", "AC@10"), ("ac@20", "AC@20")],
     "ToC reports AC@k of its retrieval on ASQA; our corpus is the small shared one (9,532 passages)."),
]


def value(summary: dict, key: str):
    for part in key.split("."):
        summary = summary.get(part) if isinstance(summary, dict) else None
    return summary


def fmt(v) -> str:
    return "–" if v is None else (f"{v:.1f}" if isinstance(v, float) else str(v))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scores", required=True)
    ap.add_argument("--out", default="docs/results.md")
    ap.add_argument("--n", default="?")
    args = ap.parse_args()
    scores = {p.name[:-5]: json.loads(p.read_text()) for p in sorted(Path(args.scores).glob("*.json"))}
    lines = ["# Results: the five approaches on the same records", "",
             f"`make compare N={args.n}` on {time.strftime('%Y-%m-%d')}, CPU only, default offline models "
             "(SmolLM2-135M-Instruct as the LLM, ms-marco-MiniLM-L-12 INT8 as the reranker, all-MiniLM-L6 as the "
             "encoder), corpus ../shared/data/corpus (9,532 passages). Every number links to the pipeline that "
             "produced it. These are small-model, small-corpus numbers: compare methods with each other, not "
             "with the papers' absolute values.", ""]
    used = set()
    for title, prefix, columns, paper in FAMILIES:
        rows = [(name, s) for name, s in scores.items()
                if name.startswith(prefix) and s.get("task") == _task(title) and name not in used]
        if not rows:
            continue
        lines += [f"## {title}", "", "| cell | n | " + " | ".join(c[1] for c in columns) + " |",
                  "|---|---|" + "---|" * len(columns)]
        for name, s in rows:
            used.add(name)
            lines.append(f"| [{name}](#cmd-{name.replace('.', '-')}) | {s.get('n')} | "
                         + " | ".join(fmt(value(s, key)) for key, _ in columns) + " |")
        lines += ["", f"Papers: {paper}", ""]
    lines += ["## Commands", ""]
    for name in sorted(used):
        cmd = Path(args.scores, f"{name}.json.cmd")
        lines += [f'<a id="cmd-{name.replace(".", "-")}"></a>**{name}**', "", "```",
                  cmd.read_text().rstrip() if cmd.exists() else "(no command recorded)", "```", ""]
    Path(args.out).write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out} ({len(used)} cells)")


def _task(title: str) -> str:
    return {"Ambiguity": "detect", "Clarification question": "cq", "Clarification-based": "cbqa", "AmbigQA": "ambigqa",
            "CLAM": "clam", "Tree": "asqa", "Retrieval": "retrieval"}[next(k for k in ("Ambiguity", "Clarification question",
            "Clarification-based", "AmbigQA", "CLAM", "Tree", "Retrieval") if title.startswith(k))]


if __name__ == "__main__":
    main()
