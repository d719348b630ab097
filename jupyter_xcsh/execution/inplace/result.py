"""A run in place's result: the python tool's shape, plus cell ids, counts, kernel and notebook."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from jupyter_xcsh.execution.inplace.kernels import NotebookSession
from jupyter_xcsh.execution.kernel.cell import CellRun
from jupyter_xcsh.execution.kernel.result import (
    CallOutcome,
    assemble_result,
    closing_lines,
    failure_line,
    image_lines,
    timeout_notice,
    with_lines,
)
from jupyter_xcsh.notebook.outputs import SelectedCell
from jupyter_xcsh.outputs.images import CapturedImage

__all__ = ["NotebookCellRun", "RunOutcome", "assemble_run_result", "failure_summary"]


@dataclass
class NotebookCellRun(CellRun):
    """One cell of a run: the python tool's cell plus where it lives in the notebook.

    ``index`` is the cell's position in the run; ``selected`` the notebook cell (its index
    there, id, type and the source that was sent).
    """

    cell_id: str | None = None
    selected: SelectedCell | None = None
    execution_count: int | None = None
    outputs_written: bool = False
    skip_reason: str | None = None

    def skip(self, reason: str) -> None:
        """Mark the cell as not run, saying why (a markdown cell, deleted, empty)."""
        self.status, self.skip_reason = "skipped", reason

    def to_json(self) -> dict[str, Any]:
        """The cell as returned in ``cells[]``: ``index`` is its index in the notebook."""
        body = super().to_json()
        body["index"] = self.selected.index if self.selected is not None else self.index
        body["cellId"] = self.cell_id
        body["executionCount"] = self.execution_count
        body["outputsWritten"] = self.outputs_written
        if self.skip_reason is not None:
            body["skipReason"] = self.skip_reason
        return body


@dataclass
class RunOutcome(CallOutcome):
    """Everything a run produced, before it becomes the response body."""

    cells: list[NotebookCellRun]  # type: ignore[assignment]
    path: str = ""
    via: str = "file"
    kernel: NotebookSession | None = None
    total_cells: int = 0
    revision: str | None = None
    state_lost: bool = False
    #: The run must not go on (nothing more can be sent before the deadline).
    stop: bool = False
    #: Asked before each cell is sent (an ``ask-before-run`` cell waits for the person): a
    #: message stops the run there (the cell and later ones not run); None goes on.
    before_cell: Callable[[NotebookCellRun], Awaitable[str | None]] | None = None

    def nothing_sent(self, notice: str) -> None:
        """The deadline passed before a cell could be sent: it (and later ones) never ran."""
        self.timed_out = self.cancelled = True
        self.notice = notice

    @property
    def sent(self) -> bool:
        """Whether any cell was sent to the kernel."""
        return any(c.status not in ("pending", "skipped") for c in self.cells)

    def cancel(self, notice: str) -> None:
        """The caller cancelled the run between two cells."""
        self.cancelled = True
        self.notice = self.notice or notice

    def kernel_died(self) -> str:
        """The kernel died during the run: its state is lost and nothing is re-run."""
        self.state_lost = True
        self.abort = (
            "The kernel died during the run: its state is lost. Nothing was re-run; "
            "cells after the one that was running did not run."
        )
        return "Kernel died"

    def stopped(
        self, cell: NotebookCellRun, cancelled: bool, seconds_left: float, stuck: bool
    ) -> str:
        """The running cell was interrupted (timeout or cancel); return its notice."""
        self.cancelled = True
        if cancelled:
            notice = "Command cancelled"
        else:
            self.timed_out = True
            notice = timeout_notice(seconds_left)
        cell.status, cell.exit_code = "error", None
        if stuck:
            self.abort = (
                "The kernel did not stop after an interrupt: it is still running cell "
                f"{_where(cell)}."
            )
        self.notice = notice
        return notice

    def left_queued(self, cell: NotebookCellRun, timed_out: bool, seconds_left: float) -> None:
        """The deadline passed while the cell waited in the kernel behind someone's execution."""
        self.cancelled = True
        self.timed_out = self.timed_out or timed_out
        index = _where(cell)
        self.notice = timeout_notice(seconds_left) if timed_out else "Command cancelled"
        self.abort = (
            f"Cell {index} is still queued in the kernel behind another execution; it was not "
            "interrupted and will run when the kernel reaches it (its outputs are written then)."
        )
        cell.status, cell.exit_code = "error", None

    def add_displays(self, images: list[CapturedImage], values: list[Any], stdin: bool) -> None:
        """Collect a cell's images and JSON values for the result."""
        self.images.extend(images)
        self.json_outputs.extend(values)
        self.stdin_requested = self.stdin_requested or stdin


def _text(outcome: RunOutcome) -> str:
    cells = outcome.cells
    notice_line = f"[{outcome.notice}]" if outcome.notice else None
    ran = [c for c in cells if c.status in ("complete", "error")]
    empty = "(no text output)" if outcome.images or outcome.json_outputs else "(no output)"
    images = image_lines(outcome)  # by the cell's position in the run
    parts: list[str | None] = []
    if len(cells) == 1:
        cell = cells[0]
        if cell in ran:
            parts.append(with_lines(cell.output.rstrip("\n") or empty, images.pop(0, [])))
        elif cell.status == "skipped":
            parts.append(f"Cell {_where(cell)} was not run ({cell.skip_reason})")
        else:
            parts.append(notice_line)
    else:
        parts.append(notice_line)
        for k, cell in enumerate(cells, 1):
            header = f"[{k}/{len(cells)}] {cell.title}"
            if cell.status == "skipped":
                parts.append(f"{header} (skipped: {cell.skip_reason})")
            elif cell in ran:
                output = cell.output
                if notice_line and output.startswith(notice_line + "\n"):
                    output = output[len(notice_line) + 1 :]
                output = output.rstrip("\n")
                if not output and cell.status == "complete" and cell.index not in images:
                    parts.append(f"{header} (ok)")
                else:
                    part = f"{header}\n{output}" if output else header
                    parts.append(with_lines(part, images.pop(cell.index, [])))
    failed = next((c for c in ran if c.status == "error"), None)
    if failed is not None and outcome.notice is None and outcome.abort is None:
        parts.append(failure_line(_where(failed), len(cells)))
    parts.extend(f"[{notice}]" for notice in outcome.notices)
    parts.extend(closing_lines(outcome))
    return "\n\n".join(p for p in parts if p) or "(no output)"


def _where(cell: NotebookCellRun) -> int:
    """The cell's index in the notebook."""
    return cell.selected.index if cell.selected is not None else cell.index


def assemble_run_result(outcome: RunOutcome) -> dict[str, Any]:
    """The response body of a run (also the last line of a stream)."""
    body = assemble_result(outcome)
    del body["session"]
    body["text"] = _text(outcome)
    body["isError"] = bool(body["isError"] or outcome.state_lost)
    body["stateLost"] = outcome.state_lost
    body["kernel"] = outcome.kernel.to_json() if outcome.kernel is not None else None
    body["notebook"] = {
        "path": outcome.path,
        "via": outcome.via,
        "revision": outcome.revision,
        "totalCells": outcome.total_cells,
    }
    return body


def failure_summary(
    outcome: RunOutcome, error: BaseException, call_id: str | None
) -> dict[str, Any]:
    """A result-shaped summary of a run that raised instead of returning a result."""
    message = getattr(error, "message", None) or str(error) or type(error).__name__
    return {
        "text": message,
        "isError": True,
        "cancelled": isinstance(error, asyncio.CancelledError),
        "timedOut": False,
        "cells": [c.to_json() for c in outcome.cells],
        "callId": call_id,
    }
