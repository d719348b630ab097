"""Outputs of a run in place written into the notebook file, and shown live in open notebooks.

With no collaboration room open, the file is the notebook: each cell's outputs are patched into
it once the cell ends (under the store's per-path lock, only that cell's ``outputs`` and
``execution_count`` changing), as JupyterLab itself writes outputs only when the person saves.
While the cell runs, its outputs travel as events on the server's bus, which the lab applies
to the open notebook (``labextension/src/runsync.ts``) without touching the file, so the person
never meets a "file changed on disk" conflict for a running cell.
"""

from __future__ import annotations

import asyncio
import json
import posixpath
import time
from collections.abc import Callable
from typing import Any

from ..execution.run_request import SelectedCell
from .document import NotebookDocument
from .outputs import cell_position, set_outputs
from .store import NotebookStore, Snapshot

__all__ = ["FileOutputs", "preview_outputs"]

#: Largest outputs (serialised) an event carries whole; larger ones are previewed or fetched.
MAX_EVENT_OUTPUTS = 1024 * 1024
#: Stream text a live preview keeps per output, in characters.
PREVIEW_STREAM_CHARS = 16 * 1024
#: Bytes of live outputs sent per second at most, so a chatty cell cannot flood the bus.
LIVE_BYTES_PER_SECOND = 4 * 1024 * 1024


def preview_outputs(outputs: list[dict[str, Any]], budget: int) -> list[dict[str, Any]]:
    """Outputs cut to fit ``budget`` serialised characters: stream tails, large bundles named."""
    preview: list[dict[str, Any]] = []
    used = 0
    for output in outputs:
        item = output
        if output.get("output_type") == "stream":
            text = str(output.get("text", ""))
            if len(text) > PREVIEW_STREAM_CHARS:
                item = dict(output, text=text[-PREVIEW_STREAM_CHARS:])
        size = len(json.dumps(item))
        if used + size > budget:
            note = "[large output: shown in full when the cell ends]"
            item = {"output_type": "display_data", "data": {"text/plain": note}, "metadata": {}}
            size = len(json.dumps(item))
        preview.append(item)
        used += size
    return preview


def _selected(document: NotebookDocument, index: int) -> SelectedCell:
    cell = document.cells[index]
    source = cell.get("source", "")
    cell_id = cell.get("id")
    return SelectedCell(
        index=index,
        cell_id=cell_id if isinstance(cell_id, str) else None,
        cell_type=str(cell.get("cell_type", "")),
        source="".join(source) if isinstance(source, list) else str(source),
    )


class FileOutputs:
    """Read a run's cells from the notebook file and write their outputs into it.

    Parameters
    ----------
    store
        The one loader/saver of notebooks.
    path
        The notebook path as the caller gave it (for the store's messages).
    api_path
        The notebook's API path.
    snapshot
        The notebook as loaded when the run was accepted.
    emit
        Publishes one ``outputs`` event (the lab shows them in the open notebook).

    """

    via = "file"

    def __init__(
        self,
        store: NotebookStore,
        path: str,
        api_path: str,
        snapshot: Snapshot,
        emit: Callable[[dict[str, Any]], None],
    ) -> None:
        self.notebooks = store
        self.path = path
        self.api_path = api_path
        self.notebook_dir = posixpath.dirname(api_path)
        # The notebook as last loaded or saved: read again only once the file changed, so a
        # run of every cell of a large notebook does not parse it twice per cell.
        self.snapshot: Snapshot | None = snapshot
        self.total_cells = len(snapshot.document.cells)
        self.emit = emit
        self._next_live = 0.0
        self._held: dict[str, Any] | None = None
        self._timer: asyncio.TimerHandle | None = None

    def _find(self, document: NotebookDocument, cell: SelectedCell) -> int | None:
        self.total_cells = len(document.cells)
        index = cell_position(document, cell.cell_id, cell.index)
        if index is None or document.cells[index].get("cell_type") != "code":
            return None
        if cell.cell_id is None and _selected(document, index).source != cell.source:
            # Without ids a cell is known only by its place: another source there means
            # another cell (one was inserted or deleted above it).
            return None
        return index

    async def locate(self, cell: SelectedCell) -> SelectedCell | None:
        """The cell as it is in the file now; None when it is gone."""
        _, self.snapshot = await self.notebooks.load(self.path, self.snapshot)
        document = self.snapshot.document
        self.total_cells = len(document.cells)
        index = cell_position(document, cell.cell_id, cell.index)
        return None if index is None else _selected(document, index)

    def show(self, cell: SelectedCell, outputs: list[dict[str, Any]], count: int | None) -> None:
        """Send the cell's outputs so far to the lab (no file write)."""
        size = len(json.dumps(outputs))
        if size > MAX_EVENT_OUTPUTS:
            outputs = preview_outputs(outputs, MAX_EVENT_OUTPUTS)
            size = MAX_EVENT_OUTPUTS
        event = self._event(cell, outputs, count, final=False)
        now = time.monotonic()
        if now >= self._next_live:
            self._send_live(event, size)
            return
        # Too soon after a large event: keep only the latest state, send it when due.
        self._held = event
        if self._timer is None:
            delay = self._next_live - now
            self._timer = asyncio.get_running_loop().call_later(delay, self._release, size)

    def _send_live(self, event: dict[str, Any], size: int) -> None:
        self._next_live = time.monotonic() + size / LIVE_BYTES_PER_SECOND
        self.emit(event)

    def _release(self, size: int) -> None:
        self._timer = None
        held, self._held = self._held, None
        if held is not None:
            self._send_live(held, size)

    def _drop_held(self, cell: SelectedCell) -> None:
        if self._held is not None and self._held.get("cellIndex") == cell.index:
            self._held = None

    async def store(
        self, cell: SelectedCell, outputs: list[dict[str, Any]], count: int | None
    ) -> bool:
        """Patch the cell's outputs and count into the file; False when the cell is gone."""
        self._drop_held(cell)
        found: list[int] = []

        def apply(document: NotebookDocument) -> bool:
            index = self._find(document, cell)
            if index is None:
                return False
            found.append(index)
            return set_outputs(document, index, outputs, count)

        try:
            _, self.snapshot = await self.notebooks.patch(self.path, apply, self.snapshot)
        except BaseException:
            self.snapshot = None  # edited, but not saved: read the file again next time
            raise
        last_modified = self.snapshot.last_modified
        if not found:
            return False
        placed = SelectedCell(found[0], cell.cell_id, cell.cell_type, cell.source)
        whole = len(json.dumps(outputs)) <= MAX_EVENT_OUTPUTS
        event = self._event(placed, outputs if whole else None, count, final=True)
        event["lastModified"] = last_modified
        self.emit(event)
        return True

    def _event(
        self,
        cell: SelectedCell,
        outputs: list[dict[str, Any]] | None,
        count: int | None,
        *,
        final: bool,
    ) -> dict[str, Any]:
        return {
            "path": self.api_path,
            "cellId": cell.cell_id,
            "cellIndex": cell.index,
            "executionCount": count,
            "outputs": outputs,
            "outputsCut": outputs is None,
            "final": final,
        }
