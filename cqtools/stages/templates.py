"""Prompt templates: every LM prompt a method sends is rendered from a template with named slots.

A template is a text file with one or more named parts, each opened by a line ``[[name]]``::

    [[instruction]]
    Decide whether each question is ambiguous.

    [[shot]]
    Q: {question}
    This question is ambiguous: {label}

Slots are ``{name}`` (Python's format syntax; a literal brace is doubled: ``{{``). A part's text runs
to the next ``[[...]]`` line; the one newline before that line belongs to the separator, not to the
part (write an empty line to end a part with a newline). cq's own wording lives in
``cqtools/stages/templates/<method>.txt``; ``--prompt FILE`` replaces a method's template by a
user's file (e.g. a paper's exact wording): a part the file does not define keeps cq's wording, a
part cq does not know or a slot the part cannot fill is a one-line error. The template's digest goes
into the run record (``prompts``) and the record's ``meta``.
"""
from __future__ import annotations

import hashlib
import re
import string
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError

DIRECTORY = Path(__file__).parent / "templates"
# Which methods read each built-in template (docs/methods.md's table; tests/test_templates.py checks
# that every file is listed here and read by the methods named).
USED_BY = {
    "clam": "`detect --method clam`, `gen-cq --method clam` / `clam-prompting`, `oracle --method clam`, "
            "`answer --mode dialogue`",
    "detect_llm": "`detect --method llm`",
    "disambig_first": "`disambiguate --method disambig-first`",
    "gencq_llm": "`gen-cq --method llm` (few-shot; `--zero-shot`: the `zero_shot` part)",
    "long": "`answer --mode long`",
    "oracle_llm": "`oracle --method llm` (`options`: picks an option; `free`: a free-form CQ)",
    "qd": "`disambiguate --method qd` (`--layout ambigqa`, `refuel`: the `*_ambigqa`, `*_refuel` parts)",
    "rac": "`disambiguate --method rac` (`verify`, labels: `--prune`)",
    "reader": "`answer --reader generative` (`single`: single and cq modes; `multi`; `verify_*`: `--verify`)",
    "toc": "`disambiguate --method toc` (and its long answer)",
}
_PART = re.compile(r"^\[\[([A-Za-z_][A-Za-z0-9_]*)\]\]$", re.M)


@dataclass(frozen=True)
class Template:
    """The parts of one method's prompt, by name; ``source`` names where they came from."""

    name: str
    parts: dict
    source: str
    digest: str

    def __call__(self, part: str, **slots) -> str:
        """Part ``part`` with its slots filled (an unfilled slot is a programming error: KeyError)."""
        return self.parts[part].format_map(slots)

    def has(self, part: str) -> bool:
        return part in self.parts

    def text(self, part: str) -> str:
        """A part's raw text (no slots), e.g. an instruction."""
        return self.parts[part]


def parse(text: str, where: str) -> dict:
    """``{part: text}`` of a template file."""
    marks = list(_PART.finditer(text))
    if not marks:
        raise InputError(f"{where}: a prompt template needs at least one [[part]] line "
                         "(see docs/methods.md, 'Bring your own prompt')")
    if text[:marks[0].start()].strip():
        raise InputError(f"{where}: text before the first [[part]] line; start the file with [[part]]")
    parts = {}
    for i, mark in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        body = text[mark.end() + 1:end]
        if body.endswith("\n"):  # the line break before the next [[part]] line (or the file's last)
            body = body[:-1]
        if mark.group(1) in parts:
            raise InputError(f"{where}: part [[{mark.group(1)}]] is defined twice")
        parts[mark.group(1)] = body
    return parts


def slots(text: str) -> set[str]:
    """The slot names a part uses. A slot is ``{name}`` only: a format spec (``{question:>300000000}``
    pads to any size), a conversion, an attribute or an index (``{question.upper}`` puts a method's
    repr in the prompt) is a ValueError."""
    found = set()
    for _, field, spec, conversion in string.Formatter().parse(text):
        if field is None:
            continue
        if not field.isidentifier() or spec or conversion:
            shown = field + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "")
            raise ValueError(f"slot {{{shown}}} is not a plain {{name}} (no format specs, conversions, "
                             "attributes or indexes)")
        found.add(field)
    return found


MAX_BYTES = 1 << 20  # a template file's size limit: far above any paper's prompt, far below a runaway one


def read_file(path: str) -> str:
    """A --prompt file's text: at most MAX_BYTES, UTF-8; anything else a one-line InputError."""
    where = f"--prompt {path}"
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_BYTES + 1)
    except OSError as err:
        raise InputError(f"{where}: cannot read it ({err.strerror or err})") from None
    if len(data) > MAX_BYTES:
        raise InputError(f"{where}: larger than {MAX_BYTES // 1024} KiB, too large for a prompt template; "
                         "pass the template file (its [[parts]]), not data")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InputError(f"{where}: not UTF-8 text (byte {err.start}: {data[err.start:err.start + 1]!r}); "
                         "save it as UTF-8") from None


def check_file(path, where: str = "") -> str:
    """What can be checked of a --prompt file before its method loads any model (the option's check):
    readable, bounded, UTF-8, [[parts]] and plain ``{name}`` slots. Whether the method's template has
    those parts and can fill those slots is checked by :func:`load`. Returns ``path``."""
    for part, body in parse(read_file(path), f"--prompt {path}").items():
        _slots_of(body, path, part)
    return path


def _slots_of(body: str, path: str, part: str) -> set[str]:
    try:
        return slots(body)
    except ValueError as err:
        raise InputError(f"--prompt {path}: part [[{part}]]: {err} (write a literal brace as {{{{ or }}}})") \
            from None


def builtin(name: str) -> Template:
    """cq's own template ``name`` (cqtools/stages/templates/<name>.txt)."""
    return _builtin(name)


_CACHE: dict = {}


def _builtin(name: str) -> Template:
    if name not in _CACHE:
        path = DIRECTORY / f"{name}.txt"
        text = path.read_text(encoding="utf-8")
        _CACHE[name] = Template(name, parse(text, str(path)), f"cq:{name}", _digest(text))
    return _CACHE[name]


def load(name: str, path: str | None = None) -> Template:
    """Method ``name``'s template: cq's own, or with ``path`` (``--prompt FILE``) the user's parts on
    top of it, each checked against the part's slots."""
    own = _builtin(name)
    if not path:
        return own
    text = read_file(path)
    given = parse(text, f"--prompt {path}")
    for part, body in given.items():
        if part not in own.parts:
            raise InputError(f"--prompt {path}: template {name} has no part [[{part}]] (its parts: "
                             f"{', '.join(own.parts)})")
        used = _slots_of(body, path, part)
        allowed = slots(own.parts[part])
        extra = sorted(used - allowed)
        if extra:
            raise InputError(f"--prompt {path}: part [[{part}]] uses slot {{{extra[0]}}}, which it cannot fill "
                             f"(its slots: {', '.join('{' + s + '}' for s in sorted(allowed)) or 'none'})")
    return Template(name, {**own.parts, **given}, path, _digest(text + "\0" + own.digest))


def labelled(tpl: Template, part: str) -> list[tuple[str, bool]]:
    """A part of ``True | question`` / ``False | question`` lines (few-shot examples), in order."""
    out = []
    for n, line in enumerate(tpl.text(part).splitlines(), start=1):
        if not line.strip():
            continue
        label, sep, question = line.partition("|")
        if not sep or label.strip() not in ("True", "False"):
            raise InputError(f"{tpl.source}: [[{part}]] line {n} must be 'True | question' or "
                             f"'False | question', not {line!r}")
        out.append((question.strip(), label.strip() == "True"))
    return out


def meta(tpl: Template) -> dict:
    """What a record's meta says of the template: nothing for cq's own wording (the run record's
    prompts version covers it, and records stay as they were), source and digest for a --prompt file."""
    return {} if tpl.source == f"cq:{tpl.name}" else {"template": tpl.source, "template_digest": tpl.digest}


def names() -> list[str]:
    """Every built-in template."""
    return sorted(p.stem for p in DIRECTORY.glob("*.txt"))


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


__all__ = ["Template", "load", "builtin", "labelled", "meta", "names", "parse", "slots", "DIRECTORY"]
