"""A judgement study in the browser (``cq view --study KIND``): its items, each annotator's blind,
shuffled order, the validation of a submitted judgement, and the append-only JSONL log of them.

Kinds (the papers' protocols): ``askcq-preference`` (AskCQ: the clarifying question with its options'
answers vs the disambiguated questions with theirs, or equal, and a rationale), ``clam-turns`` (CLAM
Table 2: was the CQ right, did the user give the right information, was the answer right) and
``pairwise`` (system A vs system B on the same question, or equal, and a rationale)."""
from __future__ import annotations

import fcntl
import hashlib
import os
import random
import re
import stat
import time
from dataclasses import dataclass, field

import orjson

from ..errors import InputError
from ..registry import option
from .index import RunIndex

KINDS = ("askcq-preference", "clam-turns", "pairwise")
# what the two presentations are, in the order before the per-annotator flip: a judgement names the shown
# position ("first", "second"); the log names what it was (these), so the annotator never sees which is which
SIDES = {"askcq-preference": ("cq", "dqs"), "pairwise": ("a", "b")}
TURN_QUESTIONS = (("cq_right", "Was asking this clarifying question (or not asking one) right?"),
                  ("user_right", "Did the user's reply give the right information?"),
                  ("answer_right", "Is the final answer right?"))
ANNOTATOR = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 _.-]{0,39}$")
MAX_RATIONALE = 2000


@dataclass(frozen=True)
class ViewSettings:
    """cq view's settings (its flags are generated from here; Python callers get the same defaults)."""

    host: str = option("127.0.0.1", "Address to listen on; anything but localhost needs --allow-remote.")
    port: int = option(8000, "Port to listen on; 0: a free one (the address is printed).", min=0, max=65535)
    study: str | None = option(None, "Collect human judgements of the run(s) in the browser: askcq-preference (CQ "
                                     "vs DQs vs equal), clam-turns (CLAM's per-turn judgements) or pairwise (run A "
                                     "vs run B); needs --judgements.", choices=KINDS)
    judgements: str | None = option(None, "--study: the JSONL file each judgement is appended to at once "
                                          "(cq score --task judgements reads it).", metavar="FILE")
    seed: int = option(0, "--study: the seed of each annotator's shuffled order and sides.")


class Rejected(ValueError):
    """A judgement the study refuses (the server answers 400 with the message)."""


def check_annotator(name: str) -> str:
    name = (name or "").strip()
    if not ANNOTATOR.match(name):
        raise Rejected("an annotator name is 1 to 40 letters, digits, spaces, '_', '.' or '-', starting with a "
                       "letter or digit")
    return name


@dataclass
class Study:
    kind: str
    runs: list[RunIndex]
    log_path: str
    seed: int = ViewSettings.seed
    items: list[str] = field(init=False)

    def __post_init__(self):
        if self.kind not in KINDS:
            raise InputError(f"--study {self.kind}: unknown; one of {', '.join(KINDS)}")
        if self.kind == "pairwise" and len(self.runs) != 2:
            raise InputError("--study pairwise compares two runs: give two files (system A, then B)")
        self.items = self._eligible()
        if not self.items:
            raise InputError(f"--study {self.kind}: no record of the run fits it ({self._needs()})")
        self.item_set = set(self.items)
        for run in self.runs:
            if os.path.exists(self.log_path) and os.path.samefile(run.path, self.log_path):
                raise InputError(f"--judgements {self.log_path} is the run {run.name} itself; pass a file of its own")
        self.log = JudgementLog(self.log_path, self.kind)

    def _needs(self) -> str:
        return {"askcq-preference": "a record needs a 'cq' and predicted or gold DQs",
                "clam-turns": "any record", "pairwise": "ids in both runs"}[self.kind]

    def _eligible(self) -> list[str]:
        a = self.runs[0]
        if self.kind == "pairwise":
            return [e.id for e in a.entries if e.id in self.runs[1].position]
        if self.kind == "askcq-preference":
            return [e.id for e in a.entries if e.has_cq and e.has_dqs]
        return [e.id for e in a.entries]

    def order(self, annotator: str) -> list[str]:
        """The items in ``annotator``'s own order: shuffled with (seed, name), the same on every visit."""
        items = list(self.items)
        random.Random(f"{self.seed}\0{annotator}").shuffle(items)
        return items

    def flipped(self, annotator: str, item: str) -> bool:
        """Whether ``annotator`` sees this item's second presentation first (fixed per annotator and item)."""
        digest = hashlib.sha256(f"{self.seed}\0{annotator}\0{item}".encode()).digest()
        return bool(digest[0] & 1)

    def next_item(self, annotator: str) -> str | None:
        done = self.log.judged(annotator)
        return next((item for item in self.order(annotator) if item not in done), None)

    def judgement(self, form: dict[str, str]) -> dict:
        """The log record of a submitted form, or :class:`Rejected` (a forged or malformed judgement)."""
        annotator = check_annotator(form.get("annotator", ""))
        item = form.get("item", "")
        if item not in self.item_set:
            raise Rejected("no such item in this study")
        rationale = form.get("rationale", "").strip()
        if len(rationale) > MAX_RATIONALE:
            raise Rejected(f"a rationale is at most {MAX_RATIONALE} characters")
        question = self.runs[0].entries[self.runs[0].position[item]].question  # cq score reads a question
        record = {"id": f"{item}@{annotator}", "item": item, "question": question, "annotator": annotator,
                  "study": self.kind,
                  "runs": [run.name for run in self.runs], "seed": self.seed}
        if self.kind in SIDES:
            first, second = SIDES[self.kind][::-1] if self.flipped(annotator, item) else SIDES[self.kind]
            shown = {"first": first, "second": second, "equal": "equal"}
            if form.get("label") not in shown:
                raise Rejected("label must be first, second or equal")
            record.update(label=shown[form["label"]], shown_first=first, rationale=rationale)
        else:
            answers = {}
            for key, _ in TURN_QUESTIONS:
                if form.get(key) not in ("yes", "no"):
                    raise Rejected(f"{key} must be yes or no")
                answers[key] = form[key] == "yes"
            record.update(judgements=answers, rationale=rationale)
        record["time"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        return record


class JudgementLog:
    """The study's JSONL file: one line per judgement, appended under an exclusive lock (``flock``) in
    one write and fsynced before the page answers, so two annotators, two servers or a reload never
    lose or duplicate one; an (annotator, item) already there is refused, and so is a judgement of
    another study than the file already holds (checked on every append, not only at start). Nothing
    that cq did not write is ever cut: a last line without its newline is kept (a whole judgement is
    read and the next one starts on a line of its own; anything else is refused, to be fixed by hand);
    only an append of ours that failed half-way is taken back. Only a regular file is accepted (not
    /dev/null, a FIFO or a device: each would acknowledge judgements it does not keep, or hang)."""

    def __init__(self, path: str, study: str | None = None):
        self.path, self.study = path, study
        self.seen: set[tuple[str, str]] = set()
        self.kinds: set = set()  # the studies its judgements are of
        self.read_to = self.lines = 0
        self.open_line = False  # the file ends in a whole judgement without its newline
        try:
            mode = os.stat(path).st_mode
        except FileNotFoundError:
            mode = None
        except OSError as err:
            raise InputError(f"--judgements {path}: cannot read it ({err.strerror}); pass a writable path") from None
        if mode is not None and not stat.S_ISREG(mode):
            raise InputError(f"--judgements {path} is not a regular file (a device, FIFO or directory keeps no "
                             "judgements); pass the path of a file")
        try:
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
            with open(path, "ab"):
                pass
            with self._locked() as fh:
                self._catch_up(fh)
        except OSError as err:
            raise InputError(f"--judgements {path}: cannot write it ({err.strerror}); pass a writable path") from None

    def _locked(self):
        fh = open(self.path, "r+b")
        fcntl.flock(fh, fcntl.LOCK_EX)  # released when fh closes
        return fh

    def _catch_up(self, fh) -> None:
        """Read the lines appended since last time (by this process or another)."""
        fh.seek(self.read_to)
        data = fh.read()
        whole = data.rfind(b"\n") + 1
        tail = data[whole:]
        if tail.strip():
            if not isinstance(_judgement(tail), dict):
                raise InputError("the last line has no newline and is not a judgement (a write torn by a crash, "
                                 "or an edit): fix or remove it by hand, or pass another --judgements",
                                 where=f"{self.path} line {self.lines + len(data[:whole].splitlines()) + 1}")
            whole = len(data)
        self.open_line = bool(tail.strip()) or (self.open_line and not data)
        for line in data[:whole].splitlines():
            self.lines += 1
            if not line.strip():
                continue
            record = _judgement(line)
            if not isinstance(record, dict):
                raise InputError("not a judgement (a JSON object); fix or remove that line, or pass another "
                                 "--judgements", where=f"{self.path} line {self.lines}")
            self.seen.add((record.get("annotator"), record.get("item")))
            self.kinds.add(record.get("study"))
        self.read_to += whole
        other = self.kinds - {self.study} if self.study else set()
        if other:
            raise InputError(f"--judgements {self.path} holds judgements of another study "
                             f"({', '.join(sorted(map(str, other)))}); pass a file of its own for --study {self.study}")

    def judged(self, annotator: str) -> set[str]:
        with self._locked() as fh:
            self._catch_up(fh)
        return {item for name, item in self.seen if name == annotator}

    def append(self, record: dict) -> bool:
        """Write ``record``; False (nothing written) when its annotator already judged its item. An
        :class:`InputError` when the file now holds another study's judgements or cannot be written
        (then nothing of ``record`` is left in it)."""
        key = (record["annotator"], record["item"])
        with self._locked() as fh:
            self._catch_up(fh)
            if key in self.seen:
                return False
            line = (b"\n" if self.open_line else b"") + orjson.dumps(record) + b"\n"
            end = fh.seek(0, os.SEEK_END)
            try:
                fh.write(line)
                fh.flush()
                os.fsync(fh.fileno())
            except OSError as err:
                fh.truncate(end)  # only the bytes this call wrote
                raise InputError(f"--judgements {self.path}: cannot write the judgement ({err.strerror}); nothing "
                                 "of it was kept, the earlier ones are intact") from None
            self.open_line = False
            self.seen.add(key)
            self.kinds.add(record.get("study"))
            self.read_to = end + len(line)
            self.lines += 1
        return True


def _judgement(line: bytes):
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
