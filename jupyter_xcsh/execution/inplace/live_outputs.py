"""Where a run in place writes outputs, and the batching of its live writes.

``OutputsTarget`` is the notebook side of a run (the file, or a collaboration room's live
document): it gives a cell's current source and takes its outputs. ``LiveOutputs`` shows the
outputs of running cells through it at most once per interval, however fast they change, and
one write at a time, so a cell's final outputs are never overtaken by an older live write.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Hashable
from typing import Any, Protocol

from jupyter_xcsh.execution.inplace.result import NotebookCellRun
from jupyter_xcsh.execution.inplace.stored import RunOutputs
from jupyter_xcsh.notebook.outputs import SelectedCell

__all__ = ["LiveOutputs", "OutputsTarget"]


class OutputsTarget(Protocol):
    """Where a run reads its cells and writes their outputs: the file or the live document."""

    @property
    def via(self) -> str:
        """``"file"`` or ``"document"``: where the outputs went."""

    @property
    def notebook_dir(self) -> str:
        """The notebook's folder (API path), for links to artifacts."""

    @property
    def total_cells(self) -> int:
        """Cells in the notebook when it was last read."""

    @property
    def revision(self) -> str | None:
        """The notebook's revision when it was last read or written."""

    async def locate(self, cell: SelectedCell) -> SelectedCell | None:
        """The cell as it is now (index, type, source); None when it was deleted."""

    async def show(
        self, cell: SelectedCell, outputs: list[dict[str, Any]], count: int | None
    ) -> None:
        """Show outputs while the cell runs (called at most once per write interval)."""

    async def store(
        self, cell: SelectedCell, outputs: list[dict[str, Any]], count: int | None
    ) -> bool:
        """Write the cell's outputs and count for good; False when the cell is gone."""


class LiveOutputs:
    """Show changed outputs through the target, batched: at most one write per interval."""

    def __init__(
        self, outputs: RunOutputs, target: OutputsTarget, interval: float, log: logging.Logger
    ) -> None:
        self.outputs = outputs
        self.target = target
        self.interval = interval
        self.log = log
        self.cells: dict[Hashable, NotebookCellRun] = {}
        self.stored: set[Hashable] = set()  # cells whose outputs were written for good
        self.restore: set[Hashable] = set()  # ... and changed since (a display update)
        self._dirty: set[Hashable] = set()
        self._timer: asyncio.TimerHandle | None = None
        self._showing: asyncio.Task[None] | None = None
        # One write at a time: a live write must not land after the cell's final one.
        self._writing = asyncio.Lock()
        self._last = 0.0

    def mark(self, keys: set[Hashable]) -> None:
        """Note that the outputs of ``keys`` changed; show them within the interval."""
        self._dirty |= keys
        self.restore |= keys & self.stored
        self._schedule()

    def _schedule(self) -> None:
        if self._timer is not None or self._showing is not None or not self._dirty:
            return
        delay = max(0.0, self._last + self.interval - time.monotonic())
        self._timer = asyncio.get_running_loop().call_later(delay, self._start)

    def _start(self) -> None:
        self._timer = None
        self._showing = asyncio.ensure_future(self._show(self._take()))
        self._showing.add_done_callback(self._shown)

    def _shown(self, task: asyncio.Task[None]) -> None:
        if self._showing is task:
            self._showing = None
        self._schedule()

    def _take(self, but: Hashable | None = None) -> set[Hashable]:
        # Finished cells changed later are written again for good (``store_changed``), not
        # shown as running.
        taken = {key for key in self._dirty if key != but and key not in self.stored}
        self._dirty -= taken | {but}
        return taken

    async def _show(self, keys: set[Hashable]) -> None:
        async with self._writing:
            self._last = time.monotonic()
            for key in keys:
                cell, built = self.cells.get(key), self.outputs.cells.get(key)
                if cell is None or built is None or cell.selected is None:
                    continue
                try:
                    await self.target.show(cell.selected, built.to_json(), built.execution_count)
                except Exception:  # showing is best effort; storing is what counts
                    self.log.warning("xcsh: could not show run outputs", exc_info=True)

    async def store(self, key: Hashable) -> bool:
        """Write cell ``key``'s outputs for good (after showing what is pending of others)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        await self._show(self._take(but=key))
        cell, built = self.cells[key], self.outputs.cells[key]
        assert cell.selected is not None
        cell.execution_count = built.execution_count
        self.stored.add(key)
        self.restore.discard(key)
        try:
            async with self._writing:
                return await self.target.store(
                    cell.selected, built.to_json(), built.execution_count
                )
        except Exception as e:
            self.log.warning("xcsh: could not write the outputs of a run: %s", e, exc_info=True)
            return False
        finally:
            self._schedule()

    async def store_changed(self) -> None:
        """Write again the finished cells that a later cell's display update changed."""
        restore, self.restore = self.restore, set()
        for key in restore:
            await self.store(key)

    def close(self) -> None:
        """Stop the timer and any live write under way (nothing more is shown by this run)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._showing is not None:
            self._showing.cancel()
