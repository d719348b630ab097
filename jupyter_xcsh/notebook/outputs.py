"""The outputs of runs in place, in a notebook: the cell found again, its outputs stored. Pure.

A run in place sends a cell, waits for the kernel, and only then writes what came
back, while a person may have moved, changed or deleted the cell meanwhile. So each write finds
the cell again: by its id, or — in a notebook whose cells have no ids (nbformat < 4.5) — at its
index, and only while that cell still holds the source that was sent (else another cell has
taken its place). A cell gone, or no longer code, gets nothing.

The change itself is the document's ``set_outputs``: the file changes only the bytes of the
cell's ``outputs`` and ``execution_count`` (:func:`splice_members`, below); the live document
of a collaboration room appends to a growing stream in the cell's own output list
(``shared.py``). Neither changes a ``sourceHash`` or the notebook's ``revision``.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Any

import nbformat
from nbformat.v4.rwbase import split_lines

from jupyter_xcsh.notebook.model import CellDocument, CellKey, index_of_id, revision_of
from jupyter_xcsh.notebook.storage.celltext import (
    PART_CHARS,
    CellText,
    joined,
    splice,
    text_head,
    text_length,
    text_tail,
)

__all__ = [
    "CellPlace",
    "SelectedCell",
    "find_cell",
    "selected_cell",
    "set_cell_outputs",
    "splice_members",
    "stored_outputs",
]


@dataclass(frozen=True)
class SelectedCell:
    """One cell a run addresses: where it was, its id, its type and its source then."""

    index: int
    cell_id: str | None
    cell_type: str
    source: str


@dataclass(frozen=True)
class CellPlace:
    """Where a run's cell is now (None: gone, or no longer code) and the notebook around it."""

    cell: SelectedCell | None
    total_cells: int
    revision: str


def selected_cell(keys: Sequence[CellKey], index: int) -> SelectedCell:
    """The cell at ``index`` of a notebook whose cell keys are ``keys``, as a run sees it."""
    key = keys[index]
    return SelectedCell(index, key.cell_id, key.cell_type, key.source)


def find_cell(document: CellDocument, cell: SelectedCell, *, same_source: bool) -> CellPlace:
    """Find a run's cell again: by id, else at its index (holding the same source when asked)."""
    keys = document.cell_keys()
    index: int | None
    if cell.cell_id is not None:
        index = index_of_id(document, cell.cell_id)
    else:
        index = cell.index if cell.index < len(keys) else None
        if index is not None and same_source and keys[index].source != cell.source:
            index = None  # another cell took its place (one was inserted or deleted above it)
    now = None if index is None else selected_cell(keys, index)
    return CellPlace(now, len(keys), revision_of(document))


def set_cell_outputs(
    document: CellDocument,
    cell: SelectedCell,
    outputs: list[dict[str, Any]],
    execution_count: int | None,
    *,
    running: bool = False,
) -> CellPlace:
    """Store a run's ``outputs`` and ``execution_count`` in its cell, found again.

    ``running``: the cell still runs (a live document shows it running). Nothing is written
    when the cell is gone or no longer code; the place then says ``cell=None``.
    """
    place = find_cell(document, cell, same_source=cell.cell_id is None)
    if place.cell is None or place.cell.cell_type != "code":
        return CellPlace(None, place.total_cells, place.revision)
    document.set_outputs(place.cell.index, outputs, execution_count, running=running)
    return place


# -- the file's text ---------------------------------------------------------------------------

_WHITESPACE = re.compile(r"[ \t\n\r]*")
_SCAN = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def stored_outputs(outputs: list[dict[str, Any]]) -> Any:
    """``outputs`` as Jupyter writes them in a file: multi-line strings split into lines."""
    cell = {"cell_type": "code", "outputs": copy.deepcopy(outputs)}
    notebook = nbformat.from_dict({"cells": [cell]})  # type: ignore[no-untyped-call]
    return split_lines(notebook).cells[0].outputs  # type: ignore[no-untyped-call]


def _skip(text: str, index: int) -> int:
    return _WHITESPACE.match(text, index).end()  # type: ignore[union-attr]


@dataclass(frozen=True)
class _Member:
    """One member of a JSON object's text: its key, the text around its colon, its value."""

    key: str
    colon: str
    start: int  # where the value's text starts
    end: int  # and ends
    value: Any


def _scan_members(
    text: str, index: int, stop: Collection[str] = ()
) -> tuple[list[_Member], int | None]:
    """The members of the object ``text`` holds, from the key whose quote is at ``index``.

    Up to the object's end, whose ``}`` index is returned; or, given ``stop``, only until every
    key of ``stop`` was read (None then). Raises ``ValueError``, ``IndexError`` or
    ``StopIteration`` where ``text`` is not such an object (or is cut short).
    """
    members: list[_Member] = []
    wanted = set(stop)
    while True:
        if text[index] != '"':
            raise ValueError(f"expected a key at character {index}")
        key, after = scanstring(text, index + 1)
        colon = _skip(text, after)
        if text[colon] != ":":
            raise ValueError(f"expected ':' at character {colon}")
        start = _skip(text, colon + 1)
        value, end = _SCAN(text, start)
        index = _skip(text, end)
        separator = text[index]  # past a value cut short by the end of ``text``: IndexError
        members.append(_Member(key, text[after:start], start, end, value))
        wanted.discard(key)
        if stop and not wanted:
            return members, None
        if separator == "}":
            return members, index
        if separator != ",":
            raise ValueError(f"expected ',' or '}}' at character {index}")
        index = _skip(text, index + 1)


def _members(text: str) -> tuple[dict[str, tuple[int, int]], dict[str, str]]:
    """The value span of each top-level key of the JSON object ``text``, and each key's colon."""
    index = _skip(text, 1)
    if text[index] == "}":
        return {}, {}
    members, _ = _scan_members(text, index)
    return {m.key: (m.start, m.end) for m in members}, {m.key: m.colon for m in members}


def _line_indent(text: str, index: int) -> str:
    line_start = text.rfind("\n", 0, index) + 1
    return _WHITESPACE.match(text, line_start).group()  # type: ignore[union-attr]


def _dumps(value: Any, colon: str, key_indent: str | None, closing_indent: str) -> str:
    """``value`` written as the object around it is (Jupyter: sorted keys, indent 1).

    ``key_indent``: the indentation of the value's key (None: the object is on one line);
    ``closing_indent``: that of the object's closing brace.
    """
    key_sep = colon if "\n" not in colon else ": "
    if key_indent is None:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", key_sep))
    unit = key_indent[len(closing_indent) :] or " "
    dumped = json.dumps(
        value, ensure_ascii=False, sort_keys=True, indent=unit, separators=(",", key_sep)
    )
    return dumped.replace("\n", "\n" + key_indent)


#: A cell's text up to this long (characters) is scanned whole to find its members.
SCAN_WHOLE_CHARS = PART_CHARS
#: The part of a large cell's text first looked at from either end, in characters (grown 4x
#: until the members wanted are found there).
LOOK_CHARS = 64 * 1024
#: A member's value this large (characters, roughly) is not scanned when it can be avoided.
HEAVY_CHARS = 64 * 1024


def splice_members(
    text: CellText, values: Mapping[str, Any], old: Mapping[str, Any] | None = None
) -> CellText | None:
    """The JSON object ``text`` with the values of ``values``' keys replaced, nothing else.

    Each new value is written as the text around it is (its indentation, its separators);
    every other byte stays. None when one of the keys is missing from ``text``. ``old``: the
    object ``text`` holds, parsed, when known: in a large text (a cell with megabytes of
    outputs) only the members on one side of the large ones are then scanned (``celltext.py``).
    """
    if not values:
        return text
    found = None
    if old is not None and text_length(text) > SCAN_WHOLE_CHARS:
        found = _find_members(text, values, old)
    if found is None:  # a small text, or one whose members are not where ``old`` says
        whole = joined(text)
        spans, colons = _members(whole)
        if not all(key in spans for key in values):
            return None
        closing = _line_indent(whole, whole.rfind("\n") + 1)
        found = {}
        for key in values:
            start, end = spans[key]
            indent = None if "\n" not in whole else _line_indent(whole, start)
            found[key] = (start, end, colons[key], indent, closing)
    edits = []
    for key, (start, end, colon, indent, closing) in found.items():
        edits.append((start, end, _dumps(values[key], colon, indent, closing)))
    return splice(text, edits)


#: Where a member's value is in a cell's text, as ``splice_members`` writes a new one there:
#: ``(start, end, colon, key indentation or None, closing brace's indentation)``.
_Place = tuple[int, int, str, str | None, str]


def _find_members(
    text: CellText, values: Mapping[str, Any], old: Mapping[str, Any]
) -> dict[str, _Place] | None:
    """Where the members ``values`` replaces are in the large object ``text`` holds (``old``).

    The members before the last one replaced are scanned from the start, or those from the
    first one replaced on from the end, whichever side holds less (``HEAVY_CHARS``-capped
    estimates from ``old``): the outputs of a cell whose source is edited are never scanned.
    None when ``text`` does not hold the members ``old`` says, in that order.
    """
    keys = list(old)
    if not all(key in old for key in values):
        return None
    if any(_size_at_least(old[key], HEAVY_CHARS) > HEAVY_CHARS for key in values):
        return None  # a large value replaced (a run's outputs): it is scanned whole anyway
    at = sorted(keys.index(key) for key in values)
    first, last = at[0], at[-1]
    weights = [0 if key in values else _size_at_least(old[key], HEAVY_CHARS) for key in keys]
    if first > 0 and sum(weights[first:]) < sum(weights[: last + 1]):
        return _members_from_end(text, keys[first:], values, old)
    return _members_from_start(text, values)


def _members_from_start(text: CellText, values: Mapping[str, Any]) -> dict[str, _Place] | None:
    """``_find_members`` scanning from the object's start, on as much text as it takes."""
    size = LOOK_CHARS
    _, closing = _closing_line(text)
    while True:
        head = text_head(text, size)
        whole = len(head) >= text_length(text)
        try:
            index = _skip(head, 1)
            members, _ = _scan_members(head, index, stop=values.keys())
        except (ValueError, IndexError, StopIteration):
            if whole:
                return None
            size *= 4
            continue
        found: dict[str, _Place] = {}
        for member in members:
            if member.key in values:
                indent = None if "\n" not in head else _line_indent(head, member.start)
                found[member.key] = (member.start, member.end, member.colon, indent, closing)
        return found


def _members_from_end(
    text: CellText, keys: list[str], values: Mapping[str, Any], old: Mapping[str, Any]
) -> dict[str, _Place] | None:
    """``_find_members`` from the end: the members ``keys`` (the object's last ones).

    Their first key is searched backwards in the text's tail; a place counts only where the
    members read from there are exactly ``keys``, equal to ``old``'s, up to the object's closing
    brace at the end of the text (a key of the same name inside an earlier value fails that).
    """
    quoted = json.dumps(keys[0], ensure_ascii=False)
    total = text_length(text)
    size = LOOK_CHARS
    while True:
        tail, offset = text_tail(text, size)
        whole = offset == 0
        index = tail.rfind(quoted)
        while index >= 0:
            members = _members_at(tail, index, keys, old)
            if members is not None:
                _, closing = _closing_line(tail)
                found: dict[str, _Place] = {}
                for member in members:
                    if member.key in values:
                        indent = None if "\n" not in tail else _line_indent(tail, member.start)
                        start, end = offset + member.start, offset + member.end
                        found[member.key] = (start, end, member.colon, indent, closing)
                return found
            index = tail.rfind(quoted, 0, index)
        if whole or size >= total:
            return None
        size *= 4


def _members_at(
    tail: str, index: int, keys: list[str], old: Mapping[str, Any]
) -> list[_Member] | None:
    """The members ``keys`` read from the key at ``index`` of the text's ``tail``, if they are."""
    escapes = index
    while escapes > 0 and tail[escapes - 1] == "\\":
        escapes -= 1
    if (index - escapes) % 2:
        return None  # an escaped quote inside a string
    before = index - 1
    while before >= 0 and tail[before] in " \t\n\r":
        before -= 1
    if before < 0 or tail[before] != ",":
        return None  # not a member after another (or its line starts before the tail)
    if tail.rfind("\n", 0, index) < 0 and "\n" in tail:
        return None  # its indentation is not in the tail
    try:
        members, close = _scan_members(tail, index)
    except (ValueError, IndexError, StopIteration):
        return None
    if close != len(tail) - 1 or [m.key for m in members] != keys:
        return None
    if any(m.value != old[m.key] for m in members):
        return None
    return members


def _closing_line(text: CellText) -> tuple[str, str]:
    """The last line of ``text`` and its indentation (that of the object's closing brace)."""
    tail, _ = text_tail(text, 256)
    line = tail[tail.rfind("\n") + 1 :]
    return line, _WHITESPACE.match(line).group()  # type: ignore[union-attr]


def _size_at_least(value: Any, cap: int) -> int:
    """Roughly how many characters ``value`` takes as JSON, counted no further than ``cap``."""
    total = 0
    pending: list[Iterator[Any]] = [iter((value,))]
    while pending and total <= cap:
        item = next(pending[-1], _END)
        if item is _END:
            pending.pop()
        elif isinstance(item, str):
            total += len(item) + 3
        elif isinstance(item, dict):
            total += 2 + sum(len(k) + 4 for k in item)
            pending.append(iter(item.values()))
        elif isinstance(item, list):
            total += 2
            pending.append(iter(item))
        else:
            total += 8
    return total


_END = object()
