"""The python tool's one call path (docs/developers/contract.md §5): REST, MCP and the lab."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from jupyter_xcsh.calls.caller import Caller
from jupyter_xcsh.calls.control import CallControl
from jupyter_xcsh.calls.observer import ExecutionObserver, ObserverGroup
from jupyter_xcsh.errors import InvalidRequestError
from jupyter_xcsh.events.activity import ActivityEvents, PythonCallEvents
from jupyter_xcsh.execution.inplace.request import kernelspec_name
from jupyter_xcsh.execution.inplace.service import InPlaceService
from jupyter_xcsh.execution.kernel.stdin import StdinPolicy
from jupyter_xcsh.execution.python.request import PythonRequest, parse_python_request
from jupyter_xcsh.execution.python.service import PythonService
from jupyter_xcsh.notebook.storage.store import NotebookStore
from jupyter_xcsh.policy.gate import AgentAction
from jupyter_xcsh.runs.registry import (
    BackgroundRun,
    RunInputTool,
    RunRegistry,
    session_waiting,
    take_run_fields,
)
from jupyter_xcsh.settings import XcshSettings
from jupyter_xcsh.tools.base import Permission
from jupyter_xcsh.tools.classify import python_action
from jupyter_xcsh.tools.inplace.tool import InPlaceTool

__all__ = ["NotebookScratch", "PythonTool"]


@dataclass(frozen=True)
class NotebookScratch:
    """What the python tool's ``notebook_path`` runs with: the in-place engine, the notebooks."""

    inplace: InPlaceService
    store: NotebookStore


class PythonTool:
    """Run cells of code on the server's kernels; progress goes to the lab and the observer."""

    name: ClassVar[str] = "python"
    route: ClassVar[str] = "/api/xcsh/python"
    #: Running code, as the server's kernels API asks it.
    permission: ClassVar[Permission] = Permission("execute", "kernels")

    def __init__(
        self,
        execution: PythonService,
        activity: ActivityEvents,
        settings: XcshSettings,
        runs: RunRegistry,
        *,
        follow_ups: RunInputTool,
        contents_manager: Any,
        notebooks: NotebookScratch | None = None,
    ) -> None:
        """Run calls on ``execution``'s sessions, or (``notebooks``) on a notebook's kernel.

        Without ``notebooks``, ``notebook_path`` is refused. ``follow_ups`` follows and answers
        the runs of ``runs`` (the one of the application, shared by every tool that runs code).
        """
        self.notebooks = notebooks
        self.execution = execution
        self.activity = activity
        self.settings = settings
        self.runs = runs
        self.follow_ups = follow_ups
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
        codes = [cell.code for cell in request.cells]
        action = python_action(codes, request.cwd, request.notebook_path, request.timeout)
        if request.notebook_path is not None:
            return await self._start_scratch(request, caller, observer, control, detach, action)
        await caller.require(*self.permission)
        await caller.permit(action, observer, control)
        if request.mode == "session":
            waiting = self.runs.waiting_on(request.session, request.cwd)
            if waiting is not None:
                raise session_waiting(request.session, waiting)
        return await self._start_run(request, observer, control, detach)

    # -- the sessions endpoints (``handlers/sessions.py``) --------------------------------------

    def list_sessions(self) -> list[dict[str, Any]]:
        """Every cached session, most recently used first."""
        return self.execution.list_sessions()

    async def delete_session(self, name: str, cwd: str | None = None) -> None:
        """Shut down the sessions called ``name`` (in ``cwd``, or in every directory); 404."""
        await self.execution.delete_session(name, cwd)

    def interrupt_session(self, name: str, cwd: str | None = None) -> bool:
        """Cancel the running calls of the sessions called ``name``; whether one was running."""
        return self.execution.interrupt_session(name, cwd)

    async def _start_scratch(
        self,
        request: PythonRequest,
        caller: Caller,
        observer: ExecutionObserver | None,
        control: CallControl | None,
        detach: bool,
        action: AgentAction,
    ) -> dict[str, Any]:
        """Run the cells on the notebook's own kernel (``notebook_path``), as scratch code.

        The notebook's turn and kernel as a run in place takes them (``scratch.py`` of the
        in-place engine); its rights too. 404 for a missing notebook, 409 while a run of it
        waits for an answer to a prompt.
        """
        notebooks, path = self.notebooks, request.notebook_path
        assert path is not None
        if notebooks is None:
            raise InvalidRequestError("notebook_path is not available on this server")
        for permission in (InPlaceTool.permission, InPlaceTool.EXECUTE):
            await caller.require(*permission)
        api_path, _ = await notebooks.store.resolve(path)
        await caller.permit(action, observer, control)
        waiting = self.runs.waiting_in(api_path)
        if waiting is not None:
            raise session_waiting(path, waiting)
        # The notebook's kernel spec names the kernel to start when it has none (as a run's).
        outcome = await notebooks.store.view(path, lambda d: kernelspec_name(d.metadata))
        kernel_name = outcome.value
        codes = [(cell.title, cell.code) for cell in request.cells]

        async def work(
            relay: ExecutionObserver, run_control: CallControl, stdin: StdinPolicy, call_id: str
        ) -> dict[str, Any]:
            events = PythonCallEvents(
                self.activity,
                call_id,
                self.execution.stream_interval,
                reads_stdin=stdin.spec.reads,
            )
            return await notebooks.inplace.scratch(
                codes,
                api_path=api_path,
                kernel_name=kernel_name,
                timeout=request.timeout,
                stdin_spec=request.stdin,
                observer=ObserverGroup(relay, events),
                control=run_control,
                call_id=call_id,
                stdin=stdin,
            )

        return await self.runs.start(
            work,
            request.stdin,
            self.settings.input_timeout,
            observer,
            control,
            detach=detach,
            reject_queued=lambda run: notebooks.inplace.reject_queued(
                api_path, session_waiting(path, run)
            ),
            notebook=api_path,
        )

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

        def reject_queued(run: BackgroundRun) -> None:
            assert session is not None
            self.execution.reject_queued(session, request.cwd, session_waiting(session, run))

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
