"""Outputs of a run in place written into a collaboration room's live document (SPEC §5, §6).

When someone has the notebook open with jupyter-collaboration, the room's shared document is
the notebook: writing the file would make the room reload it from disk over what people typed.
So a run reads each cell's source from the shared document and writes the cell's outputs and
execution count there, in one transaction per write, at most every write interval while the cell
runs; every open lab tab shows them as they come, and the room saves the file as it always does.

Each write finds the cell by id first (a person may have moved it, or deleted it: then nothing is
written). A stream that only grew since the last write is appended to the shared text rather
than replaced, as the lab appends the outputs of the cells it runs, so open tabs do not redraw
the whole output ten times a second. While a cell runs its ``execution_state`` is ``running``,
so the lab shows ``[*]`` in its prompt.
"""

from __future__ import annotations

import asyncio
import logging
import posixpath
import time
from collections.abc import Mapping
from typing import Any

from ..execution.run_request import SelectedCell

__all__ = ["DocumentOutputs", "find_live_document", "shared_cells"]

log = logging.getLogger(__name__)

#: The server setting under which jupyter_server_ydoc publishes its extension app.
YDOC_SETTING = "jupyter_server_ydoc"
#: Seconds to wait for a room that is still loading its notebook.
LOAD_TIMEOUT = 5.0


def _nbformat(ynotebook: Any) -> tuple[int, int]:
    from pycrdt import Map

    meta = ynotebook.ydoc.get("meta", type=Map)
    major, minor = meta.get("nbformat"), meta.get("nbformat_minor")
    if isinstance(major, (int, float)) and isinstance(minor, (int, float)):
        return int(major), int(minor)
    return 0, 0


async def find_live_document(settings: Mapping[str, Any], api_path: str) -> Any:
    """The loaded shared notebook of the room open for ``api_path``; None without one.

    Through jupyter_server_ydoc's ``get_document(..., copy=False)`` (never ``create``); None
    when the extension is absent, real time collaboration is off or no room is open.
    """
    extension = settings.get(YDOC_SETTING)
    if extension is None or getattr(extension, "disable_rtc", False):
        return None
    get_document = getattr(extension, "get_document", None)
    if not callable(get_document):
        return None
    deadline = time.monotonic() + LOAD_TIMEOUT
    while True:
        try:
            document = await get_document(
                path=api_path, content_type="notebook", file_format="json", copy=False
            )
        except Exception:  # the collaboration layer's own trouble: the file will do
            log.warning("Could not look up a collaboration room for %s", api_path, exc_info=True)
            return None
        if document is None or not hasattr(document, "ycells"):
            return None
        if _nbformat(document) != (0, 0):
            return document
        if time.monotonic() >= deadline:  # a room that never finished loading its notebook
            return None
        await asyncio.sleep(0.05)


def _cell(ycell: Any, index: int, with_ids: bool) -> SelectedCell:
    cell_id = ycell.get("id") if with_ids else None
    source = ycell.get("source")
    return SelectedCell(
        index=index,
        cell_id=cell_id if isinstance(cell_id, str) else None,
        cell_type=str(ycell.get("cell_type", "")),
        source=str(source) if source is not None else "",
    )


def shared_cells(ynotebook: Any) -> list[dict[str, Any]]:
    """The shared notebook's cells as nbformat JSON (id, type, source), to select from."""
    with_ids = _nbformat(ynotebook) >= (4, 5)
    with ynotebook.ydoc.transaction():
        cells = [_cell(ycell, i, with_ids) for i, ycell in enumerate(ynotebook.ycells)]
    return [
        {"cell_type": c.cell_type, "source": c.source, **({"id": c.cell_id} if c.cell_id else {})}
        for c in cells
    ]


def _youtput(output: dict[str, Any]) -> Any:
    """One output as the shared document holds it (stream text as shared text, as jupyter_ydoc)."""
    from pycrdt import Map, Text

    output = dict(output)
    if output.get("output_type") == "stream":
        text = output.get("text", "")
        output["text"] = Text("".join(text) if isinstance(text, list) else str(text))
    return Map(output)


def _youtputs(outputs: list[dict[str, Any]]) -> Any:
    from pycrdt import Array

    return Array([_youtput(output) for output in outputs])


def _replace_outputs(ycell: Any, outputs: list[dict[str, Any]]) -> None:
    """Replace a cell's outputs, keeping its shared array, as jupyter_ydoc does.

    Every open lab tab observes that very array: a new array set on the cell goes unseen.
    """
    youtputs = ycell.get("outputs")
    if youtputs is None or not hasattr(youtputs, "extend"):
        ycell["outputs"] = _youtputs(outputs)
        return
    del youtputs[0 : len(youtputs)]
    youtputs.extend([_youtput(output) for output in outputs])


class DocumentOutputs:
    """Read a run's cells from a room's shared notebook and write their outputs into it."""

    via = "document"

    def __init__(self, ynotebook: Any, api_path: str) -> None:
        self.ynotebook = ynotebook
        self.api_path = api_path
        self.notebook_dir = posixpath.dirname(api_path)
        self.total_cells = len(ynotebook.ycells)
        self._with_ids = _nbformat(ynotebook) >= (4, 5)
        # What this run last wrote into each cell (by id or index), to append to a growing stream.
        self._written: dict[Any, list[dict[str, Any]]] = {}
        # Shared-document ids of cells whose file has none (nbformat < 4.5), by run index.
        self._ids: dict[int, str] = {}

    def _find(self, cell: SelectedCell) -> int | None:
        """Where the cell is now, found by id.

        In a notebook whose file has no ids, by the shared document's own id of the cell once
        the run has located it (before that, by its index).
        """
        ycells = self.ynotebook.ycells
        self.total_cells = len(ycells)
        cell_id = cell.cell_id if cell.cell_id is not None else self._ids.get(cell.index)
        if cell_id is None:
            return cell.index if cell.index < len(ycells) else None
        for i, ycell in enumerate(ycells):
            if ycell.get("id") == cell_id:
                return i
        return None

    async def locate(self, cell: SelectedCell) -> SelectedCell | None:
        """The cell as people see it now; None when it was deleted."""
        with self.ynotebook.ydoc.transaction():
            index = self._find(cell)
            if index is None:
                return None
            ycell = self.ynotebook.ycells[index]
            now = _cell(ycell, index, self._with_ids)
            if now.cell_id is None and isinstance(ycell.get("id"), str):
                self._ids[now.index] = ycell.get("id")
            return now

    def show(self, cell: SelectedCell, outputs: list[dict[str, Any]], count: int | None) -> None:
        """Write the outputs so far (one transaction); the cell shows as running."""
        self._write(cell, outputs, count, running=True)

    async def store(
        self, cell: SelectedCell, outputs: list[dict[str, Any]], count: int | None
    ) -> bool:
        """Write the final outputs and count; False when the cell is gone."""
        return self._write(cell, outputs, count, running=False)

    def _write(
        self, cell: SelectedCell, outputs: list[dict[str, Any]], count: int | None, running: bool
    ) -> bool:
        key = cell.cell_id if cell.cell_id is not None else cell.index
        with self.ynotebook.ydoc.transaction():
            index = self._find(cell)
            if index is None:
                return False
            ycell = self.ynotebook.ycells[index]
            if ycell.get("cell_type") != "code":
                return False
            if not self._append(ycell, self._written.get(key), outputs):
                _replace_outputs(ycell, outputs)
            if ycell.get("execution_count") != count:
                ycell["execution_count"] = count
            state = "running" if running else "idle"
            if "execution_state" in ycell and ycell.get("execution_state") != state:
                ycell["execution_state"] = state
        self._written[key] = outputs
        return True

    @staticmethod
    def _append(
        ycell: Any, before: list[dict[str, Any]] | None, after: list[dict[str, Any]]
    ) -> bool:
        """Turn ``before`` into ``after`` by appending (text, outputs); False if it cannot."""
        youtputs = ycell.get("outputs")
        if before is None or youtputs is None or len(youtputs) != len(before) or not before:
            return False
        if len(after) < len(before) or after[: len(before) - 1] != before[:-1]:
            return False
        last, new = before[-1], after[len(before) - 1]
        if last == new:
            grown = ""
        elif (
            last.get("output_type") == new.get("output_type") == "stream"
            and last.get("name") == new.get("name")
            and str(new.get("text", "")).startswith(str(last.get("text", "")))
        ):
            grown = str(new["text"])[len(str(last.get("text", ""))) :]
        else:
            return False
        ytext = youtputs[len(before) - 1].get("text") if grown else None
        if grown:
            if ytext is None or isinstance(ytext, str) or len(str(ytext)) != len(last["text"]):
                return False  # someone else changed this output meanwhile
            ytext += grown
        for output in after[len(before) :]:
            youtputs.append(_youtput(output))
        return True
