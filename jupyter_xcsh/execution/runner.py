"""The execution service: run a python tool call on a session (or per-call) kernel."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import time
from typing import Any

from jupyter_client.kernelspec import NoSuchKernel

from ..errors import InvalidRequestError, NotFoundError
from ..outputs.artifacts import ArtifactStore
from ..outputs.sink import OutputSink
from .cell import CallControl, CellRun, run_cell
from .connection import KernelLostError
from .kernels import KernelLauncher
from .observer import ExecutionObserver
from .pool import KernelSessionPool
from .prelude import init_code
from .request import PythonRequest
from .result import CallOutcome, assemble_result, format_seconds
from .session import KernelSession, SessionDisposedError, SessionKey, TooManyRestartsError

__all__ = ["ExecutionService"]


class ExecutionService:
    """Run python tool calls on the server's own kernels; knows nothing of HTTP.

    Parameters
    ----------
    kernel_manager
        The server's kernel manager (local or gateway).
    artifact_store
        Where overflowing output spills.
    root_dir
        The server's contents root (session working directories are relative to it).
    state_dir
        Directory of the per-session state files (``PI_SESSION_FILE``).
    max_output_bytes, stream_interval
        The OutputSink limit and the minimum seconds between two live chunks.
    pool_options
        ``max_sessions``, ``idle_timeout``, ``cleanup_interval``, ``heartbeat_interval``.

    """

    def __init__(
        self,
        kernel_manager: Any,
        *,
        artifact_store: ArtifactStore,
        root_dir: str,
        state_dir: str,
        log: logging.Logger,
        max_output_bytes: int = 51200,
        stream_interval: float = 0.25,
        **pool_options: Any,
    ) -> None:
        self.log = log
        self.artifact_store = artifact_store
        self.root_dir = os.path.abspath(root_dir)
        self.state_dir = state_dir
        self.max_output_bytes = max_output_bytes
        self.stream_interval = stream_interval
        self.launcher = KernelLauncher(kernel_manager, log=log)
        self.pool = KernelSessionPool(
            self.launcher, init_code=self._init_code, log=log, **pool_options
        )
        self.launcher.on_fd_exhaustion = self.pool.release_idle

    def _init_code(self, key: SessionKey) -> str:
        digest = hashlib.sha256(f"{key.name}\0{key.cwd}".encode()).hexdigest()[:16]
        try:
            # Code in the kernel writes the state file: its directory must exist.
            os.makedirs(self.state_dir, mode=0o700, exist_ok=True)
        except OSError as e:
            self.log.warning("xcsh: could not create %s: %s", self.state_dir, e)
        session_file = os.path.join(self.state_dir, f"{digest}.json")
        os_cwd = os.path.join(self.root_dir, *key.cwd.split("/")) if key.cwd else self.root_dir
        return init_code(
            cwd=os_cwd,
            env={"PI_SESSION_FILE": session_file, "ARTIFACTS": self.artifact_store.directory},
        )

    # -- sessions API --------------------------------------------------------------------
    def list_sessions(self) -> list[dict[str, Any]]:
        """Every cached session, most recently used first."""
        sessions = sorted(self.pool.sessions.values(), key=lambda s: -s.last_used)
        return [s.describe() for s in sessions]

    def _named(self, name: str) -> list[KernelSession]:
        sessions = self.pool.find(name)
        if not sessions:
            raise NotFoundError(f"No python session named {name}")
        return sessions

    async def delete_session(self, name: str) -> None:
        """Shut down every session called ``name``."""
        for session in self._named(name):
            await self.pool.remove(session)

    def interrupt_session(self, name: str) -> bool:
        """Cancel the running call of every session called ``name``; whether one was running."""
        per_call = [s for s in self.pool.transient if s.key.name == name]
        targets = per_call + self.pool.find(name) if per_call else self._named(name)
        running = False
        for session in targets:
            if session.current_call is not None:
                session.current_call.cancel()
                running = True
        return running

    async def close(self) -> None:
        """Shut down every kernel the service started."""
        await self.pool.close()

    # -- calls ---------------------------------------------------------------------------
    async def run(
        self,
        request: PythonRequest,
        observer: ExecutionObserver | None = None,
        control: CallControl | None = None,
        *,
        call_id: str | None = None,
    ) -> dict[str, Any]:
        """Run ``request`` and return the result body; errors in the code are results.

        ``call_id`` names the call in its progress and its result (``callId``).
        """
        observer = observer or ExecutionObserver()
        control = control or CallControl()
        deadline = time.monotonic() + request.timeout
        kernel_name = request.kernel_name or self.launcher.default_kernel_name
        # Before touching any session: a misspelled name must not cost a session its kernel.
        if kernel_name != self.launcher.default_kernel_name and not (
            await self.launcher.has_kernel_spec(kernel_name)
        ):
            raise InvalidRequestError(f"No such kernel: {kernel_name}")
        key = SessionKey(request.session, request.cwd)
        cells = [CellRun(i, c.title, c.code) for i, c in enumerate(request.cells)]
        outcome = CallOutcome(cells=cells, max_output_bytes=self.max_output_bytes)
        outcome.session = {"name": key.name, "cwd": key.cwd, "kernelId": None, "restartCount": 0}
        observer.call_started(
            {
                "callId": call_id,
                "session": key.name,
                "cwd": key.cwd,
                "mode": request.mode,
                "cells": [{"index": c.index, "title": c.title, "code": c.code} for c in cells],
            }
        )
        try:
            if request.mode == "per-call":
                session = self.pool.new_session(key, kernel_name)
                session.busy, session.current_call = True, control
                self.pool.transient.add(session)
                try:
                    await self._run_on(session, request, outcome, deadline, control, observer)
                finally:
                    self.pool.transient.discard(session)
                    await asyncio.shield(session.dispose())
            else:
                await self._run_queued(
                    key, kernel_name, request, outcome, deadline, control, observer
                )
            result = assemble_result(outcome)
            result["callId"] = call_id
        except BaseException as e:
            # Observers (the lab's activity panel) must see every call end, failed or not.
            observer.call_finished(dict(_failure_summary(outcome, e), callId=call_id))
            raise
        observer.call_finished(result)
        return result

    async def _run_queued(
        self,
        key: SessionKey,
        kernel_name: str,
        request: PythonRequest,
        outcome: CallOutcome,
        deadline: float,
        control: CallControl,
        observer: ExecutionObserver,
    ) -> None:
        try:
            session = await self.pool.acquire(key, kernel_name, deadline)
        except TimeoutError:
            self._timed_out(outcome, request.timeout)
            return
        session.waiting += 1
        try:
            await asyncio.wait_for(session.queue.acquire(), max(0.0, deadline - time.monotonic()))
        except TimeoutError:
            self._timed_out(outcome, request.timeout)
            return
        finally:
            session.waiting -= 1
        session.busy, session.current_call = True, control
        try:
            await self._run_on(session, request, outcome, deadline, control, observer)
        finally:
            session.busy, session.current_call = False, None
            session.last_used = time.time()
            session.queue.release()
            if session.kernel_id is None and not session.waiting and not session.starting:
                # Its first start failed (or it lost its kernel): keep no phantom session.
                self.pool.discard(session)

    def _timed_out(self, outcome: CallOutcome, seconds: float) -> None:
        outcome.timed_out = outcome.cancelled = True
        outcome.notice = f"Command timed out after {format_seconds(seconds)} seconds"

    async def _run_on(
        self,
        session: KernelSession,
        request: PythonRequest,
        outcome: CallOutcome,
        deadline: float,
        control: CallControl,
        observer: ExecutionObserver,
    ) -> None:
        state_lost = False
        reset = request.reset
        kernel_name = request.kernel_name or self.launcher.default_kernel_name
        try:
            while True:
                session.check_disposed()
                if session.kernel_id is not None and session.kernel_name != kernel_name:
                    # Same session, another (existing) kernel: the old kernel and its state go.
                    session.kernel_name = kernel_name
                    await session.shutdown_kernel()
                    session.check_disposed()
                    state_lost = True
                session.kernel_name = kernel_name
                state_lost = await session.ensure_kernel(deadline) or state_lost
                if reset:
                    reset = False  # before the first cell of the call only, even if re-run
                    await session.reset(deadline)
                    state_lost = True
                try:
                    await self._run_cells(session, outcome, deadline, control, observer)
                except KernelLostError as e:
                    session.mark_dead(str(e))
                    state_lost = True
                    for cell in outcome.cells:
                        cell.status, cell.output, cell.sink, cell.error = "pending", "", None, None
                        cell.status_events.clear()
                        observer.cell_status(cell.index, "pending")
                    outcome.images.clear()
                    outcome.json_outputs.clear()
                    continue
                if session.dead is None:
                    session.restart_streak = 0
                return
        except TooManyRestartsError as e:
            outcome.abort = str(e)
        except TimeoutError:
            if not outcome.timed_out:
                self._timed_out(outcome, request.timeout)
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
                if control.cancelled:
                    outcome.cancelled = True
                self.log.warning("xcsh: python call failed: %s", e, exc_info=True)
                outcome.abort = f"Python kernel failed: {_describe(e)}"
        finally:
            for cell in outcome.cells:
                if cell.status == "running":  # ended by the failure, not by the kernel
                    cell.status, cell.exit_code = "error", 1
                    observer.cell_status(cell.index, "error")
            outcome.session = {
                "name": session.key.name,
                "cwd": session.key.cwd,
                "kernelId": session.kernel_id,
                "kernelName": session.kernel_name,
                "restartCount": session.restart_count,
                "generation": session.generation,
                "stateLost": state_lost,
            }

    async def _run_cells(
        self,
        session: KernelSession,
        outcome: CallOutcome,
        deadline: float,
        control: CallControl,
        observer: ExecutionObserver,
    ) -> None:
        connection = session.connection
        kernel_id = session.kernel_id
        assert connection is not None and kernel_id is not None
        for cell in outcome.cells:
            if control.cancelled:
                outcome.cancelled = True
                outcome.notice = outcome.notice or "Command cancelled"
                return
            seconds_left = deadline - time.monotonic()
            cell.status = "running"
            observer.cell_status(cell.index, "running")
            sink = OutputSink(
                max_bytes=self.max_output_bytes,
                open_artifact=lambda: self.artifact_store.create("python"),
                on_chunk=(
                    None
                    if type(observer).chunk is ExecutionObserver.chunk
                    else lambda text, i=cell.index: observer.chunk(i, text)  # type: ignore[misc]
                ),
                chunk_interval=self.stream_interval,
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
                    interrupt=lambda: self.launcher.interrupt(kernel_id),
                    is_alive=lambda: self.launcher.is_alive(kernel_id),
                )
            except KernelLostError:
                sink.close()  # the call is re-run: this cell starts over
                raise
            except BaseException:
                # Keep what the cell printed before the failure; the caller says why it ended.
                cell.sink = sink.dump()
                cell.output = cell.sink.output
                cell.duration_ms = round((time.monotonic() - started) * 1000)
                cell.status, cell.exit_code = "error", 1
                observer.cell_status(cell.index, "error")
                raise
            cell.duration_ms = round((time.monotonic() - started) * 1000)
            outcome.images.extend(result.images)
            outcome.json_outputs.extend(result.json_outputs)
            outcome.stdin_requested = outcome.stdin_requested or result.stdin_requested
            notice = None
            if result.kind == "timeout":
                outcome.timed_out = outcome.cancelled = True
                notice = f"Command timed out after {format_seconds(seconds_left)} seconds"
            elif result.kind == "cancelled":
                outcome.cancelled = True
                notice = "Command cancelled"
            if result.unresponsive:
                session.mark_dead("kernel did not stop after an interrupt")
            outcome.notice = notice
            cell.sink = sink.dump(notice)
            cell.output = cell.sink.output
            cell.status = "complete" if result.kind == "ok" else "error"
            cell.exit_code = 0 if result.kind == "ok" else 1
            observer.cell_status(cell.index, cell.status)
            if result.kind != "ok":
                return


def _describe(error: BaseException) -> str:
    """``Type: message`` of an unexpected failure (never empty)."""
    message = str(error)
    return f"{type(error).__name__}: {message}" if message else type(error).__name__


def _failure_summary(outcome: CallOutcome, error: BaseException) -> dict[str, Any]:
    """A result-shaped summary of a call that raised instead of returning a result."""
    message = getattr(error, "message", None) or _describe(error)
    return {
        "text": message,
        "isError": True,
        "cancelled": isinstance(error, asyncio.CancelledError),
        "timedOut": False,
        "truncated": False,
        "totalLines": 0,
        "totalBytes": 0,
        "cells": [c.to_json() for c in outcome.cells],
        "session": outcome.session,
    }
