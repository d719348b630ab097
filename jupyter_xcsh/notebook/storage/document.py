"""A notebook's JSON text that can be edited cell by cell without reformatting the rest.

Why not ``json.loads`` + ``json.dumps``: re-serialising a whole notebook rewrites every byte the
writer formatted differently (key order, string-or-list sources, indentation, escapes) and, with
``indent``, runs CPython's pure-Python encoder over megabytes of outputs. Instead the text is
scanned once with the C scanner, keeping the exact text of each element of the ``cells`` array.
Edits re-serialise only the cells they touch, in the file's own indentation, and splice them
back between the untouched original slices; a large cell's text is kept in parts
(``celltext.py``), so that an edit of it never copies or scans it whole.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Any

from jupyter_xcsh.notebook.model import (
    CellKey,
    CellKeys,
    cell_key,
    revision_entry,
    revision_of_entries,
)
from jupyter_xcsh.notebook.outputs import splice_members, stored_outputs
from jupyter_xcsh.notebook.storage.celltext import CellText, text_length

_WHITESPACE = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()
_SCAN = _DECODER.scan_once  # type: ignore[attr-defined]


class NotJSONError(ValueError):
    """The text is not valid JSON."""


class NoCellsError(ValueError):
    """The text is JSON but has no top-level ``cells`` array."""


@dataclass
class _CellsArray:
    """Where the cells array sits in the text, and the exact text around each element."""

    open_end: int  # index just past '['
    close_start: int  # index of ']'
    lead: str  # whitespace between '[' and the first element
    items: list[CellText]  # each element's exact text
    seps: list[str]  # text between consecutive elements (',' plus whitespace)
    trail: str  # whitespace between the last element and ']'
    key_indent: str  # indentation of the line holding the "cells" key


def _skip(text: str, index: int) -> int:
    return _WHITESPACE.match(text, index).end()  # type: ignore[union-attr]


def _scan_value(text: str, index: int) -> tuple[Any, int]:
    try:
        return _SCAN(text, index)
    except StopIteration:
        raise NotJSONError(f"expected a value at character {index}") from None
    except ValueError as e:  # JSONDecodeError from inside a nested value
        raise NotJSONError(str(e)) from None
    except RecursionError:  # nested deeper than Python's parser goes (nbformat cannot either)
        raise NotJSONError(f"nested too deeply at character {index}") from None


def _expect(text: str, index: int, char: str) -> int:
    if index >= len(text) or text[index] != char:
        raise NotJSONError(f"expected {char!r} at character {index}")
    return index + 1


def _line_indent(text: str, index: int) -> str:
    """Return the whitespace that starts the line containing ``index``."""
    line_start = text.rfind("\n", 0, index) + 1
    return _WHITESPACE.match(text, line_start).group().replace("\n", "")  # type: ignore[union-attr]


def _scan_cells(text: str, index: int, key_indent: str) -> tuple[list[Any], _CellsArray, int]:
    """Scan the cells array starting at its '[' and record each element's exact text."""
    open_end = index + 1
    cursor = _skip(text, open_end)
    values: list[Any] = []
    items: list[CellText] = []
    seps: list[str] = []
    lead = text[open_end:cursor]
    if cursor < len(text) and text[cursor] == "]":
        layout = _CellsArray(open_end, cursor, lead, items, seps, "", key_indent)
        return values, layout, cursor + 1
    while True:
        value, end = _scan_value(text, cursor)
        values.append(value)
        items.append(text[cursor:end])
        after = _skip(text, end)
        if after < len(text) and text[after] == ",":
            cursor = _skip(text, after + 1)
            seps.append(text[end:cursor])
            continue
        _expect(text, after, "]")
        layout = _CellsArray(open_end, after, lead, items, seps, text[end:after], key_indent)
        return values, layout, after + 1


class NotebookDocument:
    """A notebook held as its exact JSON text plus the parsed cells, edited cell by cell."""

    def __init__(self, text: str, data: dict[str, Any], layout: _CellsArray, key_sep: str):
        # Only the text around the cells array is kept (each cell's text is in the layout):
        # a document kept between edits (``cache.py``) holds one copy of the notebook's text.
        self._head = text[: layout.open_end]
        self._tail = text[layout.close_start :]
        self.data = data
        self._layout = layout
        self._key_sep = key_sep
        #: Whether an edit was made since the text was parsed.
        self.changed = False
        # Each cell's key, and its entry in the revision when the cell has an id (an entry
        # does not depend on where such a cell is): kept so that each change of a batch
        # hashes only the cells it changed. None until first asked for.
        self._keys: list[CellKey] | None = None
        self._entries: list[str | None] = []
        # The revision as of the last change, once computed (only when every cell has an id).
        self._revision: str | None = None
        # Each cell replaced or deleted since ``take_removed``, with its text then.
        self._removed: list[tuple[Any, CellText]] = []

    # -- parsing -----------------------------------------------------------------------------

    @classmethod
    def parse(cls, text: str) -> NotebookDocument:
        """Parse notebook JSON text; raise ``NotJSONError`` or ``NoCellsError``."""
        index = _skip(text, 0)
        if index >= len(text) or text[index] != "{":
            cls._raise_for_non_object(text)
        data: dict[str, Any] = {}
        layout: _CellsArray | None = None
        key_sep = ": "
        index = _skip(text, index + 1)
        if index < len(text) and text[index] == "}":
            index += 1
        else:
            while True:
                key_start = index
                index = _expect(text, index, '"')
                try:
                    key, index = scanstring(text, index)
                except ValueError as e:
                    raise NotJSONError(str(e)) from None
                colon = _skip(text, index)
                index = _skip(text, _expect(text, colon, ":"))
                if not data:
                    key_sep = text[colon:index] if "\n" not in text[colon:index] else ": "
                if key == "cells" and index < len(text) and text[index] == "[":
                    value, layout, index = _scan_cells(text, index, _line_indent(text, key_start))
                else:
                    value, index = _scan_value(text, index)
                    if key == "cells":
                        layout = None
                data[key] = value
                index = _skip(text, index)
                if index < len(text) and text[index] == ",":
                    index = _skip(text, index + 1)
                    continue
                index = _expect(text, index, "}")
                break
        if _skip(text, index) != len(text):
            raise NotJSONError(f"extra data at character {index}")
        if layout is None:
            raise NoCellsError("no cells array")
        return cls(text, data, layout, key_sep)

    @staticmethod
    def _raise_for_non_object(text: str) -> None:
        try:
            json.loads(text)
        except ValueError as e:
            raise NotJSONError(str(e)) from None
        except RecursionError:
            raise NotJSONError("nested too deeply") from None
        raise NoCellsError("top level is not an object")

    # -- reading -----------------------------------------------------------------------------

    @property
    def cells(self) -> list[Any]:
        """The parsed cells, in order (do not mutate: use the editing methods)."""
        return self.data["cells"]

    @property
    def nbformat(self) -> tuple[int, int]:
        """The notebook's ``(nbformat, nbformat_minor)``; ``(0, 0)`` when absent or not ints."""
        major, minor = self.data.get("nbformat"), self.data.get("nbformat_minor")
        if isinstance(major, int) and isinstance(minor, int):
            return major, minor
        return 0, 0

    @property
    def uses_cell_ids(self) -> bool:
        """Whether cells carry ids (nbformat 4.5 and later)."""
        return self.nbformat >= (4, 5)

    @property
    def metadata(self) -> dict[str, Any]:
        """The notebook's top-level metadata (to read, not to change); ``{}`` when absent."""
        metadata = self.data.get("metadata")
        return metadata if isinstance(metadata, dict) else {}

    @property
    def keys_known(self) -> bool:
        """Whether every cell's key and revision entry is at hand: ``cell_keys`` is then cheap.

        (A cell without an id has no kept entry: its entry depends on where it is.)
        """
        return self._keys is not None and None not in self._entries

    def cell_keys(self) -> CellKeys:
        """Each cell's id, type and joined source (with the notebook's revision)."""
        return CellKeys(self._cell_keys(), self.revision())

    def _cell_keys(self) -> list[CellKey]:
        keys = self._keys
        if keys is None:
            keys = [cell_key(cell) for cell in self.cells]
            # Entries first: a reader on another thread that sees the keys sees their entries.
            self._entries = [None] * len(keys)
            self._keys = keys
        return keys

    def revision(self) -> str:
        """The notebook's revision (``revision.notebook_revision`` of its cells' keys)."""
        if self._revision is not None:
            return self._revision
        keys = self._cell_keys()
        entries = self._entries
        start = 0
        while True:  # hash the cells changed since (found at C speed: a batch hashes one each)
            try:
                index = entries.index(None, start)
            except ValueError:  # every cell has an id and was hashed before
                self._revision = revision_of_entries(entries)  # type: ignore[arg-type]
                return self._revision
            key = keys[index]
            if key.cell_id is None:
                break  # its entry depends on where it is: never kept
            entries[index] = revision_entry(index, key)
            start = index + 1
        parts = []
        for index, key in enumerate(keys):
            entry = entries[index]
            if entry is None:
                entry = revision_entry(index, key)
                if key.cell_id is not None:
                    entries[index] = entry
            parts.append(entry)
        return revision_of_entries(parts)

    def _keyed(self, index: int, cell: Any, *, insert: bool = False) -> None:
        """Note a cell replaced (or inserted) at ``index`` in the kept keys."""
        if self._keys is None:
            return
        self._revision = None
        if insert:
            self._keys.insert(index, cell_key(cell))
            self._entries.insert(index, None)
        else:
            self._keys[index] = cell_key(cell)
            self._entries[index] = None

    def dumps(self) -> str:
        """Return the notebook's text with every edit applied."""
        return "".join(self.pieces())

    def pieces(self) -> list[str]:
        """The notebook's text with every edit applied, as the pieces it is kept in.

        Joined, they are ``dumps``; the list is a new one, which later edits do not change.
        """
        layout = self._layout
        pieces = [self._head, layout.lead]
        for i, item in enumerate(layout.items):
            if i:
                pieces.append(layout.seps[i - 1])
            if isinstance(item, str):
                pieces.append(item)
            else:
                pieces.extend(item)
        pieces.append(layout.trail)
        pieces.append(self._tail)
        return pieces

    def saved(self) -> None:
        """Note that the text with every edit applied (``dumps``) is now the file's."""
        self.changed = False

    @property
    def size(self) -> int:
        """The length of the notebook's text, in characters (what keeping it costs, roughly)."""
        layout = self._layout
        return (
            len(self._head)
            + len(self._tail)
            + len(layout.lead)
            + len(layout.trail)
            + sum(map(text_length, layout.items))
            + sum(map(len, layout.seps))
        )

    def take_removed(self) -> list[tuple[Any, CellText]]:
        """The cells replaced or deleted since the last call, each with its text then; forgotten.

        A cell's text is its JSON as the file had it: what the lab's revert of the change
        needs, without encoding the cell again (``store.py``).
        """
        removed, self._removed = self._removed, []
        return removed

    # -- editing -----------------------------------------------------------------------------

    def replace(self, index: int, cell: dict[str, Any]) -> None:
        """Replace the cell at ``index``.

        When ``cell`` has the keys of the cell it replaces, in the same order (an edit of its
        source), only the values that differ are written anew: the rest of the cell's text —
        its outputs, often most of a notebook's bytes — stays as it was, and is not serialised
        again (``outputs.splice_members``). Else the cell is written whole.
        """
        self.changed = True
        old = self.cells[index]
        self.cells[index] = cell
        self._keyed(index, cell)
        items = self._layout.items
        self._removed.append((old, items[index]))
        text = None
        if isinstance(old, dict) and list(old) == list(cell):
            values = {k: v for k, v in cell.items() if v is not old[k] and v != old[k]}
            text = splice_members(items[index], values, old)
        items[index] = text if text is not None else self._serialise(cell)

    def insert(self, index: int, cell: dict[str, Any]) -> None:
        """Insert ``cell`` so that it ends up at ``index``."""
        self._insert(index, cell, self._serialise(cell))

    def _insert(self, index: int, cell: dict[str, Any], text: CellText) -> None:
        """Insert ``cell``, whose text is ``text``, so that it ends up at ``index``."""
        self.changed = True
        layout = self._layout
        if not layout.items:
            item_indent = self._item_indent()
            if item_indent is not None:
                layout.lead = "\n" + item_indent
                layout.trail = "\n" + layout.key_indent
        else:
            layout.seps.insert(min(index, len(layout.seps)), self._typical_sep())
        self.cells.insert(index, cell)
        self._keyed(index, cell, insert=True)
        layout.items.insert(index, text)

    def delete(self, index: int) -> dict[str, Any]:
        """Remove and return the cell at ``index``."""
        self.changed = True
        layout = self._layout
        removed: dict[str, Any] = self.cells.pop(index)
        self._removed.append((removed, layout.items[index]))
        if self._keys is not None:
            self._revision = None
            del self._keys[index]
            del self._entries[index]
        del layout.items[index]
        if layout.seps:
            del layout.seps[min(index, len(layout.seps) - 1)]
        if not layout.items:
            # As Jupyter writes an empty list: "cells": []
            layout.lead = layout.trail = ""
        return removed

    def move(self, index: int, to_index: int) -> None:
        """Move the cell at ``index`` to ``to_index`` keeping its exact text (never made anew)."""
        item = self._layout.items[index]
        cell = self.delete(index)
        self._removed.pop()  # moved, not removed
        self._insert(to_index, cell, item)

    def set_outputs(
        self,
        index: int,
        outputs: list[dict[str, Any]],
        execution_count: int | None,
        *,
        running: bool = False,
    ) -> None:
        """Give code cell ``index`` new outputs and count, as Jupyter writes them.

        Only the text of those two values changes: every other byte of the file, the rest of
        that cell included, stays as it was (a cell lacking either key is rewritten whole).
        A file cannot show a cell running: ``running`` changes nothing here.
        """
        cell = self.cells[index]
        values = {"outputs": stored_outputs(outputs), "execution_count": execution_count}
        updated = {**cell, **values}
        if updated == cell:
            return
        self.changed = True
        self.cells[index] = updated
        text = splice_members(self._layout.items[index], values, cell)
        self._layout.items[index] = text if text is not None else self._serialise(updated)

    # -- formatting --------------------------------------------------------------------------

    def _indent_unit(self) -> str | None:
        """The file's indentation step, or None for single-line (compact) JSON."""
        text = self._head  # the text up to the cells array's '[' holds the first key
        first = _skip(text, _skip(text, 0) + 1)
        gap = text[_skip(text, 0) + 1 : first]
        if "\n" not in gap:
            return None
        return gap.rsplit("\n", 1)[1] or None

    def _item_indent(self) -> str | None:
        """Indentation of the cells' opening braces, or None for compact JSON."""
        layout = self._layout
        if layout.items:
            if "\n" not in layout.lead:
                return None
            return layout.lead.rsplit("\n", 1)[1]
        unit = self._indent_unit()
        return None if unit is None else layout.key_indent + unit

    def _typical_sep(self) -> str:
        layout = self._layout
        if layout.seps:
            return layout.seps[0]
        item_indent = self._item_indent()
        return "," if item_indent is None else ",\n" + item_indent

    def _serialise(self, cell: dict[str, Any]) -> str:
        """Serialise one cell the way the surrounding file is written (Jupyter: indent 1)."""
        item_indent = self._item_indent()
        unit = self._indent_unit()
        if item_indent is None or unit is None:
            item_sep = "," if self._key_sep == ":" else ", "
            return json.dumps(cell, ensure_ascii=False, separators=(item_sep, self._key_sep))
        text = json.dumps(cell, ensure_ascii=False, indent=unit, separators=(",", self._key_sep))
        # JSON strings never hold a raw newline, so every "\n" here starts an indented line.
        return text.replace("\n", "\n" + item_indent)
