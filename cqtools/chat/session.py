"""A chat session's stages and its records: :class:`Session` (retrieve, rerank, detect, gen-cq and
answer, built once), what a turn shows (:func:`options_of`, :func:`evidence`, :func:`render_cq`,
:func:`render_answers`) and the turn log (:class:`TurnLog`, :func:`read_log`, :func:`replay_inputs`)."""
from __future__ import annotations

import contextlib
import dataclasses
import itertools
import logging
import os
import re
from dataclasses import dataclass, field
from typing import IO, Callable, Iterable, Iterator

from .. import exactjson
from ..errors import InputError
from ..metrics.cq import INVALID
from ..config import RunConfig
from ..stream.batches import record_problem
from ..records import ANSWERS, GUESS, LOW, PASSAGES, SURE, answer_confidence, low_note, read_cq, set_meta
from ..registry import option
from ..stages.answer.options import READER_PASSAGES
from ..stages.options import DEFAULT_DETECTOR, CommandSettings

log = logging.getLogger("cqtools")
OTHER = "other: type your own"
SHOW_ALL = "show all answers"
CHOICES = ("option", "other", "all", "direct")  # meta.chat.choice


# --- the stages, built once -------------------------------------------------------------------------

@dataclass
class ChatOptions:
    """The stages' options; the defaults are `make demo`'s."""

    index_dir: str
    retrieve: str = option("hybrid", "Retrieval method (cq retrieve --method).")
    hits: int = option(10, "Passages retrieved.", min=1)
    rerank_top: int = option(3, "Passages kept after reranking (cq rerank --top); 0: no reranking.", min=0)
    reranker: str | None = option(None, "Cross-encoder of cq rerank and cq answer --mode cq [default: the reranker "
                                        "role's].", env="CQ_MODEL_RERANKER")
    detect: str = option(DEFAULT_DETECTOR, "Ambiguity detector (cq detect --method, whose default it is, as in "
                                           "make demo: the classifier trained here, else the shipped one); answers "
                                           "and tree need keys a chat turn lacks.")
    detect_model: str | None = option(None, "cq detect --model (classifier: a `cq train detect` directory).",
                                      env="CQ_MODEL_DETECT")
    threshold: float | None = option(None, "cq detect --threshold [default: the method's].")
    gen_cq: str | None = option(None, "Clarifying-question writer (cq gen-cq --method); from-dqs reads gold, which "
                                      "typed questions lack. [default: pred-answers; llm when --model or "
                                      "--gen-cq-model names an LM]")
    gen_cq_model: str | None = option(None, "cq gen-cq --model.", env="CQ_MODEL_GEN_CQ")
    reader: str = option(CommandSettings.reader, "Reader (cq answer --reader).")  # extractive when installed, else generative
    reader_model: str | None = option(None, "cq answer --model.", env="CQ_MODEL_READER")
    n_passages: int = option(READER_PASSAGES, "Passages shown to the reader (cq answer --passages).", min=1,
                             flag="--passages")
    device: str = RunConfig.device
    dtype: str = RunConfig.dtype
    seed: int | None = CommandSettings.seed
    all_records: bool = False        # a CQ for every question, not only those detected ambiguous (study)
    extra: dict = field(default_factory=dict)  # more options for the stages' build()

    def stage_options(self) -> dict:
        """What meta.chat records about the session's configuration."""
        return {k: v for k, v in vars(self).items() if k != "extra" and v is not None}


def _given(**options) -> dict:
    return {k: v for k, v in options.items() if v is not None}


class Session:
    """The stages of a chat, built once: models loaded and the index opened when it starts.

    ``status(label)`` is a context manager the stages run in (a spinner); the default does nothing. ``config``:
    the run configuration every stage's models load under (None: one from the environment), with ``opts``' device and dtype."""

    def __init__(self, opts: ChatOptions, status: Callable[[str], contextlib.AbstractContextManager] | None = None,
                 config=None):
        from ..stages import answer, detect, gen_cq, rerank, retrieve

        if opts.gen_cq is None:
            opts = dataclasses.replace(opts, gen_cq=gen_cq.default_method(opts.gen_cq_model))
        self.opts = opts
        self.status = status or (lambda label: contextlib.nullcontext())
        config = (config if config is not None else RunConfig.from_env()).replace(device=opts.device, dtype=opts.dtype)
        with self.status("opening the index"):
            self.retrieve = retrieve.build(opts.retrieve, config, index_dir=opts.index_dir, hits=opts.hits,
                                           **opts.extra.get("retrieve", {}))
        with self.status("loading models"):
            self.rerank = (rerank.build(**_given(model=opts.reranker), top=opts.rerank_top, device=opts.device,
                                        config=config) if opts.rerank_top else None)
            self.detect = detect.build(opts.detect, config, **_given(model=opts.detect_model, threshold=opts.threshold))
            self.gen_cq = gen_cq.build(opts.gen_cq, opts.all_records, config, **_given(model=opts.gen_cq_model))
            reader = dict(_given(model=opts.reader_model, reranker=opts.reranker), config=config,
                          n_passages=opts.n_passages, seed=opts.seed)
            self.answer_selected = answer.build("cq", opts.reader, selected=True, **reader)
            self.answer_all = answer.build("cq", opts.reader, **reader)
        self.turns = 0
        self.max_question_chars = config.max_question_chars

    def ask(self, question: str | dict) -> dict:
        """A new turn's record: the question (a string, or a record that may carry an id and gold,
        which no stage reads) retrieved, reranked, judged and, when ambiguous, clarified."""
        from ..models.load import set_seed

        self.turns += 1
        record = dict(question) if isinstance(question, dict) else {"question": question}
        if not isinstance(record.get("question"), str) or not record["question"].strip():
            raise InputError("a question must be a non-empty string")
        record.setdefault("id", f"chat-{self.turns}")
        problem = record_problem(record, ("question",), self.max_question_chars)  # what every stage checks
        if problem:
            raise InputError(problem)
        set_seed(self.opts.seed)
        records = [record]
        steps = [("retrieving", self.retrieve), ("reranking", self.rerank), ("detecting ambiguity", self.detect),
                 ("writing a clarifying question", self.gen_cq)]
        for label, stage in steps:
            if stage is not None:
                with self.status(label):
                    records = stage(records)
        return records[0]

    def answer(self, record: dict, choice: str, selected: str | None = None) -> dict:
        """Answer the turn: ``choice`` is "option" or "other" (``selected`` is the person's
        interpretation), "all" (every option), or "direct" (the question itself; a CQ that offered
        nothing usable is kept in the record but not used)."""
        from ..models.load import set_seed

        if choice not in CHOICES:
            raise InputError(f"unknown choice {choice!r}; one of {', '.join(CHOICES)}")
        record["selected_option"] = selected if choice in ("option", "other") else None
        if choice == "other":
            record["clarification_answer"] = selected
            self._retrieve_for_typed(record, selected)
        set_seed(self.opts.seed)
        with self.status("answering"):
            if choice == "direct":
                done = self.answer_selected([{**record, "cq": None}])[0]
                record[ANSWERS], record["meta"] = done[ANSWERS], done["meta"]
            else:
                stage = self.answer_all if choice == "all" else self.answer_selected
                record = stage([record])[0]
        set_meta(record, "chat", {"choice": choice, **self.opts.stage_options()})
        return record


    def _retrieve_for_typed(self, record: dict, typed: str) -> None:
        """A typed interpretation is its own question: its passages replace those of the question as
        asked (a reading the CQ did not offer may be about passages the first retrieval never found).
        Retrieved for the typed text alone ("the 2018 FIFA World Cup": the question's own words,
        "2019", must not outrank it) and for the revised question (AskCQ's "AQ revised by CQ", the
        text the reader is asked: "the animated series" alone says nothing of the Joker), interleaved
        in that order up to --hits, then reranked (--rerank-top) like the question's own."""
        from ..stages.answer import record_cq, revised_question

        category, _ = record_cq(record)
        revised = revised_question(record["question"], category, typed)
        probes = [{"id": f"{record.get('id')}-typed", "question": typed},
                  {"id": f"{record.get('id')}-revised", "question": revised}]
        with self.status("retrieving for your interpretation"):
            probes = self.retrieve(probes)
        merged, seen = [], set()
        for pair in itertools.zip_longest(probes[0][PASSAGES], probes[1][PASSAGES]):
            for passage in pair:
                if passage is not None and passage.get("id") not in seen:
                    seen.add(passage.get("id"))
                    merged.append(passage)
        found = [{"id": record.get("id"), "question": revised, PASSAGES: merged[:self.opts.hits]}]
        if self.rerank is not None:
            with self.status("reranking"):
                found = self.rerank(found)
        record[PASSAGES] = found[0][PASSAGES]


def options_of(record: dict) -> list[str]:
    """The CQ's options a person can pick ([] when no CQ was asked or it has none usable)."""
    if record.get("cq") is None:
        return []
    _, _, options = read_cq(record["cq"], record.get("id"))
    seen, out = set(), []
    for option in (str(o).strip() for o in options):
        if option and option != INVALID and option.lower() not in seen:
            seen.add(option.lower())
            out.append(option)
    return out


# --- presentation -------------------------------------------------------------------------------

_SENTENCE = re.compile(r"(?<=[.!?])(?<!\b[A-Z]\.)\s+(?=[A-Z0-9\"'(])")  # not after an initial (J. R. R.)


def evidence(record: dict, answer: dict) -> tuple[dict, str, tuple[int, int] | None] | None:
    """(passage, sentence, (start, end) of the answer in the sentence) for an answer: the first of
    the record's passages holding the answer's text (case-insensitive; the passage it was read from,
    ``passage_id``, first), the sentence it is in; the top passage's first sentence and no span when no
    passage holds it; None without passages."""
    passages = [p for p in record.get(PASSAGES) or [] if isinstance(p, dict)]
    if not passages:
        return None
    read_from = answer.get("passage_id")
    passages.sort(key=lambda p: read_from is None or p.get("id") != read_from)  # stable: the rest in order
    text = str(answer.get("text") or "").strip()
    if text:
        needle = re.compile(r"(?<!\w)" + re.escape(text) + r"(?!\w)", re.I)
        for passage in passages:
            for sentence in _SENTENCE.split(str(passage.get("text") or "")):
                found = needle.search(sentence)
                if found:
                    return passage, sentence, found.span()
    first = _SENTENCE.split(str(passages[0].get("text") or ""))[0]
    return passages[0], first, None


def render_cq(record: dict, options: list[str]) -> list[str]:
    """The CQ and its numbered choices: the options, then "other" and "show all answers"."""
    text, _, _ = read_cq(record["cq"], record.get("id"))
    lines = [f"cq: {text}"]
    for n, option in enumerate([*options, OTHER, SHOW_ALL], start=1):
        lines.append(f"  {n}) {option}")
    return lines


NO_ANSWER = "no passage answers this"


def grounded(answer: dict) -> bool:
    """Whether a passage holds the reader's answer (:func:`cqtools.records.answer_confidence` is not
    ``guess``): a span the reader scores over "no answer here", or one read from its question's first passage
    or its option's own passage."""
    return answer_confidence(answer) != GUESS


def render_answers(record: dict, mark: Callable[[str], str]) -> list[str]:
    """Each answer, its option when it has one, and the passage it came from: title and sentence,
    the answer span passed through ``mark`` (bold in a terminal). An answer no passage holds
    (:func:`grounded`) is not given as one: "no passage answers this", the reader's best guess
    shown as only that; one read from its option's own passage with a low reader score is given,
    marked as a low-confidence reading."""
    lines = []
    answers = [a if isinstance(a, dict) else {"text": a} for a in record.get(ANSWERS) or []]
    if not answers:
        return ["answer: (none found)"]
    for answer in answers:
        option = answer.get("option")
        head = f"answer ({option}): " if option else "answer: "
        text = str(answer.get("text") or "") or "(empty)"
        level = answer_confidence(answer)
        sure = level != GUESS
        lines.append(head + (text if level == SURE else f"{text} ({low_note(answer)})" if level == LOW
                             else f"{NO_ANSWER} (the reader's best guess: {text})"))
        found = evidence(record, answer)
        if found is None:
            continue
        passage, sentence, span = found
        shown = sentence if span is None else sentence[:span[0]] + mark(sentence[span[0]:span[1]]) + sentence[span[1]:]
        source = "from" if sure else "best guess from"
        lines.append(f"  {source} \"{passage.get('title', '')}\" [{passage.get('id', '')}]: {shown}")
    return lines


# --- the log -------------------------------------------------------------------------------------

class TurnLog:
    """Appends one JSON line per finished turn and flushes it (``--log FILE``; None: no log). A log
    whose last line a killed session tore is repaired first, as ``--resume`` repairs its output (the
    torn line is cut off, with a warning), so the new turns never join it."""

    def __init__(self, path: str | None):
        self.fh: IO[bytes] | None = None
        if path:
            from ..jsonl import repair_output, scan_output

            try:
                os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
                done, good_end, recovered = scan_output(path)
                if os.path.exists(path) and (good_end != os.path.getsize(path) or recovered):
                    log.warning("chat: --log %s ended in a partly written turn (a killed session); cut it off, "
                                "%d whole turns kept", path, done)
                    repair_output(path, good_end, recovered)
                self.fh = open(path, "ab")
            except OSError as err:
                raise InputError(f"--log {path}: cannot write it ({err.strerror}); pass a writable path") from None
        self.written = 0

    def write(self, record: dict) -> None:
        if self.fh is not None:
            self.fh.write(exactjson.dumps(record) + b"\n")  # a typed record's integers as they came
            self.fh.flush()
        self.written += 1

    def close(self) -> None:
        if self.fh is not None:
            self.fh.close()


def read_log(path: str) -> Iterator[dict]:
    """The records of a chat log (one JSON object per line; blank lines ignored)."""
    from ..jsonl import open_input, read_records

    with open_input(path) as fh:
        for _, record in read_records(fh, required=("question",)):
            yield record


def replay_inputs(records: Iterable[dict]) -> Iterator[tuple[dict, str, str | None]]:
    """(question record, choice, selected) of each logged turn: what the person asked and chose,
    without what the stages added (``gold`` and the ``id`` stay)."""
    keep = ("id", "question", "gold")
    for record in records:
        chat = ((record.get("meta") or {}).get("chat") or {})
        choice = chat.get("choice") or ("option" if record.get("selected_option") is not None else "direct")
        yield {k: record[k] for k in keep if k in record}, choice, record.get("selected_option")
