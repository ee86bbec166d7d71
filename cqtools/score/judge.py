"""``--task judge`` (opt-in): an LM judge of each dialogue, asked the questions of a ``clam-turns`` study (was asking
right, did the user's reply give the right information, is the final answer right), and, with ``--against
JUDGEMENTS``, its agreement with the people who answered the same questions in ``cq view --study clam-turns``.

The judge's metric card (the summary's ``card``): the prompt (its name and the sha256 of its text), the model
(what its backend reports), temperature 0 (greedy decoding), and ``--judge-runs`` runs (default 3) of every
prompt with their spread (per question, the range across runs of the share judged "yes"; a served model's batching
can move it, a local greedy model repeats itself). A reply that is not yes or no counts as no judgement: the
record is scored on the runs that gave one, and the card counts such replies; a record no run judged scores 0
(missing) for that question.

Agreement (``agreement``, per turn question, on the items both the judge and at least one person judged): the
judge's "yes" share across its runs against the people's "yes" share across annotators, Spearman's rho (scipy),
and the judge's majority label against the people's majority (a tie of people: yes), Cohen's kappa; each with a
percentile bootstrap interval over items (1,000 resamples, seed 0). These numbers say whether this judge agrees
with these people on these dialogues; with a 135M model or a handful of items they say nothing about quality.
"""
from __future__ import annotations

import hashlib
import math
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from ..errors import InputError
from ..metrics.agreement import cohen_kappa
from ..models.roles import LLM
from ..registry import option
from ..view.study import TURN_QUESTIONS
from ..records import answer_texts
from .base import Scored, ScoreOptions, Task
from .reading import gold_of, pct
from .rows import Metric, mean, value

TURNS = tuple(key for key, _ in TURN_QUESTIONS)
PROMPT_NAME = "cq-judge-clam-turns-v1"
PROMPT = ("You judge one turn of a question-answering dialogue.\n"
          "Question: {question}\nClarifying question asked: {cq}\nUser's reply: {reply}\nFinal answer: {answer}\n"
          "Correct answers: {gold}\n{ask}\nAnswer yes or no:")
PROMPT_SHA256 = hashlib.sha256(PROMPT.encode()).hexdigest()
N_BOOT, SEED = 1000, 0  # the agreement's bootstrap over items (percentile, 95%)


@dataclass(frozen=True)
class JudgeScoring:
    """an LM judge of each dialogue (clam-turns questions), opt-in; --against a study's judgements: rho and kappa"""

    judge_model: str = option(LLM, "the judge: a causal LM (Hugging Face id, local directory, offline copy, or "
                                   "openai:NAME with --api-base / OPENAI_BASE_URL).")
    judge_runs: int = option(3, "runs of every judge prompt (temperature 0): the card gives their spread.", min=1)
    against: str | None = option(None, "a cq view --study clam-turns judgements file: the judge's agreement with "
                                       "the people (Spearman's rho, Cohen's kappa, bootstrap intervals). With any "
                                       "other --task: a reference bundle (make compare, bench/reference.py) the run "
                                       "is compared with per record and per metric; exit 1 when a metric moved "
                                       "beyond --tolerance.", metavar="JUDGEMENTS|BUNDLE")


def prompts(record: dict) -> list[str]:
    """The judge's prompt for each turn question of ``record``."""
    cq = record.get("cq")
    text = cq.get("text") if isinstance(cq, dict) else cq
    answers = answer_texts(record)
    gold = gold_of(record).get("answers") or []
    fields = {"question": record["question"], "cq": text or "(none)", "reply": record.get("clarification_answer")
              or "(none)", "answer": answers[0] if answers else "(none)",
              "gold": "; ".join(a[0] if isinstance(a, list) and a else str(a) for a in gold) or "(unknown)"}
    return [PROMPT.format(**fields, ask=ask) for _, ask in TURN_QUESTIONS]


def parse(reply: str) -> int | None:
    word = (reply.strip().split() or [""])[0].strip(".,!:;\"'").lower()
    return 1 if word == "yes" else 0 if word == "no" else None


def read_judgements(path: str) -> dict:
    """{item: {turn question: [people's labels]}} of a clam-turns judgements file (one error line per bad line)."""
    import orjson

    out: dict = defaultdict(lambda: defaultdict(list))
    with open(path, "rb") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                record = orjson.loads(line)
            except orjson.JSONDecodeError as err:
                raise InputError(f"--against {path} line {number}: not JSON ({err})") from None
            if not isinstance(record, dict) or record.get("study") != "clam-turns":
                raise InputError(f"--against {path} line {number}: not a clam-turns judgement; the judge is checked "
                                 "against `cq view --study clam-turns --judgements FILE`")
            given = record.get("judgements") if isinstance(record.get("judgements"), dict) else {}
            if not isinstance(record.get("item"), str) or not all(isinstance(given.get(k), bool) for k in TURNS):
                raise InputError(f"--against {path} line {number}: a judgement needs an 'item' and {', '.join(TURNS)} "
                                 "as true/false")
            for key in TURNS:
                out[record["item"]][key].append(int(given[key]))
    if not out:
        raise InputError(f"--against {path}: no judgements")
    return out


def _rho(x, y) -> float | None:
    from scipy.stats import spearmanr

    if len(x) < 2 or len(set(x)) < 2 or len(set(y)) < 2:
        return None
    rho = spearmanr(x, y).statistic
    return None if math.isnan(rho) else float(rho)


def _kappa(x, y) -> float | None:
    return cohen_kappa([int(v >= 0.5) for v in x], [int(v >= 0.5) for v in y])


def agreement_of(judge: list[float], people: list[float], n_boot: int, seed: int) -> dict:
    """rho and kappa of the judge's and the people's yes shares on the same items, with 95% bootstrap intervals."""
    rng = np.random.default_rng(seed)
    x, y = np.asarray(judge, dtype=float), np.asarray(people, dtype=float)
    out = {"items": len(x)}
    for name, stat in (("spearman_rho", _rho), ("cohen_kappa", _kappa)):
        point = stat(list(x), list(y))
        draws = [stat(list(x[idx]), list(y[idx])) for idx in (rng.integers(0, len(x), len(x)) for _ in range(n_boot))]
        draws = [d for d in draws if d is not None]
        out[name] = point
        out[f"{name}_95"] = [float(np.percentile(draws, 2.5)), float(np.percentile(draws, 97.5))] if draws else None
    return out


@dataclass
class JudgeTask(Task):
    columns = (*TURNS, *(f"{k}_judged" for k in TURNS))
    generator: object = None
    labels: dict = field(default_factory=dict)  # record id -> {turn question: [label or None per run]}
    unparsed: int = 0

    def score_scorable(self, records):
        if self.generator is None:
            from ..models.load import load_generator

            self.generator = load_generator(self.options.judge_model, self.opts.device, config=self.config)
        texts = [p for r in records for p in prompts(r)]
        runs = [[parse(t) for t in self.generator.generate(texts, max_new_tokens=3, stop=["\n"])]
                for _ in range(self.options.judge_runs)]  # one call per run: no run reads another's replies
        self.unparsed += sum(label is None for run in runs for label in run)
        out = []
        for n, record in enumerate(records):
            given = {key: [run[n * len(TURNS) + k] for run in runs] for k, key in enumerate(TURNS)}
            self.labels[record["id"]] = given
            values = {}
            for key, labels in given.items():
                judged = [v for v in labels if v is not None]
                values[key] = sum(judged) / len(judged) if judged else 0.0
                values[f"{key}_judged"] = float(bool(judged))
            out.append(Scored({"id": record["id"], **{k: v for k, v in given.items()}}, values,
                              missing=not all(values[f"{k}_judged"] for k in TURNS)))
        return out

    def card(self, rows) -> dict:
        spread = {}
        for k, key in enumerate(TURNS):
            shares = []
            for run in range(self.options.judge_runs):
                judged = [labels[key][run] for labels in self.labels.values() if labels[key][run] is not None]
                shares.append(pct(sum(judged) / len(judged)) if judged else None)
            known = [s for s in shares if s is not None]
            spread[key] = {"per_run": shares, "range": (max(known) - min(known)) if known else None}
        info = getattr(self.generator, "info", {}) or {}
        return {"prompt": {"name": PROMPT_NAME, "sha256": PROMPT_SHA256}, "model": info.get("model",
                self.options.judge_model), "temperature": 0, "runs": self.options.judge_runs, "spread": spread,
                "unparsed_replies": self.unparsed}

    def agreement(self, rows) -> dict:
        people = read_judgements(self.options.against)
        shared = [i for i in self.labels if i in people]
        out = {"judgements": self.options.against, "items_judged_by_people": len(people), "items_shared": len(shared)}
        for key in TURNS:
            pairs = [(np.mean(j), np.mean(people[i][key])) for i in shared
                     if (j := [v for v in self.labels[i][key] if v is not None])]
            out[key] = agreement_of([a for a, _ in pairs], [b for _, b in pairs], N_BOOT, SEED)
            if out[key]["spearman_rho"] is None and len(pairs) >= 2:
                same = [side for side, values in (("judge", {a for a, _ in pairs}), ("people", {b for _, b in pairs}))
                        if len(values) < 2]
                out[key]["rho_undefined"] = f"the {' and the '.join(same)} gave every item the same verdict"
        return out

    def notes_for(self, rows, values):
        notes = ["the judge's numbers say whether it agrees with people on these items, not how good a system is"]
        if self.unparsed:
            notes.append(f"{self.unparsed} judge reply(ies) neither yes nor no: no judgement (the card counts them)")
        found = values.get("agreement")
        for key in TURNS if found else ():
            if found[key].get("rho_undefined"):
                notes.append(f"{key}: no Spearman's rho, {found[key]['rho_undefined']} (kappa is then 0 or "
                             "undefined: agreement cannot be told from these items)")
        if found and found["items_shared"] < found["items_judged_by_people"]:
            notes.append(f"--against: {found['items_judged_by_people'] - found['items_shared']} judged item(s) are "
                         "not in this run")
        return notes

    def aggregation(self, rows):
        metrics = [mean(f"{key}_yes", key) for key in TURNS]
        metrics.append(Metric("card", self.card, resampled=False))
        if self.options.against:
            metrics.append(Metric("agreement", self.agreement, resampled=False))
        return [*metrics, value("judge_runs", self.options.judge_runs)]


def judge_task(options: JudgeScoring, config, opts: ScoreOptions) -> Task:
    if options.against:
        read_judgements(options.against)  # a bad file fails before the judge loads
    return JudgeTask(opts, options, config=config)


TASK = ("judge", judge_task, JudgeScoring)  # registered by cqtools/score/builtin_methods.py
