"""Write a code cell's outputs and execution count into notebook text, changing nothing else (pure).

A run in place saves after every cell while a person may be reading the diff of the notebook in
version control: the patch replaces only the text of the cell's ``outputs`` and
``execution_count`` values, written the way Jupyter writes them (sorted keys, multi-line strings
split into lists of lines, the file's own indentation), so every other byte of the file, the
rest of that cell included, stays as it was.
"""

from __future__ import annotations

import copy
import json
import re
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Any

import nbformat
from nbformat.v4.rwbase import split_lines

from .document import NotebookDocument

__all__ = ["cell_position", "set_outputs"]

_WHITESPACE = re.compile(r"[ \t\n\r]*")
_SCAN = json.JSONDecoder().scan_once  # type: ignore[attr-defined]
_PATCHED = ("outputs", "execution_count")


def cell_position(document: NotebookDocument, cell_id: str | None, index: int) -> int | None:
    """Where the cell is now: found by ``cell_id`` when it has one, else at ``index``.

    None when the cell is gone (no cell with that id; an index past the end).
    """
    cells = document.cells
    if cell_id is not None:
        for i, cell in enumerate(cells):
            if isinstance(cell, dict) and cell.get("id") == cell_id:
                return i
        return None
    return index if 0 <= index < len(cells) and isinstance(cells[index], dict) else None


def _members(text: str) -> tuple[dict[str, tuple[int, int]], str]:
    """The value span of each top-level key of the JSON object ``text``, and its key separator."""
    spans: dict[str, tuple[int, int]] = {}
    key_sep = ": "
    index = _WHITESPACE.match(text, 1).end()  # type: ignore[union-attr]
    if text[index] == "}":
        return spans, key_sep
    while True:
        key, index = scanstring(text, index + 1)
        colon = _WHITESPACE.match(text, index).end()  # type: ignore[union-attr]
        start = _WHITESPACE.match(text, colon + 1).end()  # type: ignore[union-attr]
        if key in _PATCHED:
            key_sep = text[index:start]
        _, end = _SCAN(text, start)
        spans[key] = (start, end)
        index = _WHITESPACE.match(text, end).end()  # type: ignore[union-attr]
        if text[index] != ",":
            return spans, key_sep
        index = _WHITESPACE.match(text, index + 1).end()  # type: ignore[union-attr]


def _line_indent(text: str, index: int) -> str:
    line_start = text.rfind("\n", 0, index) + 1
    return _WHITESPACE.match(text, line_start).group()  # type: ignore[union-attr]


def _as_stored(outputs: list[dict[str, Any]]) -> Any:
    """``outputs`` as Jupyter stores them: multi-line strings split into lists of lines."""
    cell = {"cell_type": "code", "outputs": copy.deepcopy(outputs)}
    notebook = nbformat.from_dict({"cells": [cell]})  # type: ignore[no-untyped-call]
    return split_lines(notebook).cells[0].outputs  # type: ignore[no-untyped-call]


def _dumps(value: Any, text: str, start: int, key_sep: str) -> str:
    """``value`` serialised the way the surrounding cell text is written."""
    if "\n" not in text:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", key_sep))
    key_indent = _line_indent(text, start)
    closing = text.rfind("\n") + 1
    unit = key_indent[len(_line_indent(text, closing)) :] or " "
    dumped = json.dumps(
        value, ensure_ascii=False, sort_keys=True, indent=unit, separators=(",", key_sep)
    )
    return dumped.replace("\n", "\n" + key_indent)


def set_outputs(
    document: NotebookDocument,
    index: int,
    outputs: list[dict[str, Any]],
    execution_count: int | None,
) -> bool:
    """Store ``outputs`` and ``execution_count`` in the code cell at ``index``; whether it changed.

    Only the text of those two values changes. A cell lacking either key (not written by an
    nbformat writer) is rewritten whole, in the file's formatting.
    """
    cell = document.cells[index]
    stored = _as_stored(outputs)
    new_cell = dict(cell, outputs=stored, execution_count=execution_count)
    if new_cell == cell:
        return False
    text = document.cell_text(index)
    spans, key_sep = _members(text)
    if not all(key in spans for key in _PATCHED):
        document.replace(index, new_cell)
        return True
    values = {"outputs": stored, "execution_count": execution_count}
    # Splice from the end of the text, so earlier spans stay valid.
    for key in sorted(_PATCHED, key=lambda k: -spans[k][0]):
        start, end = spans[key]
        text = text[:start] + _dumps(values[key], text, start, key_sep) + text[end:]
    document.replace_text(index, new_cell, text)
    return True
