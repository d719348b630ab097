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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Any

import nbformat
from nbformat.v4.rwbase import split_lines

from .model import CellDocument, CellKey, index_of_id, revision_of

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


def _members(text: str) -> tuple[dict[str, tuple[int, int]], dict[str, str]]:
    """The value span of each top-level key of the JSON object ``text``, and each key's colon."""
    spans: dict[str, tuple[int, int]] = {}
    colons: dict[str, str] = {}
    index = _skip(text, 1)
    if text[index] == "}":
        return spans, colons
    while True:
        key, index = scanstring(text, index + 1)
        start = _skip(text, _skip(text, index) + 1)
        colons[key] = text[index:start]
        _, end = _SCAN(text, start)
        spans[key] = (start, end)
        index = _skip(text, end)
        if text[index] != ",":
            return spans, colons
        index = _skip(text, index + 1)


def _line_indent(text: str, index: int) -> str:
    line_start = text.rfind("\n", 0, index) + 1
    return _WHITESPACE.match(text, line_start).group()  # type: ignore[union-attr]


def _dumps(value: Any, text: str, start: int, colon: str) -> str:
    """``value`` serialised as the object ``text`` around it is written (Jupyter: sorted keys)."""
    key_sep = colon if "\n" not in colon else ": "
    if "\n" not in text:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", key_sep))
    key_indent = _line_indent(text, start)
    unit = key_indent[len(_line_indent(text, text.rfind("\n") + 1)) :] or " "
    dumped = json.dumps(
        value, ensure_ascii=False, sort_keys=True, indent=unit, separators=(",", key_sep)
    )
    return dumped.replace("\n", "\n" + key_indent)


def splice_members(text: str, values: Mapping[str, Any]) -> str | None:
    """The JSON object ``text`` with the values of ``values``' keys replaced, nothing else.

    Each new value is written as the text around it is (its indentation, its separators);
    every other byte stays. None when one of the keys is missing from ``text``.
    """
    spans, colons = _members(text)
    if not all(key in spans for key in values):
        return None
    # Splice from the end of the text, so the earlier spans stay valid.
    for key in sorted(values, key=lambda k: -spans[k][0]):
        start, end = spans[key]
        text = text[:start] + _dumps(values[key], text, start, colons[key]) + text[end:]
    return text
