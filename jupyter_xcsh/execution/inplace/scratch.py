"""Scratch code on a notebook's kernel: the python tool's cells, run as a run in place runs.

An agent that wants a value from the notebook's kernel (``df.units.sum()``) without adding a
cell sends its code with the python tool's ``notebook_path``. The code takes the notebook's turn
and its kernel exactly as a run in place does (``service.py``: queued behind the notebook's
other runs, waiting while someone else's cell runs, never interrupting a person's request), but
it belongs to no cell: it is sent with ``store_history`` false (no execution count taken,
nothing in the kernel's history), nothing is written into the notebook, and the result has the
python tool's shape, with the kernel and the notebook in place of a session.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from jupyter_xcsh.execution.inplace.result import NotebookCellRun, RunOutcome
from jupyter_xcsh.execution.kernel.cell import CellRun
from jupyter_xcsh.execution.kernel.result import assemble_result
from jupyter_xcsh.notebook.outputs import SelectedCell

__all__ = ["ScratchCellRun", "ScratchOutcome", "ScratchTarget", "assemble_scratch_result"]


@dataclass
class ScratchCellRun(NotebookCellRun):
    """One scratch cell: numbered from 1 in messages (``selected.index``), as the python tool's."""

    def to_json(self) -> dict[str, Any]:
        """The cell as the python tool returns it (no notebook cell behind it)."""
        return CellRun.to_json(self)


@dataclass
class ScratchOutcome(RunOutcome):
    """What scratch code produced; the run-in-place rules' messages, said of no notebook cell."""

    def left_queued(self, cell: NotebookCellRun, timed_out: bool, seconds_left: float) -> None:
        """The deadline passed while the code waited in the kernel behind someone's execution."""
        super().left_queued(cell, timed_out, seconds_left)
        number = cell.selected.index if cell.selected is not None else cell.index + 1
        self.abort = (
            f"Cell {number} is still queued in the kernel behind another execution; it was not "
            "interrupted and will run when the kernel reaches it (its output is not returned)."
        )


class ScratchTarget:
    """The ``OutputsTarget`` of scratch code: each cell is its own code, nothing is written."""

    via = "kernel"
    total_cells = 0
    revision = None

    def __init__(self, notebook_dir: str) -> None:
        self.notebook_dir = notebook_dir

    async def locate(self, cell: SelectedCell) -> SelectedCell | None:
        """The cell as it was given: no person changes scratch code."""
        return cell

    async def show(
        self, cell: SelectedCell, outputs: list[dict[str, Any]], count: int | None
    ) -> None:
        """Nothing is shown anywhere but in the result."""

    async def store(
        self, cell: SelectedCell, outputs: list[dict[str, Any]], count: int | None
    ) -> bool:
        """Nothing is stored: no notebook cell holds scratch code."""
        return False


def scratch_cells(codes: list[tuple[str, str]]) -> list[ScratchCellRun]:
    """The cells of a scratch call, from its ``(title, code)`` pairs."""
    return [
        ScratchCellRun(i, title, code, selected=SelectedCell(i + 1, None, "code", code))
        for i, (title, code) in enumerate(codes)
    ]


def assemble_scratch_result(outcome: RunOutcome) -> dict[str, Any]:
    """The python tool's result of scratch code: ``kernel`` and ``notebook``, no ``session``."""
    body = assemble_result(outcome)
    body["session"] = None
    body["isError"] = bool(body["isError"] or outcome.state_lost)
    body["stateLost"] = outcome.state_lost
    body["kernel"] = outcome.kernel.to_json() if outcome.kernel is not None else None
    body["notebook"] = {"path": outcome.path}
    return body
