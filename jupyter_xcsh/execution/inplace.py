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
import logging
import time
import weakref
from collections.abc import Hashable
from typing import Any

from ..errors import XcshError
from ..outputs.artifacts import ArtifactStore, ArtifactWriter
from ..outputs.images import ImageCapture, budget_images
from ..outputs.sink import OutputSink
from .connection import ConnectionClosedError, KernelLostError
from .control import CallCancelledError, CallControl
from .inplace_cell import CellExecution
from .live_outputs import LiveOutputs, OutputsTarget
from .nboutputs import ArtifactLink, CellOutputs, RunOutputs
from .notebook_kernels import NotebookKernel, NotebookKernels, NotebookSession
from .observer import ExecutionObserver
from .result import whole_seconds
from .run_request import RunRequest, SelectedCell
from .run_result import RunCell, RunOutcome, assemble_run_result, failure_summary
from .stdin import StdinPolicy

__all__ = ["OutputsTarget", "RunService"]


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
            outcome.total_cells, outcome.via = target.total_cells, target.via
            outcome.image_results = await budget_images(outcome.images, self.artifact_store)
            result = assemble_run_result(outcome)
            result["callId"] = call_id
        except BaseException as e:
            # The lab's activity panel must see every call end, failed or not.
            observer.call_finished(failure_summary(outcome, e, call_id))
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
        if not any(c.selected and c.selected.cell_type == "code" for c in outcome.cells):
            # Nothing to run: no kernel is looked for, let alone started.
            for cell in outcome.cells:
                assert cell.selected is not None
                cell.skip(f"{cell.selected.cell_type} cell")
                observer.cell_status(cell.index, "skipped")
            return
        queue = self._queue(outcome.path)
        kernel = await self._take_kernel(queue, request, outcome, kernel_name, deadline, control)
        if kernel is None:
            return
        try:
            assert outcome.kernel is not None
            await self._run_cells(
                kernel, outcome.kernel, request, outcome, target, deadline, control, observer
            )
        finally:
            kernel.lock.release()
            queue.release()

    async def _take_kernel(
        self,
        queue: asyncio.Lock,
        request: RunRequest,
        outcome: RunOutcome,
        kernel_name: str | None,
        deadline: float,
        control: CallControl,
    ) -> NotebookKernel | None:
        """The notebook's turn, its kernel (started if need be), connected and locked.

        None, with the outcome saying why, when the deadline passed or the call was cancelled
        first: then nothing was sent. Each wait is abandoned at once on a cancel.
        """
        seconds = whole_seconds(request.timeout)
        busy = f"Kernel busy: nothing was run within {seconds} seconds"
        stage = busy
        held: list[asyncio.Lock] = []
        try:
            await control.guard(queue.acquire(), deadline)
            held.append(queue)
            stage = f"Kernel did not start within {seconds} seconds: nothing was run"
            session = await control.guard(
                self.kernels.session_for(outcome.path, kernel_name, deadline), deadline
            )
            outcome.kernel = session
            # A kernel answers only between executions: past the deadline it is busy.
            stage = busy
            kernel = await control.guard(
                self.kernels.connect(session.kernel_id, deadline), deadline
            )
            await control.guard(kernel.lock.acquire(), deadline)
            return kernel
        except TimeoutError:
            outcome.nothing_sent(stage)
        except CallCancelledError:
            outcome.cancel("Command cancelled")
        except (KernelLostError, ConnectionClosedError) as e:
            outcome.abort = f"The notebook's kernel is not running ({e}); nothing was run"
        for lock in held:
            lock.release()
        return None

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
        live = LiveOutputs(RunOutputs(self.max_stored_bytes), target, self.write_interval, self.log)
        stdin = StdinPolicy(request.stdin)  # one for the run: answers are given in order
        images = ImageCapture(self.artifact_store, "run")
        try:
            for cell in outcome.cells:
                if control.cancelled:
                    outcome.cancel("Command cancelled")
                    return
                go_on = await self._run_one(
                    kernel, cell, request, outcome, live, deadline, control, observer, stdin, images
                )
                await live.store_changed()
                if not go_on:
                    return
        except KernelLostError as e:
            self.log.info("xcsh: kernel %s lost during a run: %s", session.kernel_id, e)
            self.kernels.drop(session.kernel_id)
        except ConnectionClosedError:
            outcome.abort = "The kernel connection was closed (the server is stopping)"
        except CallCancelledError:
            outcome.cancel("Command cancelled")
        except XcshError as e:
            # The notebook itself went away or broke under the run (deleted, not JSON any more).
            outcome.abort = f"{e.message}. The run stopped; earlier cells ran."
        finally:
            live.close()
            for cell in outcome.cells:
                if cell.status == "running":  # ended by the failure, not by the kernel
                    cell.status, cell.exit_code = "error", 1
                    observer.cell_status(cell.index, "error")

    async def _send_now(
        self,
        kernel: NotebookKernel,
        cell: RunCell,
        request: RunRequest,
        outcome: RunOutcome,
        target: OutputsTarget,
        deadline: float,
        control: CallControl,
        observer: ExecutionObserver,
    ) -> SelectedCell | None:
        """The cell as it is now, once nobody else's execution runs; None: do not send it."""
        assert cell.selected is not None
        if cell.selected.cell_type != "code":
            cell.skip(f"{cell.selected.cell_type} cell")
            observer.cell_status(cell.index, "skipped")
            return None
        now = await target.locate(cell.selected)
        if now is None or now.cell_type != "code" or not now.source.strip():
            if now is None:
                reason = "deleted"
            else:
                reason = "empty" if now.cell_type == "code" else f"now a {now.cell_type} cell"
            cell.skip(reason)
            observer.cell_status(cell.index, "skipped")
            return None
        cell.selected, cell.code, cell.title = now, now.source, f"cell {now.index}"
        if not await control.guard(kernel.activity.wait_idle(deadline)):
            what = f"cell {now.index} was not run" if outcome.sent else "nothing was run"
            outcome.nothing_sent(
                f"Kernel busy: {what} within {whole_seconds(request.timeout)} seconds"
            )
            outcome.stop = True
            return None
        return now

    async def _run_one(
        self,
        kernel: NotebookKernel,
        cell: RunCell,
        request: RunRequest,
        outcome: RunOutcome,
        live: LiveOutputs,
        deadline: float,
        control: CallControl,
        observer: ExecutionObserver,
        stdin: StdinPolicy,
        images: ImageCapture,
    ) -> bool:
        """Run one cell; whether the run goes on to the next."""
        target = live.target
        now = await self._send_now(
            kernel, cell, request, outcome, target, deadline, control, observer
        )
        if now is None:
            return not outcome.stop
        key: Hashable = cell.index
        built = live.outputs.start(key, target.notebook_dir)
        live.cells[key] = cell
        execution = CellExecution(
            cell,
            key,
            connection=kernel.connection,
            sink=self._sink(built, cell.index, observer),
            live=live,
            observer=observer,
            is_alive=lambda: self.kernels.launcher.is_alive(kernel.kernel_id),
            images=images,
            stdin=stdin,
        )
        seconds_left = deadline - time.monotonic()
        cell.status = "running"
        observer.cell_status(cell.index, "running")
        started = time.monotonic()
        msg_id = execution.send(now.source)
        # No await since the send: the kernel's status for it cannot have been read yet.
        kernel.activity.own.add(msg_id)
        live.mark({key})
        control.attach(execution.state.wake.set)
        following = False
        try:
            ended = await execution.wait(deadline, control, True)
            if ended != "done" and not execution.started:
                # Still queued behind someone's execution: never interrupt theirs. It runs
                # when the kernel reaches it, and its outputs are written then.
                outcome.left_queued(cell, ended == "time", seconds_left)
                self._finish(cell, execution, outcome, started, outcome.notice)
                following = True
                execution.reporting = False  # at once: its sink is closed
                task = asyncio.ensure_future(execution.follow_late(kernel.activity.own))
                self._late.add(task)
                task.add_done_callback(self._late.discard)
                return False
            notice = None
            if ended != "done":
                stopped = await execution.interrupt(
                    lambda: self.kernels.launcher.interrupt(kernel.kernel_id), deadline
                )
                notice = outcome.stopped(cell, control.cancelled, seconds_left, not stopped)
            else:
                execution.error_from_reply()
                ok = execution.reply.get("status") == "ok" and not execution.stdin_failed
                cell.status, cell.exit_code = ("complete", 0) if ok else ("error", 1)
                outcome.stdin_failed = outcome.stdin_failed or execution.stdin_failed
            self._finish(cell, execution, outcome, started, notice)
            cell.outputs_written = await live.store(key)
            observer.cell_status(cell.index, cell.status)
            return cell.status == "complete" or (notice is None and not request.stop_on_error)
        except KernelLostError:
            cell.status, cell.exit_code = "error", None
            self._finish(cell, execution, outcome, started, outcome.kernel_died())
            cell.outputs_written = await live.store(key)
            observer.cell_status(cell.index, "error")
            raise
        finally:
            control.attach(None)
            if not following:
                execution.close()
                kernel.activity.own.discard(msg_id)

    def _sink(self, built: CellOutputs, index: int, observer: ExecutionObserver) -> OutputSink:
        """The cell's result text; its whole output spills to an artifact the notebook links."""

        def open_artifact() -> ArtifactWriter:
            writer = self.artifact_store.create("run")
            built.artifact = ArtifactLink(writer.id, writer.api_path)
            return writer

        forward = type(observer).chunk is not ExecutionObserver.chunk
        return OutputSink(
            max_bytes=self.max_output_bytes,
            open_artifact=open_artifact,
            on_chunk=(lambda text: observer.chunk(index, text)) if forward else None,
            chunk_interval=self.stream_interval,
        )

    @staticmethod
    def _finish(
        cell: RunCell,
        execution: CellExecution,
        outcome: RunOutcome,
        started: float,
        notice: str | None,
    ) -> None:
        cell.duration_ms = round((time.monotonic() - started) * 1000)
        outcome.add_displays(execution.images, execution.json_outputs, execution.stdin_requested)
        cell.sink = execution.sink.dump(notice)
        cell.output = cell.sink.output
