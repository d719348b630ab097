"""One cell's text in a notebook file, kept so that a large cell is never copied or encoded whole.

``document.py`` keeps each cell's exact text, and an edit splices into it only the members it
changes (``outputs.splice_members``). Every whole-string operation on a cell holds the GIL, so
the event loop waits for it whichever thread runs it: made anew as one string at each edit, a
cell with 50 MB of outputs was copied whole (~80 ms per copy on a loaded 2-core machine, three
copies per splice) after being scanned whole to find its members (~400 ms for 50 MB of output
lines). So a large cell's text, once spliced, is a tuple of parts of at most ``PART_CHARS``
characters each: a later splice makes new only the parts it touches and shares the others, the
save writes the parts one by one, and the text of a cell as it was goes to the lab's revert as
it is, in parts, rather than encoded again from the parsed cell.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from jupyter_xcsh.memory import hand_over

__all__ = [
    "PART_CHARS",
    "CellText",
    "joined",
    "splice",
    "text_chunks",
    "text_head",
    "text_length",
    "text_tail",
]

#: Most characters one part of a large cell's text holds (and one chunk written at a time).
PART_CHARS = 1 << 20

#: A cell's text: a string, or for a large cell spliced since it was read, its parts in order.
CellText = str | tuple[str, ...]


def text_length(text: CellText) -> int:
    """The length of ``text`` in characters."""
    return len(text) if isinstance(text, str) else sum(map(len, text))


def joined(text: CellText) -> str:
    """``text`` as one string (a copy of a large cell: only where it cannot be avoided)."""
    return text if isinstance(text, str) else "".join(text)


def text_chunks(text: CellText, size: int = PART_CHARS) -> Iterator[str]:
    """``text`` in consecutive slices of at most ``size`` characters (to encode and write)."""
    for part in (text,) if isinstance(text, str) else text:
        if len(part) <= size:
            yield part
            continue
        for start in range(0, len(part), size):
            yield part[start : start + size]


def text_head(text: CellText, size: int) -> str:
    """At least the first ``size`` characters of ``text`` (all of it when shorter)."""
    if isinstance(text, str):
        return text[:size]
    taken: list[str] = []
    got = 0
    for part in text:
        if got >= size:
            break
        taken.append(part)
        got += len(part)
    return "".join(taken)


def text_tail(text: CellText, size: int) -> tuple[str, int]:
    """At least the last ``size`` characters of ``text`` and where they start in it."""
    total = text_length(text)
    if isinstance(text, str):
        start = max(0, total - size)
        return text[start:], start
    taken: list[str] = []
    got = 0
    for part in reversed(text):
        if got >= size:
            break
        taken.append(part)
        got += len(part)
    return "".join(reversed(taken)), total - got


def splice(text: CellText, edits: Sequence[tuple[int, int, str]]) -> CellText:
    """``text`` with each ``(start, end, replacement)`` of ``edits`` made (spans of ``text``).

    The spans must not overlap. A text of at most ``2 * PART_CHARS`` characters stays a string
    (made as before: the common, small cell); a longer one becomes parts, sharing those of
    ``text`` that no edit touches, each new part at most ``PART_CHARS`` long.
    """
    ordered = sorted(edits)
    if isinstance(text, str) and len(text) <= 2 * PART_CHARS:
        for start, end, replacement in reversed(ordered):  # earlier spans stay valid
            text = text[:start] + replacement + text[end:]
        return text
    parts: list[str] = []
    at = 0
    for start, end, replacement in ordered:
        parts.extend(_between(text, at, start))
        parts.extend(text_chunks(replacement))
        at = end
    parts.extend(_between(text, at, text_length(text)))
    return tuple(_merged(parts))


def _between(text: CellText, start: int, end: int) -> Iterator[str]:
    """The text from ``start`` to ``end``, as parts of at most ``PART_CHARS`` (shared if whole)."""
    offset = 0
    for part in (text,) if isinstance(text, str) else text:
        part_end = offset + len(part)
        if part_end > start and offset < end:
            if offset >= start and part_end <= end and len(part) <= PART_CHARS:
                yield part  # untouched: shared, not copied
            else:
                lo, hi = max(start, offset) - offset, min(end, part_end) - offset
                for cut in range(lo, hi, PART_CHARS):
                    hand_over()  # a large cell is sliced on a worker thread: the GIL in turns
                    yield part[cut : min(cut + PART_CHARS, hi)]
        offset = part_end
        if offset >= end:
            return


def _merged(parts: list[str]) -> Iterator[str]:
    """``parts`` without empty ones, small neighbours joined (so parts do not multiply)."""
    run: list[str] = []
    size = 0
    for part in parts:
        if not part:
            continue
        if size + len(part) > PART_CHARS and run:
            yield "".join(run) if len(run) > 1 else run[0]
            run, size = [], 0
        run.append(part)
        size += len(part)
    if run:
        yield "".join(run) if len(run) > 1 else run[0]
