"""Run one cell on a kernel connection: route its messages into an OutputSink until it is done.

The deadline cells run under is the request's ``timeout``, which both tools (the python tool and
runs in place) take the same way: seconds, clamped to one range (``parse_timeout``).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from jupyter_xcsh.calls.control import CallControl
from jupyter_xcsh.calls.observer import ExecutionObserver
from jupyter_xcsh.errors import InvalidRequestError
from jupyter_xcsh.execution.kernel.connection import (
    ConnectionClosedError,
    KernelConnection,
    KernelLostError,
)
from jupyter_xcsh.execution.kernel.messages import error_output, reduce_display
from jupyter_xcsh.execution.kernel.stdin import StdinPolicy, StdinSpec
from jupyter_xcsh.outputs.images import CapturedImage, ImageCapture, as_base64
from jupyter_xcsh.outputs.sink import OutputSink, SinkResult
from jupyter_xcsh.outputs.tracebacks import save_traceback

__all__ = [
    "DEFAULT_TIMEOUT",
    "TIMEOUT_RANGE",
    "CellOutcome",
    "CellRun",
    "parse_timeout",
    "report_error",
    "report_output",
    "run_cell",
]

#: A request's ``timeout`` (seconds) when it gives none, and the range it is clamped to.
DEFAULT_TIMEOUT = 30.0
TIMEOUT_RANGE = (1.0, 600.0)

#: Seconds between liveness checks while a cell waits for messages.
LIVENESS_INTERVAL = 1.0
#: Seconds past its deadline a timed-out cell gets to stop once interrupted; then it is given up
#: on (``unresponsive``) so the call can end within its deadline + 1 s.
TIMEOUT_GRACE = 0.8
#: Seconds a cancelled cell gets to stop once interrupted (a cancel has no deadline of its own).
CANCEL_GRACE = 3.0
#: Longest wait for the output printed before a prompt, before the prompt is answered anyway.
PROMPT_BARRIER = 1.0


def parse_timeout(body: dict[str, Any]) -> float:
    """A request's ``timeout``: a finite number of seconds, clamped to ``TIMEOUT_RANGE``."""
    timeout = body.get("timeout", DEFAULT_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise InvalidRequestError("timeout must be a number of seconds")
    try:
        seconds = float(timeout)
    except OverflowError:  # an integer beyond any float
        seconds = math.inf
    if not math.isfinite(seconds):
        raise InvalidRequestError("timeout must be a finite number of seconds")
    return min(max(seconds, TIMEOUT_RANGE[0]), TIMEOUT_RANGE[1])


@dataclass
class CellRun:
    """One cell of a call and what running it produced."""

    index: int
    title: str
    code: str
    status: str = "pending"
    output: str = ""
    exit_code: int | None = None
    duration_ms: int | None = None
    status_events: list[dict[str, Any]] = field(default_factory=list)
    error: dict[str, Any] | None = None
    sink: SinkResult | None = None

    def to_json(self) -> dict[str, Any]:
        """The cell as returned in ``cells[]``."""
        body: dict[str, Any] = {
            "index": self.index,
            "title": self.title,
            "status": self.status,
            "output": self.output,
            "exitCode": self.exit_code,
            "durationMs": self.duration_ms,
            "statusEvents": self.status_events,
        }
        if self.error is not None:
            body["error"] = self.error
        if self.sink is not None and self.sink.artifact_id is not None:
            body["artifactId"] = self.sink.artifact_id
        return body


#: The IOPub messages that add to a cell's result: text, images, JSON values, status events.
OUTPUT_MESSAGES = ("stream", "execute_result", "display_data", "update_display_data", "error")


class CollectedDisplays(Protocol):
    """Where a cell's displayed images and JSON values are collected for the call's result."""

    images: list[CapturedImage]
    json_outputs: list[Any]


def report_output(
    kind: str,
    content: dict[str, Any],
    cell: CellRun,
    sink: OutputSink,
    observer: ExecutionObserver,
    capture: ImageCapture,
    collected: CollectedDisplays,
    *,
    eof_notice: bool = False,
) -> None:
    """Add one output message (``OUTPUT_MESSAGES``) to a cell's result, as tools return it.

    Stream text and display text go to ``sink``; images are saved whole (``capture``) and
    collected with JSON values; a ``status(...)`` display becomes a status event, no text.
    An error's traceback is folded (its full text saved as an artifact); with ``eof_notice``
    (the cell's prompt got the stdin notice's end of file) an ``EOFError`` shows no text: the
    notice said it all.
    """
    if kind == "stream":
        sink.push(str(content.get("text", "")))
    elif kind == "error":
        report_error(content, cell, sink, capture, eof_notice=eof_notice)
    else:
        display = reduce_display(content.get("data") or {})
        if display.status is not None:
            cell.status_events.append(display.status)
            observer.status_event(cell.index, display.status)
            return
        if display.text is not None:
            sink.push(display.text)
        for image in display.images:
            # Saved whole as an artifact; the result inlines it within the image budget.
            captured = capture.capture(cell.index, image["mimeType"], image["data"])
            if captured is not None:
                collected.images.append(captured)
                data = as_base64(image["mimeType"], image["data"])
                observer.display(cell.index, "image", {**captured.describe(), "data": data})
        for value in display.json_outputs:
            collected.json_outputs.append(value)
            observer.display(cell.index, "json", value)


def report_error(
    content: dict[str, Any],
    cell: CellRun,
    sink: OutputSink,
    capture: ImageCapture,
    *,
    eof_notice: bool = False,
) -> None:
    """Set the cell's structured error and push its folded traceback (see ``report_output``)."""
    if eof_notice and content.get("ename") == "EOFError":
        _, cell.error = error_output(content)
        return
    text, cell.error = error_output(content, save_traceback(capture.store, capture.tool))
    sink.push(text)


@dataclass
class CellState:
    """Where one execute request is: started, answered, idle, or cut off from its kernel."""

    started: bool = False  # the kernel reported it busy (runs in place use it)
    reply: dict[str, Any] | None = None
    idle: bool = False
    lost: bool = False
    closed: bool = False
    wake: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def done(self) -> bool:
        """Complete: a cell is only with both its execute_reply and its idle status."""
        return self.reply is not None and self.idle


@dataclass
class CellOutcome:
    """How a cell ended: ``ok``, ``error``, ``timeout`` or ``cancelled``."""

    kind: str
    stdin_requested: bool = False
    images: list[CapturedImage] = field(default_factory=list)
    json_outputs: list[Any] = field(default_factory=list)
    #: The cell did not stop after the interrupts: its kernel must be restarted.
    unresponsive: bool = False
    #: The cell asked for input the call did not provide, so it failed
    #: (docs/developers/contract.md §8.1).
    stdin_failed: bool = False


async def run_cell(
    connection: KernelConnection,
    cell: CellRun,
    sink: OutputSink,
    *,
    deadline: float,
    control: CallControl,
    observer: ExecutionObserver,
    interrupt: Callable[[], Awaitable[None]],
    is_alive: Callable[[], Awaitable[bool]],
    images: ImageCapture | None = None,
    stdin: StdinPolicy | None = None,
) -> CellOutcome:
    """Execute ``cell.code`` and collect its output; raise ``KernelLostError`` if it dies.

    Past ``deadline``, or once ``control`` is cancelled, the cell is interrupted: first through
    ``interrupt`` (the kernel manager's), then with a control-channel ``interrupt_request``.
    A cell still running after its grace comes back ``unresponsive``; it is the caller's to
    decide what to do with such a kernel (a session restarts it).

    ``images`` saves every displayed image as it arrives (none saved without it); ``stdin``
    answers the kernel's prompts (``"notice"`` without it). Time spent waiting for an answer
    does not count against ``deadline``.
    """
    outcome = CellOutcome("ok")
    capture = images or ImageCapture(None)
    policy = stdin or StdinPolicy(StdinSpec())
    state = CellState()

    def echo(text: str) -> None:
        sink.push(text)
        sink.flush_chunks()  # a prompt is shown at once, not after the throttle interval

    prompts: set[asyncio.Task[None]] = set()

    def still_running() -> bool:
        # Over, or being interrupted (which ends the prompt with KeyboardInterrupt).
        return not (state.done or state.lost or state.closed or control.cancelled)

    def answer_prompt(content: dict[str, Any]) -> Awaitable[None]:
        return policy.prompt_in_order(
            lambda: connection.iopub_barrier(PROMPT_BARRIER),
            still_running,
            cell.index,
            content,
            reply=connection.input_reply,
            echo=echo,
            snapshot=lambda: (sink.snapshot(), list(outcome.images)),
        )

    def handle(channel: str, msg: dict[str, Any]) -> None:
        if channel in ("lost", "closed"):
            policy.abandon()
            state.lost = state.lost or channel == "lost"
            state.closed = state.closed or channel == "closed"
            state.wake.set()
            return
        kind = msg.get("msg_type")
        content = msg.get("content", {})
        if channel == "iopub":
            if kind in OUTPUT_MESSAGES:
                eof_notice = cell.index in policy.failed_cells
                report_output(
                    kind, content, cell, sink, observer, capture, outcome, eof_notice=eof_notice
                )
            elif kind == "status" and content.get("execution_state") == "idle":
                state.idle = True
                if state.done:
                    state.wake.set()
        elif channel == "shell" and kind == "execute_reply":
            state.reply = content
            if state.done:
                state.wake.set()
        elif channel == "stdin" and kind == "input_request":
            outcome.stdin_requested = True
            task = asyncio.ensure_future(answer_prompt(content))
            prompts.add(task)
            task.add_done_callback(prompts.discard)

    async def wait(until: float, stop_on_cancel: bool) -> str:
        """Wait until the cell is done ('done'), cancelled ('cancel') or the time is up.

        Once interrupted (``stop_on_cancel`` false) the kernel is not polled for liveness: a
        slow answer (a gateway's REST call) must not stretch the grace.
        """
        next_check = time.monotonic() + LIVENESS_INTERVAL if stop_on_cancel else math.inf
        paused = policy.paused
        while not state.done:
            if state.closed or connection.closed:
                raise ConnectionClosedError("the kernel connection was closed")
            if state.lost:
                raise KernelLostError(connection.lost or "kernel lost")
            if stop_on_cancel and control.cancelled:
                return "cancel"
            now = time.monotonic()
            end = until + policy.delay() - paused  # infinite while a prompt waits for an answer
            if now >= end:
                return "time"
            if now >= next_check:
                if not await is_alive():
                    raise KernelLostError("kernel is not alive")
                next_check = time.monotonic() + LIVENESS_INTERVAL
                continue
            state.wake.clear()
            if state.done or state.lost or state.closed or (stop_on_cancel and control.cancelled):
                continue
            with contextlib.suppress(TimeoutError):
                # asyncio.timeout, not wait_for: no task of its own per wait.
                async with asyncio.timeout(min(end, next_check) - now):
                    await state.wake.wait()
        return "done"

    msg_id = connection.execute(cell.code, handle)
    control.attach(state.wake.set)
    unlisten = policy.listen(state.wake.set)  # a deadline moves when a prompt is answered
    paused_before = policy.paused
    try:
        ended = await wait(deadline, True)
        if ended != "done":
            outcome.kind = "timeout" if ended == "time" else "cancelled"
            policy.abandon()  # the interrupt ends input() with KeyboardInterrupt
            deadline += policy.paused - paused_before  # as moved by waits for answers
            give_up = min(time.monotonic() + CANCEL_GRACE, deadline + TIMEOUT_GRACE)
            # Half the grace for the kernel manager's interrupt, then the control channel's.
            second = time.monotonic() + (give_up - time.monotonic()) / 2
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(interrupt(), max(0.0, second - time.monotonic()))
            ended = await wait(second, False)
            if ended != "done":
                connection.interrupt_request()
                ended = await wait(give_up, False)
            outcome.unresponsive = ended != "done"
            return outcome
        reply = state.reply or {}
        if cell.index in policy.failed_cells:
            outcome.kind, outcome.stdin_failed = "error", True
        if reply.get("status") != "ok":
            outcome.kind = "error"
            if cell.error is None and reply.get("status") == "error":
                eof_notice = outcome.stdin_failed
                report_error(reply, cell, sink, capture, eof_notice=eof_notice)
        return outcome
    finally:
        for task in list(prompts):
            task.cancel()
        policy.abandon()
        unlisten()
        control.attach(None)
        connection.unroute(msg_id)
