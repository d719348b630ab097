"""Where a run in place reads its cells and writes their outputs: the live document or the file.

Everything goes through the store, the one reader and writer of notebooks: with a collaboration
room open, its shared document (every open lab tab shows the outputs as they come, the room
saves the file); otherwise the file, under the store's per-path lock and the server's save
lock, with only the cell's ``outputs`` and ``execution_count`` bytes changing. A room may open
or close while a run goes on, so each read of a cell and each final write asks the store
afresh; live writes of a running cell go where the last read or write went.

Without a room a cell's outputs are written to the file once it ends, as JupyterLab writes
outputs only when a person saves. While it runs, its outputs travel as events on the server's
bus, which the lab applies to the open notebook (``labextension/src/runsync.ts``) without
touching the file, so the person never meets a "file changed on disk" conflict.
"""

from __future__ import annotations

import asyncio
import json
import posixpath
import time
from collections.abc import Callable
from typing import Any

from jupyter_xcsh.notebook.outputs import CellPlace, SelectedCell, find_cell
from jupyter_xcsh.notebook.storage.store import NotebookStore

__all__ = ["NotebookOutputs", "preview_outputs"]

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


class NotebookOutputs:
    """The ``OutputsTarget`` of a run: the notebook through the store, live events for the lab.

    Parameters
    ----------
    store
        The one reader and writer of notebooks.
    path
        The notebook path as the caller gave it (for the store's messages).
    api_path
        The notebook's API path.
    emit
        Publishes one ``outputs`` event (the lab shows them in the open notebook).
    via, total_cells, revision
        Where and what the notebook was when the run was accepted.

    """

    def __init__(
        self,
        store: NotebookStore,
        path: str,
        api_path: str,
        emit: Callable[[dict[str, Any]], None],
        *,
        via: str,
        total_cells: int,
        revision: str,
    ) -> None:
        self.notebooks = store
        self.path = path
        self.api_path = api_path
        self.notebook_dir = posixpath.dirname(api_path)
        self.emit = emit
        self.total_cells = total_cells
        self.revision: str | None = revision
        self._live = via != "file"  # where the last read or write went
        self._used_live = self._live
        self._live_via = via if self._live else "document"  # which live document
        self._next_event = 0.0
        self._held: dict[str, Any] | None = None
        self._timer: asyncio.TimerHandle | None = None

    @property
    def via(self) -> str:
        """The live document's ``via`` once any cell went through a room, else ``file``."""
        return self._live_via if self._used_live else "file"

    def _went(self, via: str, place: CellPlace) -> None:
        self._live = via != "file"
        if self._live:
            self._live_via = via
        self._used_live = self._used_live or self._live
        self.total_cells, self.revision = place.total_cells, place.revision

    async def locate(self, cell: SelectedCell) -> SelectedCell | None:
        """The cell as people see it now (in the room when one is open); None when it is gone."""
        outcome = await self.notebooks.view(
            self.path, lambda document: find_cell(document, cell, same_source=False)
        )
        self._went(outcome.via, outcome.value)
        place: CellPlace = outcome.value
        return place.cell

    async def show(
        self, cell: SelectedCell, outputs: list[dict[str, Any]], count: int | None
    ) -> None:
        """Show the outputs so far: in the room while one is open, else as an event."""
        if self._live:
            if await self.notebooks.show_outputs(self.path, cell, outputs, count) is not None:
                return
            self._live = False  # the room closed: the open notebooks get events again
        self._show_event(cell, outputs, count)

    async def store(
        self, cell: SelectedCell, outputs: list[dict[str, Any]], count: int | None
    ) -> bool:
        """Write the final outputs and count; False when the cell is gone."""
        self._drop_held(cell)
        outcome = await self.notebooks.write_outputs(self.path, cell, outputs, count)
        place: CellPlace = outcome.value
        self._went(outcome.via, place)
        if place.cell is None:
            return False
        if outcome.via == "file":
            whole = len(json.dumps(outputs)) <= MAX_EVENT_OUTPUTS
            event = self._event(place.cell, outputs if whole else None, count, final=True)
            event["lastModified"] = outcome.last_modified
            self.emit(event)
        return True

    # -- events for notebooks open without a room ----------------------------------------------

    def _show_event(
        self, cell: SelectedCell, outputs: list[dict[str, Any]], count: int | None
    ) -> None:
        size = len(json.dumps(outputs))
        if size > MAX_EVENT_OUTPUTS:
            outputs = preview_outputs(outputs, MAX_EVENT_OUTPUTS)
            size = MAX_EVENT_OUTPUTS
        event = self._event(cell, outputs, count, final=False)
        now = time.monotonic()
        if now >= self._next_event:
            self._send(event, size)
            return
        # Too soon after a large event: keep only the latest state, send it when due.
        self._held = event
        if self._timer is None:
            delay = self._next_event - now
            self._timer = asyncio.get_running_loop().call_later(delay, self._release, size)

    def _send(self, event: dict[str, Any], size: int) -> None:
        self._next_event = time.monotonic() + size / LIVE_BYTES_PER_SECOND
        self.emit(event)

    def _release(self, size: int) -> None:
        self._timer = None
        held, self._held = self._held, None
        if held is not None:
            self._send(held, size)

    def _drop_held(self, cell: SelectedCell) -> None:
        if self._held is not None and self._held.get("cellIndex") == cell.index:
            self._held = None

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
