"""The python tool's one call path (docs/contract.md §5), shared by REST, MCP and the lab."""

from __future__ import annotations

from typing import Any

from ..events.activity import ActivityEvents, PythonCallEvents
from ..execution.kernel.control import CallControl
from ..execution.kernel.observer import ExecutionObserver, ObserverGroup
from ..execution.kernel.stdin import StdinPolicy
from ..execution.python.request import PythonRequest, parse_python_request
from ..execution.python.runner import ExecutionService
from ..settings import XcshSettings
from .caller import Caller
from .runs import RunInputTool, RunRegistry, session_waiting, take_run_fields

__all__ = ["PythonTool"]

#: The authorizer resource and action of running code (as the server's kernels API).
RESOURCE, ACTION = "kernels", "execute"


class PythonTool:
    """Run cells of code on the server's kernels; progress goes to the lab and the observer."""

    def __init__(
        self,
        execution: ExecutionService,
        activity: ActivityEvents,
        settings: XcshSettings,
        runs: RunRegistry,
        *,
        contents_manager: Any,
    ) -> None:
        self.execution = execution
        self.activity = activity
        self.settings = settings
        self.runs = runs
        self.follow_ups = RunInputTool(runs)
        self.contents_manager = contents_manager  # its hidden-file policy, read per call

    async def call(
        self,
        body: dict[str, Any],
        caller: Caller,
        observer: ExecutionObserver | None = None,
        control: CallControl | None = None,
    ) -> dict[str, Any]:
        """Validate ``body``, check the caller may execute code, run it, return the result.

        Errors in the code, timeouts and cancels are results (``isError``), not exceptions;
        a bad request or a refused caller raises a domain error before anything runs, and a
        call on a session whose kernel waits for an answer a ``ConflictError``. ``control``
        lets the transport cancel the call (a client gone away; with ``detach`` the call goes
        on). The call runs as a ``BackgroundRun``: with ``stdin: "ask"`` this returns at its
        first prompt, the run going on. ``run_id`` + ``answer``/``wait`` continue a run.
        """
        body, follow, detach = take_run_fields(body)
        if follow is not None:
            return await self.follow_ups.follow_up(follow, caller, observer, control)
        request = parse_python_request(
            body,
            root_dir=self.execution.root_dir,
            default_mode=self.settings.kernel_mode,
            allow_hidden=self.contents_manager.allow_hidden,
        )
        await caller.require(ACTION, RESOURCE)
        if request.mode == "session" and self.runs.waiting_on(request.session, request.cwd):
            raise session_waiting(request.session)
        return await self._start_run(request, observer, control, detach)

    async def _run(
        self,
        request: PythonRequest,
        observer: ExecutionObserver | None,
        control: CallControl,
        stdin: StdinPolicy,
        call_id: str,
    ) -> dict[str, Any]:
        events = PythonCallEvents(
            self.activity,
            call_id,
            self.execution.stream_interval,
            reads_stdin=stdin.spec.reads,
        )
        progress = events if observer is None else ObserverGroup(observer, events)
        return await self.execution.run(request, progress, control, call_id=call_id, stdin=stdin)

    async def _start_run(
        self,
        request: PythonRequest,
        observer: ExecutionObserver | None,
        control: CallControl | None,
        detach: bool,
    ) -> dict[str, Any]:
        """Run the call in a task of its own; return at its end or (``ask``) its first prompt."""
        session = request.session if request.mode == "session" else None

        def reject_queued() -> None:
            assert session is not None
            self.execution.reject_queued(session, request.cwd, session_waiting(session))

        return await self.runs.start(
            lambda relay, run_control, stdin, run_id: self._run(
                request, relay, run_control, stdin, run_id
            ),
            request.stdin,
            self.settings.input_timeout,
            observer,
            control,
            detach=detach,
            reject_queued=reject_queued if session is not None else None,
            session=session,
            cwd=request.cwd,
        )
