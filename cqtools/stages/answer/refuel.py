"""REFUEL's extras for multiple answers: the round trip and LM verification (Gao et al. 2021).

Two round trips (``cq answer --round-trip --round-trip-method``):
  title   cq's variant (:func:`round_trip`): each new answer's question is re-asked as "Q [title]"
          (the title of the first passage holding the answer), at most ``max_rounds`` rounds;
  refuel  REFUEL's (:func:`refuel_round_trip`, paper §2.3; run.py:1093-1122 and
          QAInferenceData.py:114-117 of amzn/refuel-open-domain-qa @159090e): each pass writes a DQ
          for every answer it found (the QD writer, conditioned on the prompt question), then feeds
          *every* DQ written so far back to answer prediction over the same passages; a pass that
          finds no new answer ends the loop (``max_rounds`` caps the passes after the first).
          The record gets every (DQ, answer) pair as ``dqs``.
Two verification rules (``--verify --verify-rule``):
  threshold  cq's variant (:func:`verify`): log p(answer | passages, the question it answered);
             answers under ``verify_threshold`` are dropped (all of them, possibly);
  refuel     REFUEL's LM verification (:func:`refuel_verify`; QALMFilteringData.py:300-330 and
             models/lm_filtering.py @159090e): each (DQ, answer) pair scores log p(answer + its end
             | DQ, passages), each answer keeps its best DQ, pairs scoring at or under the
             threshold are dropped (the release keeps lm_score < Th), and when none is left the
             best pair is kept.
"""
from __future__ import annotations

from ...metrics.normalize import normalize_answer
from .options import SingleOptions
from .questions import Question


def round_trip(questions: list[Question], per_record: list[list[dict]], reader, max_rounds: int) -> None:
    """REFUEL's round trip with a built-in rewrite: each new answer's question is re-asked as
    "Q [context]" (context: the title of the best passage containing the answer); answers never
    seen before are added, until a round adds none or ``max_rounds`` is reached."""
    base = {q.record: q for q in questions}
    seen = [{normalize_answer(a["text"]) for a in answers} for answers in per_record]
    new = [list(answers) for answers in per_record]
    for _ in range(max_rounds):
        asks: list[Question] = []
        for n, answers in enumerate(new):
            q = base[n]
            for answer in answers:
                context = _context(answer["text"], q.passages)
                if context and context.lower() not in q.text.lower():
                    ordered = sorted(q.passages, key=lambda p: p.get("title") != context)
                    asks.append(Question(n, f"{q.text} [{context}]", ordered))
        if not asks:
            return
        new = [[] for _ in per_record]
        found_lists = reader.read([a.text for a in asks], [a.passages for a in asks], multi=True)
        for ask, found in zip(asks, found_lists):
            for answer in found:
                key = normalize_answer(answer["text"])
                if key and key not in seen[ask.record]:
                    seen[ask.record].add(key)
                    entry = {**answer, "question": ask.text}
                    per_record[ask.record].append(entry)
                    new[ask.record].append(entry)
        if not any(new):
            return


def _context(answer: str, passages: list[dict]) -> str | None:
    key = normalize_answer(answer)
    for p in passages:
        if key and f" {key} " in f" {normalize_answer(p.get('text', ''))} ":
            return p.get("title") or None
    return None


def verify(questions: list[Question], per_record: list[list[dict]], reader) -> None:
    """Adds ``verify_score`` (rounded to 4 places) to every answer: the reader's score of the answer
    for the question it answered (an answer's own ``question``, else its record's first), over that
    question's passages; one verifier call per question."""
    by_text = {(q.record, q.text): q for q in questions}
    base = {}
    for q in questions:
        base.setdefault(q.record, q)
    groups: dict[int, list[tuple[Question, dict]]] = {}
    for n, answers in enumerate(per_record):
        for answer in answers:
            q = by_text.get((n, answer.get("question"))) or base[n]
            if answer.get("question") and q.text != answer["question"]:
                q = Question(n, answer["question"], q.passages)
                by_text[(n, q.text)] = q
            groups.setdefault(id(q), []).append((q, answer))
    for group in groups.values():
        q = group[0][0]
        scores = reader.verify(q.text, q.passages, [a["text"] for _, a in group])
        for (_, answer), score in zip(group, scores):
            answer["verify_score"] = round(score, 4)


# --- REFUEL's round trip -------------------------------------------------------------------------

def refuel_round_trip(records: list[dict], questions: list[Question], per_record: list[list[dict]], reader,
                      write_dqs, max_passes: int, multi: bool = True, match: str = "normalised") -> list[list[dict]]:
    """REFUEL's round-trip generation. ``per_record``: the first pass's answers of each record (its
    question read over ``questions``' passages); new answers are appended to it. ``write_dqs(items)``
    writes one DQ per answer: items are (prompt question, answers, passages), the result one list of
    ``{question, answer, ...}`` per item (:class:`QDWriter`). Returns the (DQ, answer) pairs of every
    record, each once (by DQ and answer), in the order they were written, each marked with the ``pass``
    that wrote it (0: the first reading's answers). ``match``: answers and pairs are told apart by their
    normalised text (``normalised``) or, as the release's sets of strings (run.py:1098-1107, 1121
    @159090e), by their stripped string (``raw``)."""
    key_of = normalize_answer if match == "normalised" else str.strip
    base = {q.record: q for q in questions}
    seen = [{key_of(a["text"]) for a in answers} for answers in per_record]
    pairs: list[list[dict]] = [[] for _ in records]
    keys: list[set] = [set() for _ in records]
    found = [[a["text"] for a in answers] for answers in per_record]  # this pass's answers
    live = [n for n in range(len(records)) if n in base]
    for k in range(max_passes + 1):
        # a DQ for every answer this pass found, conditioned on the prompt question
        todo = [n for n in live if found[n]]
        written = _write(records, todo, [(str(records[n]["question"]), found[n], base[n].passages) for n in todo],
                         write_dqs, match)
        for n, dqs in zip(todo, written):
            for dq in dqs:
                key = (key_of(dq["question"]), key_of(dq["answer"]))
                if key not in keys[n]:
                    keys[n].add(key)
                    pairs[n].append({**dq, "pass": k})
        if k == max_passes:
            break
        # every DQ so far, re-asked over the same passages (each prompt within the model's input)
        asks = [Question(n, dq["question"], base[n].passages) for n in live for dq in pairs[n]]
        if not asks:
            break
        _fit_asks(records, asks, reader, multi)
        readings = reader.read([a.text for a in asks], [a.passages for a in asks], multi=multi)
        found = [[] for _ in records]
        keys_found: list[set] = [set() for _ in records]
        new: set[int] = set()
        for ask, answers in zip(asks, readings):
            for answer in answers[: None if multi else 1]:
                key = key_of(answer["text"])
                if not key or key in keys_found[ask.record]:
                    continue
                keys_found[ask.record].add(key)
                found[ask.record].append(answer["text"])
                if key not in seen[ask.record]:
                    seen[ask.record].add(key)
                    per_record[ask.record].append({**answer, "question": ask.text})
                    new.add(ask.record)
        live = [n for n in live if n in new]  # a record whose pass found nothing new is done
        if not live:
            break
    return pairs


def _write(records: list[dict], todo: list[int], items: list[tuple], write_dqs, match: str) -> list[list[dict]]:
    """``write_dqs(items)``, its cuts noted. The writer takes an item's distinct answers (normalised): under
    ``match="raw"`` each further spelling of an answer is written again, with the item's other answers, as the
    release writes a DQ for every raw string (run.py:1099-1107 @159090e)."""
    written = write_dqs(items)
    _note_qd_cuts(records, todo, getattr(write_dqs, "cuts", None))
    if match != "raw":
        return written
    again, whose = [], []
    for k, (question, answers, passages) in enumerate(items):
        first: dict[str, str] = {}
        for answer in answers:
            first.setdefault(normalize_answer(answer), answer.strip())
        for answer in answers:
            key = normalize_answer(answer)
            if first[key] != answer.strip():
                others = [a for other, a in first.items() if other != key]
                again.append((question, [answer.strip(), *others], passages))
                whose.append(k)
    if again:
        rewritten = write_dqs(again)
        _note_qd_cuts(records, [todo[k] for k in whose], getattr(write_dqs, "cuts", None))
        for k, (_, answers, _), dqs in zip(whose, again, rewritten):
            written[k] = [*written[k], *(dq for dq in dqs if dq["answer"] == answers[0])]
    return written


def _note_qd_cuts(records: list[dict], todo: list[int], cuts: list[int] | None) -> None:
    """``meta.passages_cut.answer-qd``: the most passages the DQ writer dropped from a record's prompts."""
    from ..evidence import note_cut

    for n, cut in zip(todo, cuts or []):
        before = ((records[n].get("meta") or {}).get("passages_cut") or {}).get("answer-qd", 0)
        note_cut(records[n], "answer-qd", max(cut, before))


def _fit_asks(records: list[dict], asks: list[Question], reader, multi: bool) -> None:
    """The round trip's re-asks (a DQ is longer than the question the passages were fitted for) keep whole
    passages within the model's input; the most any re-ask of a record dropped goes to
    ``meta.passages_cut.answer-round-trip``."""
    from ..evidence import note_cut

    if not hasattr(reader, "fit_input"):
        return
    worst: dict[int, int] = {}
    for ask in asks:
        ask.passages, ask.cut = reader.fit_input(ask.text, ask.passages, multi)
        worst[ask.record] = max(worst.get(ask.record, 0), ask.cut)
    for n, cut in worst.items():
        note_cut(records[n], "answer-round-trip", max(cut, (records[n].get("meta") or {}).get(
            "passages_cut", {}).get("answer-round-trip", 0)))


class QDWriter:
    """REFUEL's question disambiguation inside the round trip: one DQ per answer, written by the
    question writer of ``cq disambiguate --method qd`` (:func:`cqtools.stages.disambiguate.qd_batch`)
    over the passages the reader read, each passage cut to ``passage_words`` words. ``layout``: the QD
    input, ``ambigqa`` (answer, question, every other answer, passages: AmbigQA's conditioning, cq's default)
    or ``refuel`` (answer, prompt question, passages: REFUEL's, QGInferenceData.py:199 @159090e);
    ``num_beams``: its beam search (None: greedy). Counts its model calls (``calls``)."""

    def __init__(self, generator, passage_words: int = 100, tpl=None, layout: str = "ambigqa",
                 num_beams: int | None = None, one_answer: str = SingleOptions.qd_one_answer):
        from ..options import beam_args

        self.generator, self.passage_words, self.tpl = generator, passage_words, tpl
        self.layout, self.num_beams, self.one_answer = layout, num_beams or 1, one_answer
        beam_args(generator, self.num_beams)  # an API model given beams: one line, before any record
        self.calls = 0
        self.cuts: list[int] = []  # the last call's passages dropped per item (meta.passages_cut.answer-qd)

    @property
    def params(self) -> dict:
        """What ``meta.answer`` notes of the writer beyond its model: its settings not at their defaults."""
        return {**({"qd_layout": self.layout} if self.layout != "ambigqa" else {}),
                **({"qd_num_beams": self.num_beams} if self.num_beams != 1 else {}),
                **({"qd_one_answer": self.one_answer} if self.one_answer != "keep" else {})}

    def _budget(self) -> int | None:
        """Prompt tokens left for the question, answers and passages: the writer's context less the
        instruction and shots and the DQ's 40 new tokens (None for a model that does not say its context)."""
        from .. import evidence
        from ..prompts_disamb import qd_prefix

        context = getattr(self.generator, "context", None)
        if not isinstance(context, int):
            return None
        prefix = evidence.token_counter(self.generator)(qd_prefix(self.tpl, self.layout))
        return max(64, context - prefix - 40 - 16)  # 16: the chat template's and the separators' tokens

    def __call__(self, items: list[tuple[str, list[str], list[dict]]]) -> list[list[dict]]:
        from ..disambiguate import QdOptions, qd_batch

        if not items:
            return []
        records = [{"id": n, "question": q, "answers": [{"text": a} for a in answers], "passages": list(ps)}
                   for n, (q, answers, ps) in enumerate(items)]
        # the QD input in ``layout``'s order (passages in reranked order), a DQ kept as written (no "AQ (title)?"
        # fallback), passages up to what fits the writer's context
        config = QdOptions(n_passages=max(len(ps) for _, _, ps in items),
                           passage_words=self.passage_words, layout=self.layout, passage_order="reranked",
                           duplicates="keep", max_others=0, max_passage_tokens=self._budget(),
                           num_beams=self.num_beams, one_answer=self.one_answer)
        out = qd_batch(records, self.generator, config, self.tpl)
        self.calls += sum(calls for _, calls in out)
        # passages each item's prompts dropped to fit the writer's input (the most of its prompts)
        self.cuts = [max((r.get("meta") or {}).get("passages_cut", {}).get("disambiguate", [0])) for r in records]
        return [dqs for dqs, _ in out]


# --- REFUEL's LM verification ---------------------------------------------------------------------

def score_pairs(reader, pairs: list[tuple[str, str]], passages: list[dict]) -> list[float]:
    """log p(answer + its end | question, passages) for each (question, answer) pair of one record:
    one call when the reader scores pairs (the generative reader), else one per question."""
    if hasattr(reader, "verify_pairs"):
        return reader.verify_pairs(pairs, passages)
    import inspect

    if "end" not in inspect.signature(reader.verify).parameters:
        from ...errors import InputError

        raise InputError(f"--verify-rule refuel scores each answer with its end; reader {getattr(reader, 'name', reader)!r} "
                         "cannot (its verify() takes no end=): use --verify-rule threshold or --reader generative")
    return [reader.verify(q, passages, [a], end=True)[0] for q, a in pairs]


def keep_best(pairs: list[dict], threshold: float) -> list[dict]:
    """REFUEL's filter over one record's scored pairs (``verify_score``): each answer (normalised)
    keeps its best-scoring DQ (ties: the earlier pair), pairs scoring above ``threshold`` stay (the
    release keeps lm_score < Th, lm_score being -log p), and when none does the best pair is kept
    (ties: the earlier answer)."""
    best: dict[str, dict] = {}
    for pair in pairs:
        key = normalize_answer(pair["answer"])
        if key not in best or pair["verify_score"] > best[key]["verify_score"]:
            best[key] = pair
    ranked = list(best.values())
    kept = [p for p in ranked if p["verify_score"] > threshold]
    if not kept and ranked:
        kept = [max(ranked, key=lambda p: p["verify_score"])]  # max keeps the first of equal scores
    return kept


def refuel_verify(records: list[dict], questions: list[Question], per_record: list[list[dict]],
                  pairs: list[list[dict]] | None, reader, threshold: float) -> list[list[dict]]:
    """Score and filter each record's (DQ, answer) pairs (``pairs``: the REFUEL round trip's; None:
    each answer with the question it answered). Sets ``verify_score`` on every pair and on the
    answers kept; returns the kept pairs, and leaves in ``per_record`` only their answers."""
    base = {q.record: q for q in questions}
    out: list[list[dict]] = []
    for n, answers in enumerate(per_record):
        q = base.get(n)
        record_pairs = pairs[n] if pairs is not None else [
            {"question": a.get("question") or str(records[n]["question"]), "answer": a["text"]} for a in answers]
        if q is None or not record_pairs:
            out.append([])
            continue
        scores = score_pairs(reader, [(p["question"], p["answer"]) for p in record_pairs], q.passages)
        for pair, score in zip(record_pairs, scores):
            pair["verify_score"] = round(score, 4)
        kept = keep_best(record_pairs, threshold)
        by_answer = {normalize_answer(p["answer"]): p for p in kept}
        surviving = []
        for answer in answers:
            pair = by_answer.pop(normalize_answer(answer["text"]), None)
            if pair is not None:
                surviving.append({**answer, "verify_score": pair["verify_score"]})
        per_record[n] = surviving
        out.append(kept)
    return out
