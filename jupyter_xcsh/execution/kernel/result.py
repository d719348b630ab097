"""Assemble a python tool call's result: combined text, counters and structured outputs."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from jupyter_xcsh.artifacts.store import ArtifactStore
from jupyter_xcsh.execution.kernel.cell import CellRun
from jupyter_xcsh.execution.kernel.stdin import StdinPolicy
from jupyter_xcsh.outputs.images import CapturedImage, ImageResult, budget_images

__all__ = [
    "CallOutcome",
    "assemble_result",
    "closing_lines",
    "failure_line",
    "image_lines",
    "partial_result",
    "timeout_notice",
    "whole_seconds",
    "with_lines",
]

OutcomeT = TypeVar("OutcomeT", bound="CallOutcome")


def whole_seconds(seconds: float) -> int:
    """Seconds as the timeout notice gives them: rounded half up, at least 1."""
    return max(1, math.floor(seconds + 0.5))


def timeout_notice(seconds_left: float) -> str:
    """The notice of a call that timed out with ``seconds_left`` when its cell started."""
    return f"Command timed out after {whole_seconds(seconds_left)} seconds"


@dataclass
class CallOutcome:
    """Everything a call produced, before it is turned into the response body."""

    cells: list[CellRun]
    max_output_bytes: int
    images: list[CapturedImage] = field(default_factory=list)
    #: What the result shows of ``images`` (``budget_images``), set before assembling.
    image_results: list[ImageResult] = field(default_factory=list)
    json_outputs: list[Any] = field(default_factory=list)
    cancelled: bool = False
    timed_out: bool = False
    stdin_requested: bool = False
    #: A cell failed because it asked for input the call did not provide
    #: (docs/developers/contract.md §8.1).
    stdin_failed: bool = False
    notice: str | None = None  # "Command timed out after n seconds", "Command cancelled"
    abort: str | None = None  # a failure that is not a cell's: too many restarts, no kernel
    notices: list[str] = field(default_factory=list)  # about the kernel's environment
    session: dict[str, Any] = field(default_factory=dict)


def image_lines(outcome: CallOutcome) -> dict[int, list[str]]:
    """Lines naming each image (docs/developers/contract.md §7.5), by the index of its cell."""
    lines: dict[int, list[str]] = {}
    for image in outcome.image_results:
        lines.setdefault(image.cell_index, []).append(image.marker())
    return lines


def with_lines(text: str, lines: list[str]) -> str:
    """``text`` followed by ``lines`` (a cell's image lines), one a line."""
    return "\n".join([text, *lines] if text else lines)


def failure_line(number: int, cell_count: int) -> str:
    """What a call's text says of its failed cell ``number``: with several, which one to fix."""
    if cell_count == 1:
        return "Command exited with code 1"
    return (
        f"Cell {number} failed (exit code 1). Earlier cells succeeded—their state persists. "
        f"Fix only cell {number}."
    )


def closing_lines(outcome: CallOutcome) -> list[str]:
    """The last lines of a call's text: why it stopped, when it is no cell's failure.

    A cell that failed because it asked for input says so in its output (``stdin_notice``).
    """
    return [outcome.abort] if outcome.abort else []


def _combined_text(outcome: CallOutcome) -> str:
    cells = outcome.cells
    # A running cell has a sink only in a partial result (a call waiting for input).
    ran = [c for c in cells if c.status in ("complete", "error") or c.sink is not None]
    notice_line = f"[{outcome.notice}]\n" if outcome.notice else ""
    images = image_lines(outcome)
    parts: list[str] = []
    if len(cells) == 1 and ran:
        parts.append(ran[0].output.rstrip("\n"))
    else:
        for cell in ran:
            header = f"[{cell.index + 1}/{len(cells)}]" + (f" {cell.title}" if cell.title else "")
            output = cell.output
            if notice_line and output.startswith(notice_line):
                output = output[len(notice_line) :]
            output = output.rstrip("\n")
            if not output and cell.status == "complete":
                part = f"{header} (ok)"
            else:
                part = f"{header}\n{output}" if output else header
            parts.append(with_lines(part, images.pop(cell.index, [])))
        if notice_line and ran:
            parts.insert(0, notice_line.rstrip("\n"))
    if not any(p.strip() for p in parts):
        parts = ["(no text output)" if outcome.images or outcome.json_outputs else "(no output)"]
        if notice_line:
            parts.insert(0, notice_line.rstrip("\n"))
    if len(cells) == 1 and ran:  # its output (or the placeholder) is the last part
        parts[-1] = with_lines(parts[-1], images.pop(ran[0].index, []))
    parts.extend(line for rest in images.values() for line in rest)
    parts.extend(outcome.notices)
    failed = next((c for c in ran if c.status == "error"), None)
    if failed is not None and outcome.notice is None and outcome.abort is None:
        parts.append(failure_line(failed.index + 1, len(cells)))
    parts.extend(closing_lines(outcome))
    return "\n\n".join(p for p in parts if p)


def assemble_result(outcome: CallOutcome) -> dict[str, Any]:
    """The response body of a python tool call (also the last line of a stream)."""
    sinks = [c.sink for c in outcome.cells if c.sink is not None]
    spilled = [s for s in sinks if s.artifact_id is not None]
    is_error = bool(
        outcome.cancelled
        or outcome.timed_out
        or outcome.abort
        or any(c.status == "error" for c in outcome.cells)
    )
    body: dict[str, Any] = {
        "text": _combined_text(outcome),
        "isError": is_error,
        "cancelled": outcome.cancelled,
        "timedOut": outcome.timed_out,
        "stdinRequested": outcome.stdin_requested,
        "cells": [c.to_json() for c in outcome.cells],
        "images": [image.to_json() for image in outcome.image_results],
        "jsonOutputs": outcome.json_outputs,
        "statusEvents": [e for c in outcome.cells for e in c.status_events],
        "truncated": any(s.truncated for s in sinks),
        "totalLines": sum(s.total_lines for s in sinks),
        "totalBytes": sum(s.total_bytes for s in sinks),
        "outputLines": sum(s.output_lines for s in sinks),
        "outputBytes": sum(s.output_bytes for s in sinks),
        "session": outcome.session,
    }
    if outcome.notices:
        body["notices"] = outcome.notices
    if spilled:
        body["artifactId"] = spilled[-1].artifact_id
        body["artifactPath"] = spilled[-1].artifact_path
    return body


async def partial_result(
    outcome: OutcomeT,
    stdin: StdinPolicy,
    call_id: str | None,
    artifact_store: ArtifactStore,
    assemble: Callable[[OutcomeT], dict[str, Any]],
) -> dict[str, Any]:
    """The result of a call so far (stdin ``ask``), its running cell's output included.

    It says which prompt waits and how to answer it; nothing of a prompt answered meanwhile
    (the result is then made again).
    """
    waiting = stdin.waiting
    cells = list(outcome.cells)
    images = list(outcome.images)
    if waiting is not None:
        sink, cell_images = waiting.snapshot()
        cell = cells[waiting.cell_index]
        cells[waiting.cell_index] = dataclasses.replace(cell, output=sink.output, sink=sink)
        images += cell_images
    partial = dataclasses.replace(outcome, cells=cells, images=images)
    partial.image_results = await budget_images(images, artifact_store)
    result = assemble(partial)
    result["callId"] = call_id
    result["isError"] = False
    if waiting is not None and waiting is stdin.waiting:
        result["stdinRequested"] = True
        result["awaitingInput"] = waiting.describe(stdin.run_id)
        result["text"] += "\n\n" + waiting.instructions(stdin.run_id, stdin.input_timeout)
    return result
