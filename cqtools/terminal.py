"""Text from records on its way to a terminal: control characters made visible.

Corpora and shared JSONL are untrusted. Printed raw, their escape sequences act on the reader's
terminal: OSC 52 writes the clipboard, OSC 8 disguises links, CSI 2J clears the screen, a CR
overwrites what was printed before it. Every place that prints records' text for people (`cq show`,
`cq chat`, log lines and one-line errors on stderr) passes it through :func:`safe`, which writes
each such character as a visible escape (``\\x1b``, ``\\r``, ``\\u202e``) instead.
"""
from __future__ import annotations

import re

# C0 controls but tab and newline, DEL, C1 controls, and the bidirectional overrides and isolates
# that reorder what is shown ("Trojan source"); line and paragraph separators
_CONTROL = "\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
_LINES = re.compile(f"[{_CONTROL}]")
_ONE_LINE = re.compile(f"[{_CONTROL}\n\t]")


def _visible(match: re.Match) -> str:
    code = ord(match.group())
    return {9: "\\t", 10: "\\n", 13: "\\r"}.get(code) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def safe(text, one_line: bool = False, keep: tuple[str, ...] = ()) -> str:
    """``text`` (any object: ``str()`` of it) with its control characters shown as escapes; newlines
    and tabs stay unless ``one_line``. ``keep``: exact sequences of our own (a style we add) left as
    they are."""
    text = str(text)
    pattern = _ONE_LINE if one_line else _LINES
    if not keep:
        return pattern.sub(_visible, text)
    parts = re.split("(" + "|".join(map(re.escape, keep)) + ")", text)
    return "".join(part if i % 2 else pattern.sub(_visible, part) for i, part in enumerate(parts))
