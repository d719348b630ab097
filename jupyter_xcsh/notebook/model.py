"""What the edit core needs of a notebook, whichever holds it: the file or the live document.

``NotebookDocument`` (the file's JSON text) and ``SharedNotebook`` (a collaboration room's shared
document) both implement :class:`CellDocument`, so one pure core applies every action to either.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .revision import CellKey, notebook_revision


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
    """The notebook's current revision (docs/contract.md §3.1).

    A document that keeps its cells' revision entries between changes (``NotebookDocument``)
    computes it from them.
    """
    revision = getattr(document, "revision", None)
    if callable(revision):
        return str(revision())
    return notebook_revision(document.cell_keys())


@dataclass(frozen=True)
class Snapshot:
    """Every cell's key at one moment, and where they were read (``via``, docs/contract.md §4.1)."""

    keys: Sequence[CellKey]
    nbformat: tuple[int, int]
    via: str
    last_modified: str | None
