"""The execution service: run a python tool call on a session (or per-call) kernel."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import posixpath
import time
from typing import Any

from jupyter_xcsh.artifacts.store import ArtifactStore
from jupyter_xcsh.calls.control import CallControl
from jupyter_xcsh.calls.observer import ExecutionObserver, report_input
from jupyter_xcsh.errors import InvalidRequestError, NotFoundError
from jupyter_xcsh.execution.kernel.cell import CellRun
from jupyter_xcsh.execution.kernel.launcher import KernelLauncher
from jupyter_xcsh.execution.kernel.listing import SessionListing
from jupyter_xcsh.execution.kernel.result import CallOutcome, assemble_result, partial_result
from jupyter_xcsh.execution.kernel.stdin import StdinPolicy
from jupyter_xcsh.execution.python.call import CallSettings, PythonCall, describe_error
from jupyter_xcsh.execution.python.pool import KernelSessionPool
from jupyter_xcsh.execution.python.prelude import init_code
from jupyter_xcsh.execution.python.request import PythonRequest
from jupyter_xcsh.execution.python.session import SessionKey
from jupyter_xcsh.fast_paths import FastPaths
from jupyter_xcsh.memory import TRIM_AFTER_BYTES, TrimSoon
from jupyter_xcsh.outputs.images import budget_images
from jupyter_xcsh.outputs.sink import DEFAULT_HEAD_LINES, DEFAULT_MAX_BYTES, DEFAULT_TAIL_LINES

__all__ = ["PythonService"]


class PythonService:
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
    base_url
        The server's base URL, to tell a remote kernel where artifacts can be read.
    max_output_bytes, output_head_lines, output_tail_lines, stream_interval
        The OutputSink's limits (``outputs/sink.py``) and the minimum seconds between two live
        chunks.
    session_manager
        The server's session manager, where each session's kernel is recorded by name for
        the lab (``kernel/listing.py``); None records nothing.
    fast_paths
        The fast paths kernel connections may use (default: all).
    trim_memory
        Give freed memory back to the system after a call with large output (``memory``).
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
        base_url: str = "/",
        max_output_bytes: int = DEFAULT_MAX_BYTES,
        output_head_lines: int = DEFAULT_HEAD_LINES,
        output_tail_lines: int = DEFAULT_TAIL_LINES,
        stream_interval: float = 0.25,
        session_manager: Any = None,
        fast_paths: FastPaths | None = None,
        trim_memory: bool = True,
        **pool_options: Any,
    ) -> None:
        self.log = log
        self.artifact_store = artifact_store
        self.root_dir = os.path.abspath(root_dir)
        self.state_dir = state_dir
        self.artifacts_url = base_url.rstrip("/") + "/api/xcsh/artifacts/"
        self.max_output_bytes = max_output_bytes
        self.stream_interval = stream_interval
        self.trim_memory = trim_memory
        self._trim = TrimSoon()
        self.launcher = KernelLauncher(
            kernel_manager,
            log=log,
            listing=SessionListing(session_manager, log=log),
            fast_paths=fast_paths,
        )
        self.pool = KernelSessionPool(
            self.launcher, init_code=self._init_code, log=log, **pool_options
        )
        self.launcher.on_fd_exhaustion = self._release_idle
        self.call_settings = CallSettings(
            launcher=self.launcher,
            artifact_store=artifact_store,
            log=log,
            max_output_bytes=max_output_bytes,
            stream_interval=stream_interval,
            output_head_lines=output_head_lines,
            output_tail_lines=output_tail_lines,
        )

    def _init_code(self, key: SessionKey) -> str:
        digest = hashlib.sha256(f"{key.name}\0{key.cwd}".encode()).hexdigest()[:16]
        try:
            # Code in the kernel writes the state file: its directory must exist.
            os.makedirs(self.state_dir, mode=0o700, exist_ok=True)
        except OSError as e:
            self.log.warning("xcsh: could not create %s: %s", self.state_dir, e)
        session_file = os.path.join(self.state_dir, f"{digest}.json")
        os_cwd = os.path.join(self.root_dir, *key.cwd.split("/")) if key.cwd else self.root_dir
        env = {
            "PI_SESSION_FILE": session_file,
            "ARTIFACTS": self.artifact_store.directory,
            "XCSH_ARTIFACTS_URL": self.artifacts_url,
        }
        bound = self.launcher.fast_paths.uses("kernel_stream_bound")
        return init_code(cwd=os_cwd, env=env, bound_streams=bound)

    def _release_idle(self) -> None:
        """Release the cached clients of idle sessions and mark them for restart (EMFILE)."""
        for session in self.pool.idle_sessions():
            session.release_connection()
            session.mark_dead("file descriptors ran out, so its connection was released")

    # -- sessions API --------------------------------------------------------------------
    def list_sessions(self) -> list[dict[str, Any]]:
        """Every cached session, most recently used first."""
        return self.pool.describe()

    async def delete_session(self, name: str, cwd: str | None = None) -> None:
        """Shut down the sessions called ``name`` (in ``cwd``, or in every directory)."""
        cwd = _normal_cwd(cwd)
        sessions = self.pool.find(name, cwd)
        if not sessions:
            raise NotFoundError(_no_session(name, cwd))
        for session in sessions:
            await self.pool.remove(session)

    def interrupt_session(self, name: str, cwd: str | None = None) -> bool:
        """Cancel the running calls of the sessions called ``name``; whether one was running."""
        cwd = _normal_cwd(cwd)
        interrupted = self.pool.interrupt(name, cwd)
        if interrupted is None:
            raise NotFoundError(_no_session(name, cwd))
        return interrupted

    def reject_queued(self, name: str, cwd: str, error: Exception) -> None:
        """End the calls queued on the session ``name`` in ``cwd`` with ``error`` (raised)."""
        self.pool.reject_queued(SessionKey(name, cwd), error)

    async def close(self) -> None:
        """Shut down every kernel the service started."""
        await self.pool.close()
        self.launcher.close()

    # -- calls ---------------------------------------------------------------------------
    async def run(
        self,
        request: PythonRequest,
        observer: ExecutionObserver | None = None,
        control: CallControl | None = None,
        *,
        call_id: str | None = None,
        stdin: StdinPolicy | None = None,
    ) -> dict[str, Any]:
        """Run ``request`` and return the result body; errors in the code are results.

        ``call_id`` names the call in its progress and its result (``callId``). ``stdin``
        answers the kernel's prompts (by default as ``request.stdin`` says); while one of its
        prompts waits for an answer, ``stdin.partial_result()`` gives the result so far.
        """
        observer = observer or ExecutionObserver()
        control = control or CallControl()
        stdin = stdin or StdinPolicy(request.stdin)
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
        stdin.partial_result = lambda: partial_result(
            outcome, stdin, call_id, self.artifact_store, assemble_result
        )
        unlisten = stdin.listen(lambda: report_input(stdin, observer))
        observer.call_started(
            {
                "callId": call_id,
                "session": key.name,
                "cwd": key.cwd,
                "mode": request.mode,
                "cells": [{"index": c.index, "title": c.title, "code": c.code} for c in cells],
            }
        )
        call = PythonCall(
            self.call_settings, request, kernel_name, outcome, deadline, control, observer, stdin
        )
        try:
            if request.mode == "per-call":
                async with self.pool.checkout_per_call(key, kernel_name, control) as session:
                    await call.run_on(session, per_call=True)
            else:
                try:
                    async with self.pool.checkout(
                        key, kernel_name, deadline=deadline, control=control
                    ) as session:
                        await call.run_on(session, per_call=False)
                except BaseException as e:
                    if not call.ended_waiting(e):
                        raise
            outcome.image_results = await budget_images(outcome.images, self.artifact_store)
            result = assemble_result(outcome)
            result["callId"] = call_id
        except BaseException as e:
            # Observers (the lab's activity panel) must see every call end, failed or not.
            observer.call_finished(dict(_failure_summary(outcome, e), callId=call_id))
            raise
        finally:
            unlisten()
            stdin.partial_result = None
        observer.call_finished(result)
        if self.trim_memory and result.get("totalBytes", 0) > TRIM_AFTER_BYTES:
            # The call's message buffers, else kept at their peak; on a worker thread once the
            # call has answered (the trim holds the heap's lock while it walks the heap).
            self._trim.ask()
        return result


def _normal_cwd(cwd: str | None) -> str | None:
    """A session ``cwd`` as the sessions API lists it (``""`` for the root)."""
    if cwd is None:
        return None
    normal = posixpath.normpath(cwd.strip("/") or ".")
    return "" if normal == "." else normal


def _no_session(name: str, cwd: str | None) -> str:
    if cwd is None:
        return f"No python session named {name}"
    return f"No python session named {name} with cwd '{cwd}'"


def _failure_summary(outcome: CallOutcome, error: BaseException) -> dict[str, Any]:
    """A result-shaped summary of a call that raised instead of returning a result."""
    message = getattr(error, "message", None) or describe_error(error)
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
