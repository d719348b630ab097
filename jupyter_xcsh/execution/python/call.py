"""One python tool call on a session: its cells, a re-run after a kernel death, how it ended."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from jupyter_client.kernelspec import NoSuchKernel

from jupyter_xcsh.artifacts.store import ArtifactStore
from jupyter_xcsh.calls.control import CallCancelledError, CallControl
from jupyter_xcsh.calls.observer import ExecutionObserver
from jupyter_xcsh.errors import InvalidRequestError
from jupyter_xcsh.execution.kernel.cell import run_cell
from jupyter_xcsh.execution.kernel.connection import KernelLostError
from jupyter_xcsh.execution.kernel.launcher import KernelLauncher
from jupyter_xcsh.execution.kernel.result import CallOutcome, timeout_notice
from jupyter_xcsh.execution.kernel.stdin import StdinPolicy
from jupyter_xcsh.execution.python.failures import SessionDisposedError, TooManyRestartsError
from jupyter_xcsh.execution.python.request import PythonRequest
from jupyter_xcsh.execution.python.session import KernelSession
from jupyter_xcsh.outputs.images import ImageCapture
from jupyter_xcsh.outputs.sink import DEFAULT_HEAD_LINES, DEFAULT_TAIL_LINES, OutputSink

__all__ = ["CallSettings", "PythonCall", "describe_error"]

#: Why a call's state is gone when the call asked for it.
RESET = "the call asked for a reset"
#: Why a call's state is gone when its cell ignored the interrupt (session, per-call).
ESCALATED = "the cell did not stop when interrupted, so its kernel was restarted"
ESCALATED_PER_CALL = "the cell did not stop when interrupted, so its kernel was shut down"
CANCELLED = "Command cancelled"


@dataclass(frozen=True)
class CallSettings:
    """What a call needs of the service that runs it: its collaborators and output limits."""

    launcher: KernelLauncher
    artifact_store: ArtifactStore
    log: logging.Logger
    max_output_bytes: int
    stream_interval: float
    output_head_lines: int = DEFAULT_HEAD_LINES
    output_tail_lines: int = DEFAULT_TAIL_LINES


class PythonCall:
    """One python tool call in progress: its cells on a session, and how it ended."""

    def __init__(
        self,
        settings: CallSettings,
        request: PythonRequest,
        kernel_name: str,
        outcome: CallOutcome,
        deadline: float,
        control: CallControl,
        observer: ExecutionObserver,
        stdin: StdinPolicy,
    ) -> None:
        self.settings = settings
        self.request = request
        self.kernel_name = kernel_name
        self.outcome = outcome
        self.deadline = deadline
        self.control = control
        self.observer = observer
        self.stdin = stdin
        self.lost: list[str] = []  # why the session's state was lost during this call

    def ended_waiting(self, error: BaseException) -> bool:
        """Record how a call ended that never got its session; False if ``error`` is not one."""
        outcome = self.outcome
        if isinstance(error, TimeoutError):
            outcome.timed_out = outcome.cancelled = True
            outcome.notice = timeout_notice(self.request.timeout)
        elif isinstance(error, CallCancelledError):
            outcome.cancelled = True
            outcome.notice = CANCELLED
        elif isinstance(error, SessionDisposedError):
            outcome.cancelled = True
            outcome.abort = str(error)
        else:
            return False
        return True

    async def run_on(self, session: KernelSession, *, per_call: bool) -> None:
        """Run the cells on ``session``: re-run once on a kernel that died, record the end."""
        outcome, control = self.outcome, self.control
        reset = self.request.reset
        try:
            while True:
                try:
                    if reset or not session.ready or session.kernel_name != self.kernel_name:
                        ready = await control.guard(
                            session.prepare(self.kernel_name, self.deadline), self.deadline
                        )
                        self.lost.extend(r for r in [ready.lost] if r)
                        outcome.notices.extend(n for n in [ready.notice] if n)
                    if reset:
                        reset = False  # before the first cell of the call only, even if re-run
                        await control.guard(session.reset(self.deadline), self.deadline)
                        self.lost.append(RESET)
                    self._describe_session(session)  # for a partial result meanwhile
                    await self._run_cells(session, per_call)
                except KernelLostError as e:
                    # Restarted (once: a second death in a row is TooManyRestartsError).
                    session.mark_dead(f"the kernel died during the call ({e}); it was re-run")
                    self._start_over()
                    continue
                session.settle()
                return
        except TooManyRestartsError as e:
            outcome.abort = str(e)
        except TimeoutError:
            if not outcome.timed_out:
                outcome.timed_out = outcome.cancelled = True
                outcome.notice = timeout_notice(self.request.timeout)
        except CallCancelledError:
            outcome.cancelled = True
            outcome.notice = outcome.notice or CANCELLED
        except NoSuchKernel as e:
            raise InvalidRequestError(f"No such kernel: {e.name}") from None
        except SessionDisposedError as e:
            outcome.cancelled = True
            outcome.abort = str(e)
        except Exception as e:
            if session.disposed:
                outcome.cancelled = True
                outcome.abort = str(SessionDisposedError())
            else:
                outcome.cancelled = outcome.cancelled or control.cancelled
                self.settings.log.warning("xcsh: python call failed: %s", e, exc_info=True)
                outcome.abort = f"Python kernel failed: {describe_error(e)}"
        finally:
            for cell in outcome.cells:
                if cell.status == "running":  # ended by the failure, not by the kernel
                    cell.status = "error"
                    cell.exit_code = None if outcome.cancelled else 1
                    self.observer.cell_status(cell.index, "error")
            self._describe_session(session)

    def _describe_session(self, session: KernelSession) -> None:
        """Set the result's ``session`` as the session is now."""
        outcome = self.outcome
        outcome.session = {
            "name": session.key.name,
            "cwd": session.key.cwd,
            "kernelId": session.kernel_id,
            "kernelName": session.kernel_name,
            "restartCount": session.restart_count,
            "generation": session.generation,
            "stateLost": bool(self.lost),
        }
        if self.lost:
            outcome.session["stateLostReason"] = "; ".join(dict.fromkeys(self.lost))

    def _start_over(self) -> None:
        """Put every cell back to pending for a re-run (the kernel and its output are gone)."""
        for cell in self.outcome.cells:
            if cell.status == "pending":
                continue
            cell.status, cell.output, cell.sink, cell.error = "pending", "", None, None
            cell.exit_code = cell.duration_ms = None
            cell.status_events.clear()
            self.observer.cell_status(cell.index, "pending")
        self.outcome.images.clear()
        self.outcome.json_outputs.clear()

    async def _run_cells(self, session: KernelSession, per_call: bool) -> None:
        settings, outcome, control, observer = (
            self.settings,
            self.outcome,
            self.control,
            self.observer,
        )
        connection = session.connection
        kernel_id = session.kernel_id
        assert connection is not None and kernel_id is not None
        launcher = settings.launcher
        forward = type(observer).chunk is not ExecutionObserver.chunk
        for cell in outcome.cells:
            if control.cancelled:
                outcome.cancelled = True
                outcome.notice = outcome.notice or CANCELLED
                return
            deadline = self.deadline + self.stdin.paused  # waits for answers are not due
            seconds_left = deadline - time.monotonic()
            cell.status = "running"
            observer.cell_status(cell.index, "running")
            sink = OutputSink(
                max_bytes=settings.max_output_bytes,
                head_lines=settings.output_head_lines,
                tail_lines=settings.output_tail_lines,
                open_artifact=lambda: settings.artifact_store.create("python"),
                on_chunk=(
                    (lambda text, i=cell.index: observer.chunk(i, text))  # type: ignore[misc]
                    if forward
                    else None
                ),
                chunk_interval=settings.stream_interval,
            )
            started = time.monotonic()
            try:
                result = await run_cell(
                    connection,
                    cell,
                    sink,
                    deadline=deadline,
                    control=control,
                    observer=observer,
                    interrupt=lambda: launcher.interrupt(kernel_id),
                    is_alive=lambda: launcher.is_alive(kernel_id),
                    images=ImageCapture(settings.artifact_store, "python"),
                    stdin=self.stdin,
                )
            except KernelLostError:
                sink.close()  # the call is re-run: this cell starts over
                raise
            except BaseException:
                # Keep what the cell printed before the failure; the caller says why it ended.
                cell.sink = sink.dump()
                cell.output = cell.sink.output
                cell.duration_ms = round((time.monotonic() - started) * 1000)
                cell.status = "error"
                cell.exit_code = None if control.cancelled or session.disposed else 1
                observer.cell_status(cell.index, "error")
                raise
            cell.duration_ms = round((time.monotonic() - started) * 1000)
            outcome.images.extend(result.images)
            outcome.json_outputs.extend(result.json_outputs)
            outcome.stdin_requested = outcome.stdin_requested or result.stdin_requested
            outcome.stdin_failed = outcome.stdin_failed or result.stdin_failed
            notice = None
            if result.kind == "timeout":
                outcome.timed_out = outcome.cancelled = True
                notice = timeout_notice(seconds_left)
            elif result.kind == "cancelled":
                outcome.cancelled = True
                notice = CANCELLED
            if result.unresponsive:
                session.escalate(restart=not per_call)
                self.lost.append(ESCALATED_PER_CALL if per_call else ESCALATED)
            outcome.notice = notice
            cell.sink = sink.dump(notice)
            cell.output = cell.sink.output
            cell.status = "complete" if result.kind == "ok" else "error"
            cell.exit_code = {"ok": 0, "error": 1}.get(result.kind)  # stopped cells: null
            observer.cell_status(cell.index, cell.status)
            if result.kind != "ok":
                return


def describe_error(error: BaseException) -> str:
    """``Type: message`` of an unexpected failure (never empty)."""
    message = str(error)
    return f"{type(error).__name__}: {message}" if message else type(error).__name__
