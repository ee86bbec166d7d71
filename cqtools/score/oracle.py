"""``--task oracle``: how often the simulated user of `cq oracle` picks the option its gold DQ stands for.

A record of `cq oracle --expand` means one gold DQ (``gold.dqs[gold.intended]``). The right reply to a
CQ with options is the option built from that DQ: what it adds to the question, as `cq gen-cq --method
from-dqs` builds options (:func:`cqtools.stages.gen_cq.silver.dq_options`), compared after SQuAD
normalisation (a written reply that is no option: the option it shares most tokens with). A
record whose CQ has no such option is skipped (the right reply is unknown), as are
unambiguous questions and records without a CQ with options; a record without ``selected_option``
scores 0. ``agreement`` is the share of right replies, ``chance`` what picking an option at random
would agree on average, ``wilson_95`` the Wilson interval of the agreement over records (``--ci``:
a bootstrap over questions, the records expanded from one question resampled together)."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import InputError
from ..metrics.cq import INVALID
from ..metrics.normalize import normalize_answer, token_f1
from ..records import read_cq
from .base import Scored, ScoreOptions, Task
from .reading import gold_of
from .rows import Metric, ratio, value
from .study import wilson


def question_of(record: dict):
    """The question a record was expanded from: ``<id>`` of ``<id>#<i>`` when ``gold.intended`` is i
    (`cq oracle --expand`), else the record's own id."""
    record_id, intended = record["id"], gold_of(record).get("intended")
    suffix = f"#{intended}"
    if isinstance(record_id, str) and isinstance(intended, int) and record_id.endswith(suffix):
        return record_id[:-len(suffix)]
    return record_id


@dataclass(frozen=True)
class OracleScoring:
    """agreement of the simulated user (selected_option) with the option of the intended gold DQ"""


def _dq_text(dq) -> str:
    return str(dq.get("question") if isinstance(dq, dict) else dq)


def intended_option(record: dict) -> tuple[list[str], int | None, str | None]:
    """(the CQ's options, the position of the one built from the intended gold DQ or None, why it is
    unknown or None). Reads ``question``, ``cq`` and ``gold.dqs`` / ``gold.intended``."""
    from ..stages.gen_cq.silver import dq_options

    gold = gold_of(record)
    dqs = gold.get("dqs") or []
    if not gold.get("ambiguous") or not dqs:
        return [], None, "no gold DQs (an unambiguous question: nothing to pick between)"
    cq = record.get("cq")
    if cq is None:
        return [], None, "no CQ asked"
    _, _, options = read_cq(cq, record.get("id"))
    options = [str(o) for o in options if o and o != INVALID]
    if not options:
        return [], None, "a free-form CQ (no options to pick from)"
    intended = gold.get("intended", 0)
    if not isinstance(intended, int) or isinstance(intended, bool) or not 0 <= intended < len(dqs):
        raise InputError(f"record {record.get('id')}: gold.intended must index gold.dqs (0..{len(dqs) - 1}); "
                         f"pass records from `cq oracle --expand`", record_id=record.get("id"))
    target = normalize_answer(dq_options(str(record["question"]), [_dq_text(d) for d in dqs])[intended])
    matches = [i for i, o in enumerate(options) if target and normalize_answer(o) == target]
    if not matches:
        return options, None, "no option of the CQ is the one built from the intended gold DQ"
    return options, matches[0], None


def reply_option(reply: str | None, options: list[str]) -> tuple[int | None, bool]:
    """(the option ``reply`` picks or None, whether it had to be read): an option as written (after
    normalisation); else a written reply (`cq oracle --method clam` writes one) is read as the option
    it shares most tokens with (token F1), None when none shares any or two tie."""
    if reply is None:
        return None, False
    norm = normalize_answer(reply)
    for i, option in enumerate(options):
        if normalize_answer(option) == norm:
            return i, False
    scores = [token_f1(reply, option) for option in options]
    best = max(scores)
    return (scores.index(best) if best > 0 and scores.count(best) == 1 else None), True


def oracle_seen(record: dict) -> dict | None:
    """What `cq oracle` wrote of itself in ``meta.oracle`` (method, model, prompt template...), without
    the per-record ``free_form``; None when no oracle answered this record."""
    meta = record.get("meta")
    seen = meta.get("oracle") if isinstance(meta, dict) else None
    return {k: v for k, v in seen.items() if k != "free_form"} if isinstance(seen, dict) else None


@dataclass
class OraclesSeen:
    """The distinct oracles (``meta.oracle``) of the scored records, for the summary's ``"oracle"``: what
    made the replies a CLAM number rests on (docs/metrics.md, "What to report with a CLAM number")."""

    seen: list = field(default_factory=list)

    def add(self, record: dict) -> None:
        oracle = oracle_seen(record)
        if oracle is not None and oracle not in self.seen:
            self.seen.append(oracle)

    def metrics(self) -> list:
        return [value("oracle", self.seen[0] if len(self.seen) == 1 else self.seen)] if self.seen else []


@dataclass
class OracleTask(Task):
    columns = ("n", "agree", "chance", "read")

    oracles: OraclesSeen = field(default_factory=OraclesSeen)

    def skip_reason(self, record):
        return intended_option(record)[2]

    def score_record(self, record):
        options, right, _ = intended_option(record)
        self.oracles.add(record)
        selected = record.get("selected_option")
        if selected is not None and not isinstance(selected, str):
            raise InputError(f"record {record['id']}: 'selected_option' must be a string (as `cq oracle` writes)",
                             record_id=record["id"])
        picked, read = reply_option(selected, options)
        agree = picked == right
        row = {"id": record["id"], "agree": int(agree), "selected": selected, "expected": options[right],
               "n_options": len(options), **({"read_as": None if picked is None else options[picked]} if read else {})}
        return Scored(row, {"n": 1.0, "agree": float(agree), "chance": 1.0 / len(options), "read": float(read)},
                      missing=selected is None)

    def unit_of(self, record):
        return question_of(record)  # the records `cq oracle --expand` made from one question: one unit

    def notes_for(self, rows, values):
        read = int(rows.sum("read")) if rows.n else 0
        return [f"{read} reply(ies) not one of the options as written: each read as the option it shares most "
                f"tokens with (none when no option shares any or two tie); --per-record shows read_as"] if read else []

    def aggregation(self, rows):
        return [ratio("agreement", "agree", "n"), ratio("chance", "chance", "n"),
                value("wilson_95", wilson(int(rows.sum("agree")), rows.n)), *self.oracles.metrics()]


def oracle_task(options: OracleScoring, config, opts: ScoreOptions) -> Task:
    return OracleTask(opts, options)


TASK = ("oracle", oracle_task, OracleScoring)  # registered by cqtools/score/builtin_methods.py
