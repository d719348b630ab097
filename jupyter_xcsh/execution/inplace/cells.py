"""The cells of one run in place, in order, on the notebook's kernel (see ``service.py``).

Each cell is read again just before it is sent (a person may have changed or deleted it), sent
once the kernel is not executing anyone else's request, followed to its end — interrupted only
if the kernel started it — and its outputs written back through the run's ``OutputsTarget``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Hashable
from dataclasses import dataclass

from jupyter_xcsh.artifacts.store import ArtifactStore, ArtifactWriter
from jupyter_xcsh.calls.control import CallCancelledError, CallControl
from jupyter_xcsh.calls.observer import ExecutionObserver
from jupyter_xcsh.errors import XcshError
from jupyter_xcsh.execution.inplace.cell import CellExecution
from jupyter_xcsh.execution.inplace.kernels import NotebookKernel, NotebookKernels
from jupyter_xcsh.execution.inplace.live_outputs import LiveOutputs, OutputsTarget
from jupyter_xcsh.execution.inplace.request import RunRequest
from jupyter_xcsh.execution.inplace.result import NotebookCellRun, RunOutcome
from jupyter_xcsh.execution.inplace.stored import ArtifactLink, CellOutputs, RunOutputs
from jupyter_xcsh.execution.kernel.connection import ConnectionClosedError, KernelLostError
from jupyter_xcsh.execution.kernel.result import whole_seconds
from jupyter_xcsh.execution.kernel.stdin import StdinPolicy
from jupyter_xcsh.notebook.outputs import SelectedCell
from jupyter_xcsh.outputs.images import ImageCapture
from jupyter_xcsh.outputs.sink import DEFAULT_HEAD_LINES, DEFAULT_TAIL_LINES, OutputSink

__all__ = ["InPlaceRun"]


@dataclass(frozen=True)
class RunSettings:
    """What a run needs of the service that runs it: its collaborators and output limits.

    ``late`` is the service's set of tasks following cells the run left queued in the kernel
    (a run adds to it; the service cancels them when it closes).
    """

    kernels: NotebookKernels
    artifact_store: ArtifactStore
    log: logging.Logger
    max_output_bytes: int
    max_stored_bytes: int
    max_outputs: int
    stream_interval: float
    write_interval: float
    late: set[asyncio.Task[None]]
    output_head_lines: int = DEFAULT_HEAD_LINES
    output_tail_lines: int = DEFAULT_TAIL_LINES


class InPlaceRun:
    """The cells of one run, sent one by one on the notebook's kernel it holds (locked)."""

    def __init__(
        self,
        settings: RunSettings,
        kernel: NotebookKernel,
        request: RunRequest,
        outcome: RunOutcome,
        target: OutputsTarget,
        control: CallControl,
        observer: ExecutionObserver,
        stdin: StdinPolicy,
        *,
        scratch: bool = False,
    ) -> None:
        """A run of ``outcome``'s cells on ``kernel`` (held), writing outputs to ``target``.

        ``scratch``: the cells are code of no notebook cell (the python tool's on the
        notebook's kernel): sent with ``store_history`` false, an empty one sent too, and
        titled by the caller.
        """
        self.settings = settings
        self.scratch = scratch
        self.kernel = kernel
        self.request = request
        self.outcome = outcome
        self.control = control
        self.observer = observer
        self.stdin = stdin
        outputs = RunOutputs(settings.max_stored_bytes, settings.max_outputs)
        self.live = LiveOutputs(outputs, target, settings.write_interval, settings.log)
        self.images = ImageCapture(settings.artifact_store, "run")

    async def run(self, deadline: float) -> None:
        """Run the cells in order until the last, a failure (see ``stop_on_error``) or a stop."""
        outcome, observer, live = self.outcome, self.observer, self.live
        try:
            for cell in outcome.cells:
                if self.control.cancelled:
                    outcome.cancel("Command cancelled")
                    return
                if outcome.before_cell is not None and cell.status == "pending":
                    asked = time.monotonic()
                    stop = await self.control.guard(outcome.before_cell(cell))
                    deadline += time.monotonic() - asked  # the person's time is not due
                    if stop is not None:
                        cell.skip("not approved")
                        observer.cell_status(cell.index, "skipped")
                        outcome.abort = stop
                        return
                # Time spent waiting for answers to prompts (stdin "ask") is not due.
                go_on = await self._run_one(cell, deadline + self.stdin.paused)
                await live.store_changed()
                if not go_on:
                    return
        except KernelLostError as e:
            kernel_id = self.kernel.kernel_id
            self.settings.log.info("xcsh: kernel %s lost during a run: %s", kernel_id, e)
            self.settings.kernels.drop(kernel_id)
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

    async def _send_now(self, cell: NotebookCellRun, deadline: float) -> SelectedCell | None:
        """The cell as it is now, once nobody else's execution runs; None: do not send it."""
        outcome, observer = self.outcome, self.observer
        assert cell.selected is not None
        if cell.selected.cell_type != "code":
            cell.skip(f"{cell.selected.cell_type} cell")
            observer.cell_status(cell.index, "skipped")
            return None
        now = await self.live.target.locate(cell.selected)
        if now is None or now.cell_type != "code" or not (now.source.strip() or self.scratch):
            if now is None:
                reason = "deleted"
            else:
                reason = "empty" if now.cell_type == "code" else f"now a {now.cell_type} cell"
            cell.skip(reason)
            observer.cell_status(cell.index, "skipped")
            return None
        cell.selected, cell.code = now, now.source
        if not self.scratch:
            cell.title = f"cell {now.index}"
        if not await self.control.guard(self.kernel.activity.wait_idle(deadline)):
            what = f"cell {now.index} was not run" if outcome.sent else "nothing was run"
            outcome.nothing_sent(
                f"Kernel busy: {what} within {whole_seconds(self.request.timeout)} seconds"
            )
            outcome.stop = True
            return None
        return now

    async def _run_one(self, cell: NotebookCellRun, deadline: float) -> bool:
        """Run one cell; whether the run goes on to the next."""
        kernel, outcome, live, stdin = self.kernel, self.outcome, self.live, self.stdin
        control, observer, launcher = self.control, self.observer, self.settings.kernels.launcher
        now = await self._send_now(cell, deadline)
        if now is None:
            return not outcome.stop
        key: Hashable = cell.index
        built = live.outputs.start(key, live.target.notebook_dir)
        live.cells[key] = cell
        execution = CellExecution(
            cell,
            key,
            connection=kernel.connection,
            sink=self._sink(built, cell.index),
            live=live,
            observer=observer,
            is_alive=lambda: launcher.is_alive(kernel.kernel_id),
            images=self.images,
            stdin=stdin,
        )
        seconds_left = deadline - time.monotonic()
        paused_before = stdin.paused
        cell.status = "running"
        observer.cell_status(cell.index, "running")
        started = time.monotonic()
        msg_id = execution.send(now.source, store_history=not self.scratch)
        # No await since the send: the kernel's status for it cannot have been read yet.
        kernel.activity.own.add(msg_id)
        if self.scratch:
            kernel.executed.uncounted.add(msg_id)
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
                self.settings.late.add(task)
                task.add_done_callback(self.settings.late.discard)
                return False
            notice = None
            if ended != "done":
                stdin.abandon()  # the interrupt ends a waiting input() with KeyboardInterrupt
                stopped = await execution.interrupt(
                    lambda: launcher.interrupt(kernel.kernel_id),
                    deadline + stdin.paused - paused_before,
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
            stop_on_error = self.request.stop_on_error
            return cell.status == "complete" or (notice is None and not stop_on_error)
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

    def _sink(self, built: CellOutputs, index: int) -> OutputSink:
        """The cell's result text; its whole output spills to an artifact the notebook links."""
        observer = self.observer

        def open_artifact() -> ArtifactWriter:
            writer = self.settings.artifact_store.create("run")
            built.artifact = ArtifactLink(writer.id, writer.api_path)
            return writer

        forward = type(observer).chunk is not ExecutionObserver.chunk
        settings = self.settings
        return OutputSink(
            max_bytes=settings.max_output_bytes,
            head_lines=settings.output_head_lines,
            tail_lines=settings.output_tail_lines,
            # Spilled before the text stored in the notebook is cut: its notice links to it.
            keep_bytes=min(2 * settings.max_output_bytes, settings.max_stored_bytes),
            open_artifact=open_artifact,
            on_chunk=(lambda text: observer.chunk(index, text)) if forward else None,
            chunk_interval=self.settings.stream_interval,
        )

    @staticmethod
    def _finish(
        cell: NotebookCellRun,
        execution: CellExecution,
        outcome: RunOutcome,
        started: float,
        notice: str | None,
    ) -> None:
        cell.duration_ms = round((time.monotonic() - started) * 1000)
        outcome.add_displays(execution.images, execution.json_outputs, execution.stdin_requested)
        cell.sink = execution.sink.dump(notice)
        cell.output = cell.sink.output
