r"""What a caller (a model, most of the time) is shown of one execution's output: pure, no I/O.

Plain text first. Terminal escape sequences and control characters never reach a caller; the
patterns are data, ``escapes.json`` next to this file, so that the lab extension strips the
same sequences (its copy is generated from that file at build time). Two readings of the same
rules: ``sanitize`` drops every ``\r`` (for text that is not lines of a terminal: a notebook's
output summary, a progress message); ``terminal_line`` lets a carriage return overwrite its
line as a terminal and the lab do, so a progress bar shows its last state.

Then the cut. An output that fits is shown whole. One that does not is cut **on line
boundaries**: its first ``head_lines`` and last ``tail_lines`` lines, within ``max_bytes`` of
text shared between the two in proportion to their line counts, with one line in the gap saying
which lines were left out. Only a line longer than the whole share of its end (the first line of
the head, the last of the tail) is cut inside, at a character boundary, and says so where it is
cut; a single huge line keeps its start and its end.

Lines are numbered as a person and the artifact's pages count them: from 1, split on ``\n`` only;
a final newline ends the last line, it does not start another. Each line is made plain text by
``terminal_line`` after the cut, so a cut never falls inside an escape sequence and no escape
reaches the caller.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from jupyter_xcsh.outputs.sizes import format_size

__all__ = [
    "OutputView",
    "ViewLimits",
    "cut_escape_end",
    "cut_escape_start",
    "cut_notice",
    "render_view",
    "sanitize",
    "terminal_line",
    "terminal_text",
]

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


@dataclass(frozen=True)
class ViewLimits:
    """How much of an output is shown: bytes of text in all, and lines from each end.

    ``head_lines`` and ``tail_lines`` both 0 means no line limit: only ``max_bytes`` cuts, and
    the output keeps its tail.
    """

    max_bytes: int
    head_lines: int
    tail_lines: int

    @property
    def line_limited(self) -> bool:
        """Whether lines are counted at all."""
        return self.head_lines > 0 or self.tail_lines > 0

    @property
    def head_bytes(self) -> int:
        """The share of ``max_bytes`` the head may take (in proportion to its lines)."""
        if not self.line_limited:
            return 0
        return self.max_bytes * self.head_lines // (self.head_lines + self.tail_lines)

    @property
    def tail_bytes(self) -> int:
        """The rest of ``max_bytes``, for the tail."""
        return self.max_bytes - self.head_bytes

    @property
    def max_tail_lines(self) -> float:
        """Lines the tail may show (unbounded without line limits)."""
        return self.tail_lines if self.line_limited else math.inf


@dataclass(frozen=True)
class OutputView:
    """The text shown of an output, and which of its lines it shows.

    ``text`` holds the lines shown with their markers, no notice. ``shown`` lists the ranges of
    line numbers shown (wholly or in part), ``content`` the text shown without the markers (for
    the counters).
    """

    text: str
    truncated: bool
    shown: tuple[tuple[int, int], ...] = ()
    lines_cut: bool = False
    content: str = ""


def _size(text: str) -> int:
    return len(text.encode("utf-8"))


def _clip_start(text: str, size: int) -> str:
    """The longest start of ``text`` within ``size`` UTF-8 bytes (never half a character)."""
    if size <= 0:
        return ""
    return text.encode("utf-8")[:size].decode("utf-8", "ignore")


def _clip_end(text: str, size: int) -> str:
    """The longest end of ``text`` within ``size`` UTF-8 bytes (never half a character)."""
    if size <= 0:
        return ""
    return text.encode("utf-8")[-size:].decode("utf-8", "ignore")


def _lines_word(first: int, last: int) -> str:
    return f"line {first}" if first == last else f"lines {first}-{last}"


@dataclass
class _Side:
    """The lines available at one end of the output, numbered, with their partial ends."""

    lines: Sequence[str]
    first_number: int
    #: The first line misses its start (the tail's window began inside it).
    partial_first: bool = False
    #: The last line misses its end (the head's window ended inside it).
    partial_last: bool = False


def render_view(
    limits: ViewLimits,
    *,
    total_lines: int,
    whole: str | None = None,
    head: str = "",
    tail: str = "",
    tail_starts_line: bool = True,
    before_tail: str = "",
) -> OutputView:
    r"""Choose what is shown of an output of ``total_lines`` lines.

    ``whole`` is the output's raw text when all of it is in memory; otherwise ``head`` is its
    start (ending inside a line or after a ``\n``) and ``tail`` its end, which begins at a line
    start when ``tail_starts_line``, else after ``before_tail`` (its last characters, to skip
    the rest of an escape sequence cut there). A final newline of the output is part of
    ``whole`` or ``tail``.
    """
    if whole is not None:
        lines = whole.split("\n")
        ends_with_newline = whole.endswith("\n")
        if ends_with_newline or not whole:
            lines.pop()
        plain = _fits(limits, lines, ends_with_newline)
        if plain is not None:
            return OutputView(plain, False, content=plain)
        head_side = tail_side = _Side(lines, 1)
        total_lines = len(lines)
    else:
        head_lines = head.split("\n")
        partial_last = head_lines[-1] != ""
        if partial_last:
            head_lines[-1] = cut_escape_end(head_lines[-1])
        else:
            head_lines.pop()
        head_side = _Side(head_lines, 1, partial_last=partial_last)
        tail_lines = tail.split("\n")
        ends_with_newline = tail.endswith("\n")
        if ends_with_newline:
            tail_lines.pop()
        if not tail_starts_line and tail_lines:
            tail_lines[0] = cut_escape_start(before_tail, tail_lines[0])
        tail_side = _Side(
            tail_lines,
            total_lines - len(tail_lines) + 1,
            partial_first=not tail_starts_line,
        )
    return _cut(limits, head_side, tail_side, total_lines, ends_with_newline)


def _fits(limits: ViewLimits, lines: list[str], ends_with_newline: bool) -> str | None:
    """The whole output as plain text when it is within the limits, else None."""
    if limits.line_limited and len(lines) > limits.head_lines + limits.tail_lines:
        return None
    budget = limits.max_bytes + (0 if ends_with_newline else 1)  # the newlines between lines
    plain: list[str] = []
    for line in lines:
        text = terminal_line(line)
        budget -= _size(text) + 1
        if budget < 0:
            return None
        plain.append(text)
    return "\n".join(plain) + ("\n" if ends_with_newline else "")


@dataclass
class _Shown:
    """The lines one end of a cut output shows within its bytes, taken one at a time."""

    budget: int  # bytes left
    number: int  # the number of the last line taken (whole or in part)
    cut: bool = False  # whether that line is cut (part of it left out)
    shown: list[str] = field(default_factory=list)  # the lines shown, markers included
    content: list[str] = field(default_factory=list)  # what they show, no markers

    def take(
        self, number: int, line: str, partial: bool, clip: Callable[[str, int], str], marker: str
    ) -> bool:
        """Take line ``number`` whole if it fits and is whole; whether to take the next.

        A line that does not fit, the first of this end, is shown clipped (``clip``, after
        ``marker``); then nothing more is taken.
        """
        size = _size(line) + 1
        if size <= self.budget and not partial:
            self.shown.append(line)
            self.content.append(line)
            self.budget -= size
            self.number = number
            return True
        part = clip(line, self.budget - 1) if not self.shown else ""
        if part:
            self.shown.append(marker + part)
            self.content.append(part)
            self.number, self.cut = number, True
        return False


def _cut(
    limits: ViewLimits, head: _Side, tail: _Side, total_lines: int, ends_with_newline: bool
) -> OutputView:
    heads = _Shown(limits.head_bytes, number=0)
    for offset in range(min(limits.head_lines, len(head.lines))):
        line = terminal_line(head.lines[offset])
        partial = head.partial_last and offset == len(head.lines) - 1
        if not heads.take(head.first_number + offset, line, partial, _clip_start, ""):
            break
    shown_head, content, last_head = heads.shown, heads.content, heads.number
    head_cut = heads.cut

    tails = _Shown(limits.tail_bytes, number=total_lines + 1)  # lines reversed while collecting
    for offset in range(len(tail.lines) - 1, -1, -1):
        number = tail.first_number + offset
        if number < last_head or (number == last_head and not head_cut):
            break
        if len(tails.shown) >= limits.max_tail_lines:
            break
        line = terminal_line(tail.lines[offset])
        partial = tail.partial_first and offset == 0
        if number == last_head:  # the head shows this line's start: show its end beside it
            if not partial and _size(line) <= _size(content[-1]) + tails.budget:
                shown_head[-1] = content[-1] = line
                head_cut = False
            else:
                end = _clip_end(line, tails.budget - 1)
                shown_head[-1] += f" [... middle of line {number} left out ...] {end}"
                content[-1] += end
            tails.number = number
            break
        marker = f"[... start of line {number} left out ...] "
        if not tails.take(number, line, partial, _clip_end, marker):
            break
    shown_tail, tail_content = tails.shown, tails.content
    first_tail, tail_cut = tails.number, tails.cut
    shown_tail.reverse()
    tail_content.reverse()

    if head_cut and first_tail != last_head:
        shown_head[-1] += f" [... rest of line {last_head} left out ...]"
    gap: list[str] = []
    if first_tail > last_head + 1:
        gap.append(f"[... {_lines_word(last_head + 1, first_tail - 1)} left out ...]")
    newline = "\n" if ends_with_newline and first_tail <= total_lines else ""
    text = "\n".join(shown_head + gap + shown_tail) + newline
    shown: list[tuple[int, int]] = []
    if last_head:
        shown.append((1, last_head))
    if first_tail <= total_lines:
        if shown and first_tail <= shown[-1][1] + 1:
            shown[-1] = (1, total_lines)
        else:
            shown.append((first_tail, total_lines))
    return OutputView(
        text,
        True,
        tuple(shown),
        lines_cut=head_cut or tail_cut,
        content="\n".join(content + tail_content) + newline,
    )


def cut_notice(
    view: OutputView, total_lines: int, total_bytes: int, artifact_id: str | None
) -> str:
    """The one line put before a cut output: its size, the lines shown, where the rest is."""
    ranges = " and ".join(f"{a}-{b}" if a < b else str(a) for a, b in view.shown)
    word = "line" if len(view.shown) == 1 and view.shown[0][0] == view.shown[0][1] else "lines"
    showing = f"showing {word} {ranges}" if ranges else "showing nothing"
    if view.lines_cut:
        showing += " (long lines cut)"
    lines = "1 line" if total_lines == 1 else f"{total_lines} lines"
    text = f"[Output truncated: {lines}, {format_size(total_bytes)}; {showing}."
    if artifact_id is None:
        return text + " The rest was not kept]"
    return (
        text + f" Full output: artifact://{artifact_id} (read it with the artifact tool, "
        "offset/limit in lines)]"
    )
