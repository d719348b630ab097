"""Where a run in place reads its cells and writes their outputs: the live document or the file.

A collaboration room may open (a person opens the notebook in the lab) or close while a run goes
on. So before each read of a cell and each final write, the room is looked up again: while one is
open its shared document gets everything (writing the file would make the room reload it over
what people typed); otherwise the file does. Live writes in between go where the last one went.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from ..execution.run_request import SelectedCell
from .document_outputs import DocumentOutputs
from .file_outputs import FileOutputs

__all__ = ["NotebookOutputs"]


class NotebookOutputs:
    """An ``OutputsTarget`` that follows the notebook to its room and back to its file."""

    def __init__(
        self,
        file: FileOutputs,
        find_live: Callable[[], Awaitable[Any]],
        live: Any = None,
    ) -> None:
        self.file = file
        self.find_live = find_live
        self.notebook_dir = file.notebook_dir
        self._document: DocumentOutputs | None = None
        self._current: FileOutputs | DocumentOutputs = file
        self._follow(live)
        self._used_document = False

    def _follow(self, live: Any) -> FileOutputs | DocumentOutputs:
        if live is None:
            self._current = self.file
        else:
            if self._document is None or self._document.ynotebook is not live:
                self._document = DocumentOutputs(live, self.file.api_path)
            self._current = self._document
        return self._current

    async def _target(self) -> FileOutputs | DocumentOutputs:
        target = self._follow(await self.find_live())
        self._used_document = self._used_document or target is self._document
        return target

    @property
    def via(self) -> str:
        """``document`` once any cell was read or written through a room, else ``file``."""
        return "document" if self._used_document else "file"

    @property
    def total_cells(self) -> int:
        """Cells in the notebook where it was last read."""
        return self._current.total_cells

    async def locate(self, cell: SelectedCell) -> SelectedCell | None:
        """The cell as it is now, in the room when one is open, else in the file."""
        return await (await self._target()).locate(cell)

    def show(self, cell: SelectedCell, outputs: list[dict[str, Any]], count: int | None) -> None:
        """Show the outputs so far where the last read or write went."""
        self._current.show(cell, outputs, count)

    async def store(
        self, cell: SelectedCell, outputs: list[dict[str, Any]], count: int | None
    ) -> bool:
        """Write the final outputs into the room when one is open, else into the file."""
        return await (await self._target()).store(cell, outputs, count)
