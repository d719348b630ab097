"""What the edit core needs of a notebook, whichever holds it, and the values stale checks compare.

``NotebookDocument`` (the file's JSON text) and ``SharedNotebook`` (a collaboration room's shared
document) both implement :class:`CellDocument`, so one pure core applies every action to either.

Source hashes and revisions are what stale-edit checks compare (docs/developers/contract.md
§3.1). Both are computed from what a person edits — cell ids, types and sources — never from
outputs, execution counts or metadata, so running cells, an autosave or a metadata change never
makes an agent's read stale. The file and the live shared document give the same values for the
same notebook, because both reduce a cell to its id, its type and its source as one string
(``CellKey``). Pure.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

#: Hex digits kept of each sha256 digest.
DIGITS = 16


class CellKey(NamedTuple):
    """What identifies a cell's editable state: its id (None without one), type and source."""

    cell_id: str | None
    cell_type: str
    source: str


class CellKeys(tuple[CellKey, ...]):
    """Every cell's key, in order, with the notebook's revision already computed.

    What ``NotebookDocument.cell_keys`` returns: its revision comes from the cells' entries the
    document keeps, so ``notebook_revision`` of it (the tool's history, on every change) costs
    nothing.
    """

    revision: str

    def __new__(cls, keys: Iterable[CellKey], revision: str) -> CellKeys:
        """``keys`` whose ``notebook_revision`` is ``revision``."""
        self = super().__new__(cls, keys)
        self.revision = revision
        return self


def source_text(source: Any) -> str:
    """A cell source as one string: nbformat's list of lines joined, a string as it is."""
    if isinstance(source, list):
        return "".join(line for line in source if isinstance(line, str))
    return source if isinstance(source, str) else ""


def cell_key(cell: Any) -> CellKey:
    """The key of a cell as stored in a notebook file (a damaged cell: type ``unknown``)."""
    if not isinstance(cell, dict):
        return CellKey(None, "unknown", "")
    cell_id = cell.get("id")
    cell_type = cell.get("cell_type")
    return CellKey(
        cell_id if isinstance(cell_id, str) else None,
        cell_type if isinstance(cell_type, str) else "unknown",
        source_text(cell.get("source")),
    )


def _digest(data: str) -> str:
    # surrogatepass: JSON may carry a lone surrogate; it must hash, not fail.
    return hashlib.sha256(data.encode("utf-8", "surrogatepass")).hexdigest()[:DIGITS]


def source_hash(source: Any) -> str:
    """The first 16 hex digits of the sha256 of a cell's joined source (UTF-8)."""
    return _digest(source_text(source))


def notebook_revision(keys: Iterable[CellKey]) -> str:
    """The first 16 hex digits of the sha256 of ``[[id or index, cell_type, sourceHash], ...]``.

    The list is serialised as compact JSON (``separators=(",", ":")``, non-ASCII kept), so a
    client can compute the same value.
    """
    if isinstance(keys, CellKeys):
        return keys.revision
    return revision_of_entries([revision_entry(index, key) for index, key in enumerate(keys)])


def revision_entry(index: int, key: CellKey) -> str:
    """One cell's ``[id or index, cell_type, sourceHash]`` as ``notebook_revision`` writes it.

    A cell with an id has the same entry wherever it is: a document may keep it (``document.py``).
    """
    entry = [key.cell_id if key.cell_id is not None else index, key.cell_type, _digest(key.source)]
    return json.dumps(entry, ensure_ascii=False, separators=(",", ":"))


def revision_of_entries(entries: list[str]) -> str:
    """``notebook_revision`` of the cells whose ``revision_entry`` are ``entries``, in order."""
    return _digest("[" + ",".join(entries) + "]")


class CellDocument(Protocol):
    """A notebook whose cells can be read and changed one at a time, in memory."""

    @property
    def cells(self) -> Sequence[Any]:
        """The cells as nbformat JSON objects (read-only: change them with the methods)."""

    @property
    def nbformat(self) -> tuple[int, int]:
        """``(nbformat, nbformat_minor)``; ``(0, 0)`` when unknown."""

    @property
    def uses_cell_ids(self) -> bool:
        """Whether cells carry ids (nbformat 4.5 and later)."""

    @property
    def metadata(self) -> dict[str, Any]:
        """The notebook's top-level metadata (to read, not to change)."""

    def cell_keys(self) -> Sequence[CellKey]:
        """Each cell's id, type and source (cheap: no outputs are converted)."""

    def replace(self, index: int, cell: dict[str, Any]) -> None:
        """Replace the cell at ``index``."""

    def insert(self, index: int, cell: dict[str, Any]) -> None:
        """Insert ``cell`` so that it ends up at ``index``."""

    def delete(self, index: int) -> Any:
        """Remove the cell at ``index`` and return it."""

    def move(self, index: int, to_index: int) -> None:
        """Move the cell at ``index`` to ``to_index``."""

    def set_outputs(
        self,
        index: int,
        outputs: list[dict[str, Any]],
        execution_count: int | None,
        *,
        running: bool = False,
    ) -> None:
        """Give code cell ``index`` new outputs and count, changing nothing else of it.

        ``running``: the cell still runs (shown as such where the document can show it).
        """


def index_of_id(document: CellDocument, cell_id: str) -> int | None:
    """The index of the cell with id ``cell_id``, or ``None`` when no cell has it."""
    return next((i for i, key in enumerate(document.cell_keys()) if key.cell_id == cell_id), None)


def revision_of(document: CellDocument) -> str:
    """The notebook's current revision (docs/developers/contract.md §3.1).

    A document that keeps its cells' revision entries between changes (``NotebookDocument``)
    computes it from them.
    """
    revision = getattr(document, "revision", None)
    if callable(revision):
        return str(revision())
    return notebook_revision(document.cell_keys())


@dataclass(frozen=True)
class Snapshot:
    """Each cell's key and where it was read (``via``, docs/developers/contract.md §4.1)."""

    keys: Sequence[CellKey]
    nbformat: tuple[int, int]
    via: str
    last_modified: str | None
