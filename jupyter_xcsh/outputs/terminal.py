r"""Terminal output as plain text: escape sequences and control characters removed.

The patterns are data, ``escapes.json`` next to this file, so that the lab extension strips the
same sequences: its copy is generated from that file at build time.

Two readings of the same rules: ``sanitize`` drops every ``\r`` (for text that is not lines of
a terminal: a notebook's output summary, a progress message), ``terminal_text`` lets a carriage
return overwrite its line as a terminal and the lab do, so a progress bar shows its last state.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

__all__ = ["cut_escape_end", "cut_escape_start", "sanitize", "terminal_line", "terminal_text"]

#: The terminal escape sequences and control characters removed (the lab's too).
_ESCAPES_DATA = json.loads((Path(__file__).parent / "escapes.json").read_text(encoding="utf-8"))
# ANSI CSI, OSC, DCS/SOS/PM/APC and two-character (and nF) sequences, each with its terminator:
# an unterminated sequence does not match here and loses only its ESC to _CONTROLS below.
_ESCAPES = re.compile("|".join(_ESCAPES_DATA["escapes"]))
# C0 controls but TAB and LF, CR, DEL and C1 controls.
_CONTROLS = re.compile(_ESCAPES_DATA["controls"])
# An escape sequence begun but not finished at the end of a text (cut there), each kind of
# _ESCAPES: a CSI's parameters, an OSC or DCS string (up to the ESC of its ST), an nF's.
_UNFINISHED = re.compile(
    r"\x1b(?:\[[\x30-\x3f]*[\x20-\x2f]*|\][^\x07\x1b\x9c]*\x1b?|[PX^_][^\x1b\x9c]*\x1b?"
    r"|[\x20-\x2f]*)\Z"
)


def sanitize(text: str) -> str:
    r"""Return ``text`` with terminal escape sequences and control characters removed.

    Removed: ANSI CSI, OSC, DCS, SOS, PM and APC sequences; two-character ESC sequences (and the
    longer ones with intermediates, such as ``ESC ( B``); every ``\r``; C0 controls except TAB
    and LF; DEL; C1 controls. An escape sequence that never terminates loses only its ESC, so no
    visible text after it disappears.
    """
    return _CONTROLS.sub("", _ESCAPES.sub("", text))


def terminal_line(line: str) -> str:
    r"""One line (no ``\n``) as a terminal leaves it: escapes removed, ``\r`` overwriting.

    Carriage returns ending the line are dropped (``a\r\n`` is ``a``); another one starts the
    line over, so ``10%\r20%`` reads ``20%``.
    """
    if "\x1b" in line:
        line = _ESCAPES.sub("", line)
    if "\r" in line:
        line = line.rstrip("\r")
        line = line[line.rfind("\r") + 1 :]
    return _CONTROLS.sub("", line)


def terminal_text(text: str) -> str:
    r"""Text of several lines as a terminal leaves it (``terminal_line`` on each line)."""
    return "\n".join(terminal_line(line) for line in text.split("\n"))


def cut_escape_end(text: str) -> str:
    """``text`` cut before an escape sequence it ends inside (its end was cut off)."""
    if "\x1b" not in text[-4096:]:
        return text
    match = _UNFINISHED.search(text)
    return text[: match.start()] if match else text


def cut_escape_start(before: str, text: str) -> str:
    """``text`` without the rest of an escape sequence begun in ``before`` (cut off before it).

    ``before`` is what preceded ``text`` (its last few hundred characters are enough).
    """
    start = before.rfind("\x1b")
    if start < 0:
        return text
    match = _ESCAPES.match(before + text[:4096], start)
    if match is None or match.end() <= len(before):
        return text
    return text[match.end() - len(before) :]
