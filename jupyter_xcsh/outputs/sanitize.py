"""Make terminal output safe to show as plain text: no escape sequences, no control characters."""

from __future__ import annotations

import re

__all__ = ["sanitize"]

# Terminal escape sequences (ECMA-48), 7-bit forms. Each alternative needs its terminator, so an
# unterminated sequence does not match here and loses only its ESC to _CONTROLS below.
_ESCAPES = re.compile(
    r"""
    \x1b\[ [\x30-\x3f]* [\x20-\x2f]* [\x40-\x7e]           # CSI: params, intermediates, final
    | \x1b\] [^\x07\x1b\x9c]* (?:\x07|\x1b\\|\x9c)          # OSC: ends with BEL or ST
    | \x1b[PX^_] [^\x1b\x9c]* (?:\x1b\\|\x9c)               # DCS, SOS, PM, APC: end with ST
    | \x1b (?![\[\]PX^_]) [\x20-\x2f]* [\x30-\x7e]          # two-character (and nF) sequences
    """,
    re.VERBOSE,
)

# C0 controls but TAB and LF, CR, DEL and C1 controls.
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def sanitize(text: str) -> str:
    r"""Return ``text`` with terminal escape sequences and control characters removed.

    Removed: ANSI CSI, OSC, DCS, SOS, PM and APC sequences; two-character ESC sequences (and the
    longer ones with intermediates, such as ``ESC ( B``); every ``\r``; C0 controls except TAB
    and LF; DEL; C1 controls. An escape sequence that never terminates loses only its ESC, so no
    visible text after it disappears.
    """
    return _CONTROLS.sub("", _ESCAPES.sub("", text))
