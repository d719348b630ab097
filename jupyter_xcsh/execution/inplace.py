"""Run cells of a notebook in place: in the notebook's own kernel, outputs written back into it.

The kernel is a person's: the run never harms their work. It waits (within its deadline) while
the kernel executes someone else's request and sends nothing once the deadline has passed; it
interrupts only its own cell, and only once the kernel has started executing it (a request still
queued behind someone's execution is left to run, and its outputs are written when it ends); it
never restarts the kernel, and when the kernel dies the run stops (``stateLost``) and re-runs
nothing. Each cell's source is read when it is sent, since a person may have changed it, and its
outputs are written only into the cell with that id: a cell deleted meanwhile gets nothing.

Where sources come from and outputs go (the file, or the live document of a collaboration room)
is the ``OutputsTarget`` the caller gives; this module knows neither files nor HTTP.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import weakref
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..outputs.artifacts import ArtifactStore, ArtifactWriter
from ..outputs.sink import OutputSink
from .cell import INTERRUPT_GRACE, LIVENESS_INTERVAL, CallControl
from .connection import ConnectionClosedError, KernelConnection, KernelLostError
from .messages import STDIN_NOTICE, error_output, reduce_display
from .nboutputs import ArtifactLink, RunOutputs
from .notebook_kernels import NotebookKernel, NotebookKernels, NotebookSession
from .observer import ExecutionObserver
from .result import format_seconds
from .run_request import RunRequest, SelectedCell
from .run_result import RunCell, RunOutcome, assemble_run_result

__all__ = ["OutputsTarget", "RunService"]


class OutputsTarget(Protocol):
    """Where a run reads its cells and writes their outputs: the file or the live document."""

    #: ``"file"`` or ``"document"``.
    via: str
    #: The notebook's folder (API path), for links to artifacts.
    notebook_dir: str
    #: Cells in the notebook when it was last read.
    total_cells: int

    async def locate(self, cell: SelectedCell) -> SelectedCell | None:
        """The cell as it is now (index, type, source); None when it was deleted."""

    def show(self, cell: SelectedCell, outputs: list[dict[str, Any]], count: int | None) -> None:
        """Show outputs while the cell runs (cheap, called at most every write interval)."""

    async def store(
        self, cell: SelectedCell, outputs: list[dict[str, Any]], count: int | None
    ) -> bool:
        """Write the cell's outputs and count for good; False when the cell is gone."""


@dataclass
class _Execution:
    """One execute request of the run and what the kernel said about it."""

    started: bool = False
    reply: dict[str, Any] | None = None
    idle: bool = False
    lost: bool = False
    closed: bool = False
    stdin_requested: bool = False
    #: False once the call returned while the cell still ran: only stored outputs follow it.
    reporting: bool = True
    images: list[dict[str, str]] = field(default_factory=list)
    json_outputs: list[Any] = field(default_factory=list)
    wake: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def done(self) -> bool:
        # Complete only with both the execute_reply and the idle status.
        return self.reply is not None and self.idle


class _LiveOutputs:
    """Show changed outputs through the target, batched: at most one write per interval."""

    def __init__(
        self, outputs: RunOutputs, target: OutputsTarget, interval: float, log: logging.Logger
    ) -> None:
        self.outputs = outputs
        self.target = target
        self.interval = interval
        self.log = log
        self.cells: dict[Hashable, RunCell] = {}
        self.stored: set[Hashable] = set()  # cells whose outputs were written for good
        self.restore: set[Hashable] = set()  # ... and changed since (a display update)
        self._dirty: set[Hashable] = set()
        self._timer: asyncio.TimerHandle | None = None
        self._last = 0.0

    def mark(self, keys: set[Hashable]) -> None:
        """Note that the outputs of ``keys`` changed; show them within the interval."""
        self._dirty |= keys
        self.restore |= keys & self.stored
        if self._timer is None:
            delay = max(0.0, self._last + self.interval - time.monotonic())
            self._timer = asyncio.get_running_loop().call_later(delay, self.flush)

    def flush(self) -> None:
        """Show every changed cell now."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        dirty, self._dirty = self._dirty, set()
        self._last = time.monotonic()
        for key in dirty:
            cell, built = self.cells.get(key), self.outputs.cells.get(key)
            if cell is None or built is None or cell.selected is None:
                continue
            try:
                self.target.show(cell.selected, built.to_json(), built.execution_count)
            except Exception:  # showing is best effort; storing is what counts
                self.log.warning("xcsh: could not show run outputs", exc_info=True)

    def close(self) -> None:
        """Stop the timer (nothing is shown after the run)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


class RunService:
    """Run notebook cells in the notebook's kernel; knows nothing of files or HTTP.

    Parameters
    ----------
    kernels
        Finds and connects to notebooks' session kernels.
    artifact_store
        Where a cell's whole output spills once it outgrows the limits.
    max_output_bytes
        Bytes of a cell's output text returned to the caller (as the python tool's).
    max_stored_bytes
        Bytes of a cell's stream text stored in the notebook; past it only the tail is.
    stream_interval
        Least seconds between two live output chunks sent to observers.
    write_interval
        Least seconds between two live writes of a cell's outputs (0.1: within 100 ms).

    """

    def __init__(
        self,
        kernels: NotebookKernels,
        artifact_store: ArtifactStore,
        *,
        log: logging.Logger,
        max_output_bytes: int = 51200,
        max_stored_bytes: int = 262144,
        stream_interval: float = 0.25,
        write_interval: float = 0.1,
    ) -> None:
        self.kernels = kernels
        self.artifact_store = artifact_store
        self.log = log
        # The whole output spills to an artifact before the stored text is cut, so the notice
        # in the notebook always has an artifact to link to.
        self.max_output_bytes = min(max_output_bytes, max_stored_bytes)
        self.max_stored_bytes = max_stored_bytes
        self.stream_interval = stream_interval
        self.write_interval = write_interval
        self._queues: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()
        self._late: set[asyncio.Task[None]] = set()

    def _queue(self, api_path: str) -> asyncio.Lock:
        queue = self._queues.get(api_path)
        if queue is None:
            queue = self._queues[api_path] = asyncio.Lock()  # FIFO: runs queue in order
        return queue

    async def close(self) -> None:
        """Stop following cells left queued in kernels, and close the kernel connections."""
        for task in list(self._late):
            task.cancel()
        await asyncio.gather(*self._late, return_exceptions=True)
        self.kernels.close()

    async def run(
        self,
        request: RunRequest,
        cells: list[SelectedCell],
        target: OutputsTarget,
        *,
        api_path: str,
        kernel_name: str | None,
        observer: ExecutionObserver | None = None,
        control: CallControl | None = None,
        call_id: str | None = None,
    ) -> dict[str, Any]:
        """Run ``cells`` of notebook ``api_path`` and return the result body.

        ``kernel_name`` is used only when the notebook has no session yet. Errors in the code,
        timeouts and a dying kernel are results; an unknown kernel name raises
        ``InvalidRequestError`` before anything runs.
        """
        observer = observer or ExecutionObserver()
        control = control or CallControl()
        deadline = time.monotonic() + request.timeout
        run_cells = [
            RunCell(i, f"cell {c.index}", c.source, cell_id=c.cell_id, selected=c)
            for i, c in enumerate(cells)
        ]
        outcome = RunOutcome(
            cells=run_cells, max_output_bytes=self.max_output_bytes, path=api_path, via=target.via
        )
        observer.call_started(
            {
                "callId": call_id,
                "path": api_path,
                "cells": [
                    {"index": c.index, "title": c.title, "code": c.code, "cellId": c.cell_id}
                    for c in run_cells
                ],
            }
        )
        try:
            await self._run_queued(
                request, outcome, target, kernel_name, deadline, control, observer
            )
            outcome.total_cells = target.total_cells
            result = assemble_run_result(outcome)
            result["callId"] = call_id
        except BaseException as e:
            observer.call_finished(
                {
                    "text": getattr(e, "message", None) or str(e) or type(e).__name__,
                    "isError": True,
                    "cancelled": isinstance(e, asyncio.CancelledError),
                    "timedOut": False,
                    "cells": [c.to_json() for c in run_cells],
                    "callId": call_id,
                }
            )
            raise
        observer.call_finished(result)
        return result

    async def _run_queued(
        self,
        request: RunRequest,
        outcome: RunOutcome,
        target: OutputsTarget,
        kernel_name: str | None,
        deadline: float,
        control: CallControl,
        observer: ExecutionObserver,
    ) -> None:
        busy = f"Kernel busy: nothing was run within {format_seconds(request.timeout)} seconds"
        queue = self._queue(outcome.path)
        if not await _acquire(queue, deadline):
            outcome.nothing_sent(busy)
            return
        try:
            try:
                session = await self.kernels.session_for(outcome.path, kernel_name, deadline)
            except TimeoutError:
                outcome.nothing_sent(
                    f"Kernel did not start within {format_seconds(request.timeout)} seconds: "
                    "nothing was run"
                )
                return
            outcome.kernel = session
            try:
                kernel = await self.kernels.connect(session.kernel_id, deadline)
            except TimeoutError:
                # A kernel answers only between executions: it is busy with someone's work.
                outcome.nothing_sent(busy)
                return
            except (KernelLostError, ConnectionClosedError) as e:
                outcome.abort = f"The notebook's kernel is not running ({e}); nothing was run"
                return
            if not await _acquire(kernel.lock, deadline):
                outcome.nothing_sent(busy)
                return
            try:
                await self._run_cells(
                    kernel, session, request, outcome, target, deadline, control, observer
                )
            finally:
                kernel.lock.release()
        finally:
            queue.release()

    async def _run_cells(
        self,
        kernel: NotebookKernel,
        session: NotebookSession,
        request: RunRequest,
        outcome: RunOutcome,
        target: OutputsTarget,
        deadline: float,
        control: CallControl,
        observer: ExecutionObserver,
    ) -> None:
        outputs = RunOutputs(self.max_stored_bytes)
        live = _LiveOutputs(outputs, target, self.write_interval, self.log)
        try:
            for cell in outcome.cells:
                if control.cancelled:
                    outcome.cancel("Command cancelled")
                    return
                keep_going = await self._run_one(
                    kernel,
                    session,
                    cell,
                    request,
                    outcome,
                    target,
                    outputs,
                    live,
                    deadline,
                    control,
                    observer,
                )
                await self._restore(live, target)
                if not keep_going:
                    return
        except KernelLostError as e:
            self.log.info("xcsh: kernel %s lost during a run: %s", session.kernel_id, e)
            self.kernels.drop(session.kernel_id)
            outcome.kernel_died()
        except ConnectionClosedError:
            outcome.abort = "The kernel connection was closed (the server is stopping)"
        finally:
            live.close()
            for cell in outcome.cells:
                if cell.status == "running":  # ended by the failure, not by the kernel
                    cell.status, cell.exit_code = "error", 1
                    observer.cell_status(cell.index, "error")

    async def _restore(self, live: _LiveOutputs, target: OutputsTarget) -> None:
        """Write again the finished cells a later cell's display update changed."""
        restore, live.restore = live.restore, set()
        for key in restore:
            cell, built = live.cells[key], live.outputs.cells[key]
            assert cell.selected is not None
            with contextlib.suppress(Exception):
                await target.store(cell.selected, built.to_json(), built.execution_count)

    async def _run_one(
        self,
        kernel: NotebookKernel,
        session: NotebookSession,
        cell: RunCell,
        request: RunRequest,
        outcome: RunOutcome,
        target: OutputsTarget,
        outputs: RunOutputs,
        live: _LiveOutputs,
        deadline: float,
        control: CallControl,
        observer: ExecutionObserver,
    ) -> bool:
        """Run one cell; whether the run goes on to the next."""
        assert cell.selected is not None
        if cell.selected.cell_type != "code":
            cell.skip(f"{cell.selected.cell_type} cell")
            observer.cell_status(cell.index, "skipped")
            return True
        now = await target.locate(cell.selected)
        if now is None or now.cell_type != "code" or not now.source.strip():
            cell.skip(
                "deleted"
                if now is None
                else "empty"
                if now.cell_type == "code"
                else f"now a {now.cell_type} cell"
            )
            observer.cell_status(cell.index, "skipped")
            return True
        cell.selected, cell.code, cell.title = now, now.source, f"cell {now.index}"
        if not await kernel.activity.wait_idle(deadline):
            what = f"cell {now.index} was not run" if outcome.sent else "nothing was run"
            outcome.nothing_sent(
                f"Kernel busy: {what} within {format_seconds(request.timeout)} seconds"
            )
            return False
        key: Hashable = cell.index
        built = outputs.start(key, target.notebook_dir)
        live.cells[key] = cell
        sink = OutputSink(
            max_bytes=self.max_output_bytes,
            open_artifact=lambda: self._open_artifact(built),
            on_chunk=(
                None
                if type(observer).chunk is ExecutionObserver.chunk
                else lambda text, i=cell.index: observer.chunk(i, text)  # type: ignore[misc]
            ),
            chunk_interval=self.stream_interval,
        )
        execution = _Execution()
        connection = kernel.connection
        seconds_left = deadline - time.monotonic()

        def handle(channel: str, msg: dict[str, Any]) -> None:
            self._handle(
                channel, msg, execution, cell, sink, outputs, key, live, observer, connection
            )

        cell.status = "running"
        observer.cell_status(cell.index, "running")
        started = time.monotonic()
        msg_id = connection.execute(now.source, handle)
        # No await since execute: the kernel's status for it cannot have been read yet.
        kernel.activity.own.add(msg_id)
        live.mark({key})
        control.attach(execution.wake.set)
        detached = False
        try:
            ended = await self._wait(execution, connection, kernel, deadline, control, True)
            if ended != "done" and not execution.started:
                # Still queued behind someone's execution: never interrupt theirs. It runs
                # when the kernel reaches it; its outputs are written then.
                detached = True
                execution.reporting = False
                self._follow_late(execution, cell, built, sink, kernel, msg_id, target, live)
                outcome.left_queued(cell, ended == "time", seconds_left)
                cell.sink = sink.dump(outcome.notice)
                cell.output = cell.sink.output
                cell.duration_ms = round((time.monotonic() - started) * 1000)
                observer.cell_status(cell.index, cell.status)
                return False
            notice = None
            if ended != "done":
                await self.launcher_interrupt(kernel)
                ended = await self._wait(
                    execution,
                    connection,
                    kernel,
                    time.monotonic() + INTERRUPT_GRACE[0],
                    control,
                    False,
                )
                if ended != "done":
                    connection.interrupt_request()
                    ended = await self._wait(
                        execution,
                        connection,
                        kernel,
                        time.monotonic() + INTERRUPT_GRACE[1],
                        control,
                        False,
                    )
                notice = outcome.stopped(cell, control.cancelled, seconds_left, ended != "done")
            cell.duration_ms = round((time.monotonic() - started) * 1000)
            reply = execution.reply or {}
            if notice is None:
                if reply.get("status") != "ok" and cell.error is None and reply.get("ename"):
                    text, cell.error = error_output(reply)
                    sink.push(text)
                cell.status = "complete" if reply.get("status") == "ok" else "error"
                cell.exit_code = 0 if cell.status == "complete" else 1
            if isinstance(reply.get("execution_count"), int):
                built.execution_count = reply["execution_count"]
            outcome.add_displays(
                execution.images, execution.json_outputs, execution.stdin_requested
            )
            cell.sink = sink.dump(notice)
            cell.output = cell.sink.output
            await self._store(cell, built, target, live, key)
            observer.cell_status(cell.index, cell.status)
            return cell.status == "complete" or (notice is None and not request.stop_on_error)
        except KernelLostError:
            cell.duration_ms = round((time.monotonic() - started) * 1000)
            cell.sink = sink.dump(outcome.kernel_died())
            cell.output = cell.sink.output
            cell.status, cell.exit_code = "error", None
            observer.cell_status(cell.index, "error")
            with contextlib.suppress(Exception):
                await self._store(cell, built, target, live, key)
            raise
        finally:
            control.attach(None)
            if not detached:
                connection.unroute(msg_id)
                kernel.activity.own.discard(msg_id)
                sink.close()

    async def launcher_interrupt(self, kernel: NotebookKernel) -> None:
        """Interrupt the kernel through the kernel manager (our own cell is what it runs)."""
        await self.kernels.launcher.interrupt(kernel.kernel_id)

    def _handle(
        self,
        channel: str,
        msg: dict[str, Any],
        execution: _Execution,
        cell: RunCell,
        sink: OutputSink,
        outputs: RunOutputs,
        key: Hashable,
        live: _LiveOutputs,
        observer: ExecutionObserver,
        connection: KernelConnection,
    ) -> None:
        if channel in ("lost", "closed"):
            execution.lost = execution.lost or channel == "lost"
            execution.closed = execution.closed or channel == "closed"
            execution.wake.set()
            return
        kind = msg.get("msg_type")
        content = msg.get("content") or {}
        if channel == "iopub":
            if kind == "status":
                state = content.get("execution_state")
                if state == "busy":
                    execution.started = True
                elif state == "idle":
                    execution.idle = True
                    execution.wake.set()
                return
            if kind == "execute_input":
                execution.started = True
            elif not execution.reporting:
                pass
            elif kind == "stream":
                sink.push(str(content.get("text", "")))
            elif kind in ("execute_result", "display_data", "update_display_data"):
                display = reduce_display(content.get("data") or {})
                if display.status is not None:
                    cell.status_events.append(display.status)
                    observer.status_event(cell.index, display.status)
                else:
                    if display.text is not None:
                        sink.push(display.text)
                    for image in display.images:
                        execution.images.append(image)
                        observer.display(cell.index, "image", image)
                    for value in display.json_outputs:
                        execution.json_outputs.append(value)
                        observer.display(cell.index, "json", value)
            elif kind == "error":
                text, cell.error = error_output(content)
                sink.push(text)
            changed = outputs.handle(key, msg)
            if changed:
                live.mark(changed)
        elif channel == "shell" and kind == "execute_reply":
            execution.reply = content
            execution.wake.set()
        elif channel == "stdin" and kind == "input_request":
            if execution.reporting:
                self._answer_input(connection, execution, sink, content)
            else:
                connection.input_reply("")  # nobody is there to answer any more

    def _answer_input(
        self,
        connection: KernelConnection,
        execution: _Execution,
        sink: OutputSink,
        content: dict[str, Any],
    ) -> None:
        """Answer the kernel's prompt for input (SPEC §8: the ``notice`` mode).

        Other ``stdin`` modes (end of file, given answers, asking the caller) answer here.
        """
        sink.push(STDIN_NOTICE + "\n")
        connection.input_reply("")
        execution.stdin_requested = True

    async def _wait(
        self,
        execution: _Execution,
        connection: KernelConnection,
        kernel: NotebookKernel,
        until: float,
        control: CallControl,
        stop_on_cancel: bool,
    ) -> str:
        """Wait for the cell: ``done``, cancelled (``cancel``), or ``until`` passed (``time``)."""
        is_alive = self.kernels.launcher.is_alive
        next_check = time.monotonic() + LIVENESS_INTERVAL
        while not execution.done:
            if execution.closed or connection.closed:
                raise ConnectionClosedError("the kernel connection was closed")
            if execution.lost:
                raise KernelLostError(connection.lost or "kernel lost")
            if stop_on_cancel and control.cancelled:
                return "cancel"
            now = time.monotonic()
            if now >= until:
                return "time"
            if now >= next_check:
                if not await is_alive(kernel.kernel_id):
                    raise KernelLostError("kernel is not alive")
                next_check = time.monotonic() + LIVENESS_INTERVAL
                continue
            execution.wake.clear()
            if execution.done or execution.lost or execution.closed:
                continue
            if stop_on_cancel and control.cancelled:
                continue
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(execution.wake.wait(), min(until, next_check) - now)
        return "done"

    def _open_artifact(self, built: Any) -> ArtifactWriter:
        writer = self.artifact_store.create("run")
        built.artifact = ArtifactLink(writer.id, writer.api_path)
        return writer

    async def _store(
        self,
        cell: RunCell,
        built: Any,
        target: OutputsTarget,
        live: _LiveOutputs,
        key: Hashable,
    ) -> None:
        assert cell.selected is not None
        live.flush()
        cell.execution_count = built.execution_count
        try:
            cell.outputs_written = await target.store(
                cell.selected, built.to_json(), built.execution_count
            )
        except Exception as e:
            self.log.warning("xcsh: could not write the outputs of a run: %s", e, exc_info=True)
            cell.outputs_written = False
        live.stored.add(key)
        live.restore.discard(key)

    def _follow_late(
        self,
        execution: _Execution,
        cell: RunCell,
        built: Any,
        sink: OutputSink,
        kernel: NotebookKernel,
        msg_id: str,
        target: OutputsTarget,
        live: _LiveOutputs,
    ) -> None:
        """Keep following a cell left queued in the kernel; write its outputs when it ends."""

        async def follow() -> None:
            try:
                forever = CallControl()
                await self._wait(execution, kernel.connection, kernel, float("inf"), forever, False)
                reply = execution.reply or {}
                if isinstance(reply.get("execution_count"), int):
                    built.execution_count = reply["execution_count"]
                assert cell.selected is not None
                await target.store(cell.selected, built.to_json(), built.execution_count)
            except (KernelLostError, ConnectionClosedError, asyncio.CancelledError):
                pass
            except Exception:
                self.log.warning("xcsh: could not write a late cell's outputs", exc_info=True)
            finally:
                kernel.connection.unroute(msg_id)
                kernel.activity.own.discard(msg_id)
                sink.close()

        task = asyncio.ensure_future(follow())
        self._late.add(task)
        task.add_done_callback(self._late.discard)


async def _acquire(lock: asyncio.Lock, deadline: float) -> bool:
    """Take ``lock`` by ``deadline``; False if it was not free in time."""
    try:
        await asyncio.wait_for(lock.acquire(), max(0.0, deadline - time.monotonic()))
    except TimeoutError:
        return False
    return True
