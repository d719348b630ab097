"""One cell of a run in place on the kernel: its request, its messages, its end.

Every IOPub message of the request feeds two things: the caller's result (text through an
``OutputSink``, images and JSON values, as the python tool's) and the outputs stored in the
notebook (``RunOutputs``, as nbclient stores them). The request counts as *started* once the
kernel reports it busy (or echoes its input): only then may a timeout interrupt the kernel,
since before that the kernel is still running someone else's execution.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import Awaitable, Callable, Hashable
from typing import Any

from jupyter_xcsh.calls.control import CallControl
from jupyter_xcsh.calls.observer import ExecutionObserver
from jupyter_xcsh.execution.inplace.live_outputs import LiveOutputs
from jupyter_xcsh.execution.inplace.result import NotebookCellRun
from jupyter_xcsh.execution.inplace.stored import RunOutputs
from jupyter_xcsh.execution.kernel.cell import (
    CANCEL_GRACE,
    LIVENESS_INTERVAL,
    OUTPUT_MESSAGES,
    PROMPT_BARRIER,
    TIMEOUT_GRACE,
    CellState,
    report_error,
    report_output,
)
from jupyter_xcsh.execution.kernel.connection import (
    ConnectionClosedError,
    KernelConnection,
    KernelLostError,
)
from jupyter_xcsh.execution.kernel.stdin import EOF, StdinPolicy
from jupyter_xcsh.outputs.images import CapturedImage, ImageCapture
from jupyter_xcsh.outputs.sink import OutputSink

__all__ = ["CellExecution"]


class CellExecution:
    """Send one cell's source and follow its request until the kernel is done with it."""

    def __init__(
        self,
        cell: NotebookCellRun,
        key: Hashable,
        *,
        connection: KernelConnection,
        sink: OutputSink,
        live: LiveOutputs,
        observer: ExecutionObserver,
        is_alive: Callable[[], Awaitable[bool]],
        images: ImageCapture,
        stdin: StdinPolicy,
    ) -> None:
        self.cell = cell
        self.key = key
        self.connection = connection
        self.sink = sink
        self.live = live
        self.outputs: RunOutputs = live.outputs
        self.observer = observer
        self.is_alive = is_alive
        self.state = CellState()
        self.msg_id = ""
        #: False once the call returned while the cell still runs: only stored outputs follow.
        self.reporting = True
        self.stdin_requested = False
        self.capture = images
        self.stdin = stdin
        self.images: list[CapturedImage] = []
        self.json_outputs: list[Any] = []
        #: Whether the run interrupted the cell (a prompt then ends with KeyboardInterrupt).
        self.interrupted = False
        self._prompts: set[asyncio.Task[None]] = set()

    @property
    def started(self) -> bool:
        """Whether the kernel began executing this request."""
        return self.state.started

    @property
    def reply(self) -> dict[str, Any]:
        """The ``execute_reply`` content (empty until it arrived)."""
        return self.state.reply or {}

    def send(self, source: str, store_history: bool = True) -> str:
        """Send the execute request; return its id (``store_history`` False: scratch code)."""
        self.msg_id = self.connection.execute(source, self.handle, store_history=store_history)
        return self.msg_id

    def close(self) -> None:
        """Stop following the request."""
        for task in list(self._prompts):
            task.cancel()
        self.stdin.abandon()
        self.connection.unroute(self.msg_id)
        self.sink.close()

    async def follow_late(self, own: set[str]) -> None:
        """Keep following a request the call left queued in the kernel, to its end.

        Nothing more is reported to the caller (its call has returned); the outputs are still
        stored as they come, and written for good when the kernel is done with the request.
        ``own`` is the kernel's set of the run's requests, which this one then leaves.
        """
        self.reporting = False
        try:
            await self.wait(math.inf, CallControl(), False)
            await self.live.store(self.key)
        except (KernelLostError, ConnectionClosedError, asyncio.CancelledError):
            pass  # nothing to write into any more, or the server is stopping
        finally:
            self.close()
            own.discard(self.msg_id)

    # -- messages -------------------------------------------------------------------------

    def handle(self, channel: str, msg: dict[str, Any]) -> None:
        """Take one message routed to the request (see ``KernelConnection.route``)."""
        state = self.state
        if channel in ("lost", "closed"):
            state.lost = state.lost or channel == "lost"
            state.closed = state.closed or channel == "closed"
            state.wake.set()
            return
        kind = msg.get("msg_type")
        content = msg.get("content") or {}
        if channel == "iopub":
            if kind == "status":
                execution_state = content.get("execution_state")
                if execution_state == "busy":
                    state.started = True
                elif execution_state == "idle":
                    state.idle = True
                    state.wake.set()
                return
            if kind == "execute_input":
                state.started = True
            elif self.reporting and kind in OUTPUT_MESSAGES:
                report_output(
                    kind,
                    content,
                    self.cell,
                    self.sink,
                    self.observer,
                    self.capture,
                    self,
                    eof_notice=self.stdin_failed,
                )
            changed = self.outputs.handle(self.key, msg)
            if changed:
                self.live.mark(changed)
        elif channel == "shell" and kind == "execute_reply":
            state.reply = content
            count = content.get("execution_count")
            if isinstance(count, int):
                self.outputs.cells[self.key].execution_count = count
                self.live.mark({self.key})
            state.wake.set()
        elif channel == "stdin" and kind == "input_request":
            self.answer_input(content)

    def answer_input(self, content: dict[str, Any]) -> None:
        """Answer the kernel's prompt for input as ``stdin`` says (docs/developers/contract.md §8).

        Once the output printed before the prompt has arrived (``iopub_barrier``), so the
        echo of the prompt comes after it. A cell left to run after its call returned gets
        end-of-file: nobody is there to answer any more.
        """
        if not self.reporting:
            self.connection.input_reply(EOF)
            return
        self.stdin_requested = True

        def echo(text: str) -> None:
            if self.reporting:
                self.sink.push(text)
                self.sink.flush_chunks()  # a prompt shows at once, not after the throttle

        def still_running() -> bool:
            state = self.state
            return not (state.done or state.lost or state.closed or self.interrupted)

        task = asyncio.ensure_future(
            self.stdin.prompt_in_order(
                lambda: self.connection.iopub_barrier(PROMPT_BARRIER),
                still_running,
                self.cell.index,
                content,
                reply=self.connection.input_reply,
                echo=echo,
                snapshot=lambda: (self.sink.snapshot(), list(self.images)),
            )
        )
        self._prompts.add(task)
        task.add_done_callback(self._prompts.discard)

    @property
    def stdin_failed(self) -> bool:
        """Whether the cell asked for input the run did not provide (it then fails)."""
        return self.cell.index in self.stdin.failed_cells

    def error_from_reply(self) -> None:
        """Report the reply's error when no ``error`` message carried it."""
        reply = self.reply
        if reply.get("status") == "error" and self.cell.error is None and reply.get("ename"):
            report_error(reply, self.cell, self.sink, self.capture, eof_notice=self.stdin_failed)

    # -- waiting --------------------------------------------------------------------------

    async def wait(self, until: float, control: CallControl, stop_on_cancel: bool) -> str:
        """Wait for the request: ``done``, cancelled (``cancel``), or ``until`` passed (``time``).

        Raises ``KernelLostError`` when the kernel dies and ``ConnectionClosedError`` when the
        connection closes. Once interrupted (``stop_on_cancel`` false) the kernel is not polled
        for liveness: a slow answer (a gateway's REST call) must not stretch the grace.
        """
        state = self.state
        next_check = time.monotonic() + LIVENESS_INTERVAL if stop_on_cancel else math.inf
        paused = self.stdin.paused
        unlisten = self.stdin.listen(state.wake.set)  # the deadline moves when a prompt ends
        try:
            while not state.done:
                if state.closed or self.connection.closed:
                    raise ConnectionClosedError("the kernel connection was closed")
                if state.lost:
                    raise KernelLostError(self.connection.lost or "kernel lost")
                if stop_on_cancel and control.cancelled:
                    return "cancel"
                now = time.monotonic()
                # Waits for an answer (stdin "ask") are not due: infinite while one lasts.
                end = until + self.stdin.delay() - paused
                if now >= end:
                    return "time"
                if now >= next_check:
                    if not await self.is_alive():
                        raise KernelLostError("kernel is not alive")
                    next_check = time.monotonic() + LIVENESS_INTERVAL
                    continue
                state.wake.clear()
                if state.done or state.lost or state.closed:
                    continue
                if stop_on_cancel and control.cancelled:
                    continue
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(state.wake.wait(), min(end, next_check) - now)
            return "done"
        finally:
            unlisten()

    async def interrupt(
        self, interrupt_kernel: Callable[[], Awaitable[None]], deadline: float
    ) -> bool:
        """Interrupt the kernel (running this request), escalating; whether it stopped.

        The kernel manager's interrupt for half the grace, then a control-channel
        ``interrupt_request``; the grace ends ``CANCEL_GRACE`` seconds from now, or
        ``TIMEOUT_GRACE`` past a deadline already passed, so a timed-out call returns within
        its deadline + 1 s. The kernel is never restarted: it is the person's.
        """
        control = CallControl()
        self.interrupted = True
        self.stdin.abandon()  # the interrupt ends a waiting input() with KeyboardInterrupt
        give_up = min(time.monotonic() + CANCEL_GRACE, deadline + TIMEOUT_GRACE)
        second = time.monotonic() + (give_up - time.monotonic()) / 2
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(interrupt_kernel(), max(0.0, second - time.monotonic()))
        if await self.wait(second, control, False) == "done":
            return True
        self.connection.interrupt_request()
        return await self.wait(give_up, control, False) == "done"
