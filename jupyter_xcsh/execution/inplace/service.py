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
import posixpath
import time
import weakref
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from jupyter_xcsh.artifacts.store import ArtifactStore
from jupyter_xcsh.calls.control import CallCancelledError, CallControl
from jupyter_xcsh.calls.observer import ExecutionObserver, report_input
from jupyter_xcsh.execution.inplace.cells import InPlaceRun, RunSettings
from jupyter_xcsh.execution.inplace.kernels import NotebookKernel, NotebookKernels
from jupyter_xcsh.execution.inplace.live_outputs import OutputsTarget
from jupyter_xcsh.execution.inplace.request import RunRequest
from jupyter_xcsh.execution.inplace.result import (
    NotebookCellRun,
    RunOutcome,
    assemble_run_result,
    failure_summary,
)
from jupyter_xcsh.execution.inplace.scratch import (
    ScratchOutcome,
    ScratchTarget,
    assemble_scratch_result,
    scratch_cells,
)
from jupyter_xcsh.execution.kernel.connection import ConnectionClosedError, KernelLostError
from jupyter_xcsh.execution.kernel.result import partial_result, whole_seconds
from jupyter_xcsh.execution.kernel.stdin import StdinPolicy, StdinSpec
from jupyter_xcsh.notebook.outputs import SelectedCell
from jupyter_xcsh.outputs.images import budget_images
from jupyter_xcsh.outputs.sink import DEFAULT_HEAD_LINES, DEFAULT_MAX_BYTES, DEFAULT_TAIL_LINES

__all__ = ["InPlaceService", "OutputsTarget"]


class InPlaceService:
    """Run notebook cells in the notebook's kernel; knows nothing of files or HTTP.

    Parameters
    ----------
    kernels
        Finds and connects to notebooks' session kernels.
    artifact_store
        Where a cell's whole output spills once it outgrows the limits.
    max_output_bytes, output_head_lines, output_tail_lines
        How much of a cell's output text the caller is shown (as the python tool's).
    max_stored_bytes
        Bytes of a cell's stream text stored in the notebook; past it only the tail is.
    max_outputs
        Outputs other than streams and errors stored per cell; past it a notice (0: no cap).
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
        max_output_bytes: int = DEFAULT_MAX_BYTES,
        output_head_lines: int = DEFAULT_HEAD_LINES,
        output_tail_lines: int = DEFAULT_TAIL_LINES,
        max_stored_bytes: int = 262144,
        max_outputs: int = 1000,
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
        self.max_outputs = max_outputs
        self.stream_interval = stream_interval
        self.write_interval = write_interval
        self._queues: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()
        # The runs waiting for their turn on each notebook, by the notebook's API path.
        self._queued: dict[str, set[CallControl]] = {}
        # Cells a run left queued in kernels, followed to their end (their outputs written then).
        self.late: set[asyncio.Task[None]] = set()
        self.run_settings = RunSettings(
            kernels=kernels,
            artifact_store=artifact_store,
            log=log,
            max_output_bytes=self.max_output_bytes,
            max_stored_bytes=max_stored_bytes,
            max_outputs=max_outputs,
            stream_interval=stream_interval,
            write_interval=write_interval,
            late=self.late,
            output_head_lines=output_head_lines,
            output_tail_lines=output_tail_lines,
        )

    def _queue(self, api_path: str) -> asyncio.Lock:
        queue = self._queues.get(api_path)
        if queue is None:
            queue = self._queues[api_path] = asyncio.Lock()  # FIFO: runs queue in order
        return queue

    def reject_queued(self, api_path: str, error: Exception) -> None:
        """End the runs waiting for their turn on notebook ``api_path`` with ``error``.

        For a notebook whose run waits for an answer to a prompt: the runs behind it would
        only wait out their deadline.
        """
        for control in list(self._queued.get(api_path, ())):
            control.cancel(error)

    async def close(self) -> None:
        """Stop following cells left queued in kernels, and close the kernel connections."""
        for task in list(self.late):
            task.cancel()
        await asyncio.gather(*self.late, return_exceptions=True)
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
        stdin: StdinPolicy | None = None,
        before_cell: Callable[[NotebookCellRun], Awaitable[str | None]] | None = None,
    ) -> dict[str, Any]:
        """Run ``cells`` of notebook ``api_path`` and return the result body.

        ``kernel_name`` is used only when the notebook has no session yet. Errors in the code,
        timeouts and a dying kernel are results; an unknown kernel name raises
        ``InvalidRequestError`` before anything runs. ``stdin`` answers the kernel's prompts
        (by default as ``request.stdin`` says); while one of its prompts waits for an answer,
        ``stdin.partial_result()`` gives the result so far. ``before_cell`` is awaited before
        each cell is sent (its wait not counted in the timeout): a message stops the run there.
        """
        run_cells = [
            NotebookCellRun(i, f"cell {c.index}", c.source, cell_id=c.cell_id, selected=c)
            for i, c in enumerate(cells)
        ]
        outcome = RunOutcome(
            cells=run_cells,
            max_output_bytes=self.max_output_bytes,
            path=api_path,
            via=target.via,
            before_cell=before_cell,
        )
        started = {
            "callId": call_id,
            "path": api_path,
            "cells": [
                {"index": c.index, "title": c.title, "code": c.code, "cellId": c.cell_id}
                for c in run_cells
            ],
        }
        return await self._execute(
            request,
            outcome,
            target,
            kernel_name,
            started,
            lambda o: _assemble(o, target),
            observer=observer,
            control=control,
            call_id=call_id,
            stdin=stdin,
        )

    async def scratch(
        self,
        codes: Sequence[tuple[str, str]],
        *,
        api_path: str,
        kernel_name: str | None,
        timeout: float,
        stdin_spec: StdinSpec,
        observer: ExecutionObserver | None = None,
        control: CallControl | None = None,
        call_id: str | None = None,
        stdin: StdinPolicy | None = None,
    ) -> dict[str, Any]:
        """Run ``codes`` (``(title, code)`` pairs) on notebook ``api_path``'s kernel; the result.

        Scratch code (``scratch.py``): the notebook's turn and kernel as a run's, nothing
        written, no execution count taken; the python tool's result shape. ``kernel_name`` as
        ``run``'s; ``timeout`` one deadline for it all; ``stdin_spec`` what the call's
        ``stdin`` asked for.
        """
        request = RunRequest(
            notebook_path=api_path,
            cell_id=None,
            cell_index=None,
            cell_ids=None,
            end_index=None,
            all=True,
            timeout=timeout,
            stop_on_error=True,
            kernel_name=kernel_name,
            stdin=stdin_spec,
        )
        cells: list[NotebookCellRun] = list(scratch_cells(list(codes)))
        outcome = ScratchOutcome(
            cells=cells, max_output_bytes=self.max_output_bytes, path=api_path, via="kernel"
        )
        started = {
            "callId": call_id,
            "session": api_path,  # what the lab names the call by: the notebook
            "path": api_path,
            "cells": [{"index": c.index, "title": c.title, "code": c.code} for c in cells],
        }
        return await self._execute(
            request,
            outcome,
            ScratchTarget(posixpath.dirname(api_path)),
            kernel_name,
            started,
            assemble_scratch_result,
            observer=observer,
            control=control,
            call_id=call_id,
            stdin=stdin,
            scratch=True,
        )

    async def _execute(
        self,
        request: RunRequest,
        outcome: RunOutcome,
        target: OutputsTarget,
        kernel_name: str | None,
        started: dict[str, Any],
        assemble: Callable[[RunOutcome], dict[str, Any]],
        *,
        observer: ExecutionObserver | None,
        control: CallControl | None,
        call_id: str | None,
        stdin: StdinPolicy | None,
        scratch: bool = False,
    ) -> dict[str, Any]:
        """Run ``outcome``'s cells in the notebook's turn; the result ``assemble`` makes."""
        observer = observer or ExecutionObserver()
        control = control or CallControl()
        stdin = stdin or StdinPolicy(request.stdin)
        deadline = time.monotonic() + request.timeout
        stdin.partial_result = lambda: partial_result(
            outcome, stdin, call_id, self.artifact_store, assemble
        )
        unlisten = stdin.listen(lambda: report_input(stdin, observer))
        observer.call_started(started)
        try:
            await self._run_queued(
                request, outcome, target, kernel_name, deadline, control, observer, stdin, scratch
            )
            outcome.image_results = await budget_images(outcome.images, self.artifact_store)
            result = assemble(outcome)
            result["callId"] = call_id
        except BaseException as e:
            # The lab's activity panel must see every call end, failed or not.
            observer.call_finished(failure_summary(outcome, e, call_id))
            raise
        finally:
            unlisten()
            stdin.partial_result = None
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
        stdin: StdinPolicy,
        scratch: bool = False,
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
            run = InPlaceRun(
                self.run_settings,
                kernel,
                request,
                outcome,
                target,
                control,
                observer,
                stdin,
                scratch=scratch,
            )
            await run.run(deadline)
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
        queued = self._queued.setdefault(outcome.path, set())
        queued.add(control)
        try:
            try:
                await control.guard(queue.acquire(), deadline)
            finally:
                queued.discard(control)
                if not queued:
                    self._queued.pop(outcome.path, None)
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
            if session.started:
                try:
                    notice = await control.guard(
                        self.kernels.enter_folder(kernel, outcome.path, deadline), deadline
                    )
                except BaseException:
                    kernel.lock.release()
                    raise
                outcome.notices.extend(n for n in [notice] if n)
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


def _assemble(outcome: RunOutcome, target: OutputsTarget) -> dict[str, Any]:
    """The result body, with what the run last saw of the notebook."""
    outcome.total_cells, outcome.via = target.total_cells, target.via
    outcome.revision = target.revision
    return assemble_run_result(outcome)
