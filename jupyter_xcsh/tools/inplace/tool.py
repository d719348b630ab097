"""The run-in-place tool's one call path (docs/developers/contract.md §6): REST, MCP and the lab."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from jupyter_xcsh.calls.caller import Caller
from jupyter_xcsh.calls.control import CallControl
from jupyter_xcsh.calls.observer import ExecutionObserver, ObserverGroup
from jupyter_xcsh.errors import XcshError
from jupyter_xcsh.events.activity import ActivityEvents
from jupyter_xcsh.events.inplace import InPlaceEvents
from jupyter_xcsh.execution.inplace.logs import KernelLogs
from jupyter_xcsh.execution.inplace.request import (
    AcceptedRun,
    RunRequest,
    accept_run,
    parse_run_request,
)
from jupyter_xcsh.execution.inplace.result import NotebookCellRun
from jupyter_xcsh.execution.inplace.service import InPlaceService
from jupyter_xcsh.execution.kernel.stdin import StdinPolicy
from jupyter_xcsh.notebook.rooms.presence import AgentPresence
from jupyter_xcsh.notebook.storage.store import NotebookStore
from jupyter_xcsh.policy.gate import AgentAction
from jupyter_xcsh.policy.tags import ASK_BEFORE_RUN
from jupyter_xcsh.runs.registry import RunInputTool, RunRegistry, session_waiting, take_run_fields
from jupyter_xcsh.tools.base import Permission
from jupyter_xcsh.tools.classify import run_action
from jupyter_xcsh.tools.inplace.target import NotebookOutputs

__all__ = ["InPlaceTool"]

#: The text of a run of the stale cells when no cell is stale.
NOTHING_STALE = "No stale cells: nothing was run"


class InPlaceTool:
    """Run code cells of a notebook in its own kernel and write their outputs back into it."""

    #: Over MCP, the ``notebook`` tool's action of this name.
    name: ClassVar[str] = "run"
    route: ClassVar[str] = "/api/xcsh/notebook/run"
    #: Changing the notebook, asked first; executing code in its kernel is ``EXECUTE``.
    permission: ClassVar[Permission] = Permission("write", "contents")
    EXECUTE: ClassVar[Permission] = Permission("execute", "kernels")

    def __init__(
        self,
        inplace: InPlaceService,
        store: NotebookStore,
        activity: ActivityEvents,
        runs: RunRegistry,
        *,
        follow_ups: RunInputTool,
        input_timeout: float = 300.0,
        stream_interval: float = 0.25,
    ) -> None:
        self.inplace = inplace
        self.store = store
        self.activity = activity
        self.runs = runs
        self.follow_ups = follow_ups  # the application's one, shared with the python tool
        self.input_timeout = input_timeout
        self.stream_interval = stream_interval
        self.kernel_logs = KernelLogs(inplace.kernels)

    async def call(
        self,
        body: dict[str, Any],
        caller: Caller,
        observer: ExecutionObserver | None = None,
        control: CallControl | None = None,
    ) -> dict[str, Any]:
        """Validate ``body``, check the caller's rights, run the cells, return the result.

        Needs ``write`` on ``contents`` and ``execute`` on ``kernels``. Errors in the code,
        timeouts, a busy or dying kernel are results (``isError``); a bad request, a missing
        notebook or cell, a stale ``expected_revision``/``expected_source_hash`` (409), a
        notebook whose run waits for input (409) or a refused caller raise domain errors
        before anything runs. The run goes on in a task of its own, as the python tool's:
        ``detach``, ``stdin: "ask"`` and ``run_id`` + ``answer``/``wait`` work the same.
        """
        body, follow, detach = take_run_fields(body, frozenset({"notebook_path"}))
        if follow is not None:
            return await self.follow_ups.follow_up(follow, caller, observer, control)
        request = parse_run_request(body)
        api_path = await self.admit(request, caller)
        # The cells as people see them (a room's unsaved typing included), checked against
        # what the caller expects in the same step.
        code_of = await self.kernel_logs.code_of(api_path) if request.stale else None
        outcome = await self.store.view(
            request.notebook_path, lambda document: accept_run(request, document, code_of)
        )
        cells = [(c.index, c.cell_id, c.source) for c in outcome.value.cells]
        await caller.permit(run_action(request, "notebook", cells), observer, control)
        return await self.start(
            request, api_path, outcome.via, outcome.value, caller, observer, control, detach
        )

    async def admit(self, request: RunRequest, caller: Caller) -> str:
        """Check the caller may run cells in place and the notebook takes a run; its API path.

        ``ForbiddenError`` without ``write`` on ``contents`` and ``execute`` on ``kernels``;
        409 while a run of the notebook waits for an answer to a prompt.
        """
        for permission in (self.permission, self.EXECUTE):
            await caller.require(*permission)
        api_path, _ = await self.store.resolve(request.notebook_path)
        waiting = self.runs.waiting_in(api_path)
        if waiting is not None:
            raise session_waiting(request.notebook_path, waiting)
        return api_path

    async def start(
        self,
        request: RunRequest,
        api_path: str,
        via: str,
        accepted: AcceptedRun,
        caller: Caller,
        observer: ExecutionObserver | None = None,
        control: CallControl | None = None,
        detach: bool = False,
    ) -> dict[str, Any]:
        """Run the cells of a request ``admit``-ted and accepted against its notebook.

        ``via`` says where the notebook was read (the file, or a room's live document).
        Returns as ``call`` does: at the run's end, or (``ask``) at its first prompt.
        """
        presence = await self._presence(api_path, via, accepted, caller)
        run = _Run(request, api_path, via, accepted, presence, caller)
        return await self._start_run(run, observer, control, detach)

    async def _presence(
        self, api_path: str, via: str, accepted: AcceptedRun, caller: Caller
    ) -> ExecutionObserver | None:
        """In a room, show the agent at each cell as it starts running (``presence.py``)."""
        if via == "file" or not caller.name or self.store.live is None:
            return None
        live = await self.store.live.find(api_path)
        if live is None:
            return None
        return _RunPresence(self.store.presence, live, api_path, caller, accepted)

    async def _run(
        self,
        run: _Run,
        observer: ExecutionObserver | None,
        control: CallControl,
        stdin: StdinPolicy,
        call_id: str,
    ) -> dict[str, Any]:
        request, accepted = run.request, run.accepted
        events = InPlaceEvents(
            self.activity,
            call_id,
            run.api_path,
            self.stream_interval,
            reads_stdin=stdin.spec.reads,
        )
        target = NotebookOutputs(
            self.store,
            request.notebook_path,
            run.api_path,
            events.outputs,
            via=run.via,
            total_cells=accepted.total_cells,
            revision=accepted.revision,
        )
        progress = events if observer is None else ObserverGroup(observer, events)
        if run.presence is not None:
            progress = ObserverGroup(progress, run.presence)
        refused: list[XcshError] = []
        result = await self.inplace.run(
            request,
            accepted.cells,
            target,
            api_path=run.api_path,
            kernel_name=request.kernel_name or accepted.kernel_name,
            observer=progress,
            control=control,
            call_id=call_id,
            stdin=stdin,
            before_cell=self._asker(run, progress, control, refused)
            if accepted.ask_before
            else None,
        )
        if request.stale and not accepted.cells:
            result["text"] = NOTHING_STALE
        if refused:
            result["refusal"] = refused[0].body()
        return result

    @staticmethod
    def _asker(
        run: _Run,
        observer: ExecutionObserver,
        control: CallControl,
        refused: list[XcshError],
    ) -> Callable[[NotebookCellRun], Awaitable[str | None]]:
        """Before a cell tagged ``ask-before-run``: the person's yes, else why the run stops."""
        caller, path = run.caller, run.request.notebook_path

        async def before(cell: NotebookCellRun) -> str | None:
            selected = cell.selected
            if selected is None or selected.index not in run.accepted.ask_before:
                return None
            if caller is None or caller.gate is None:
                return None
            what = f"cell {selected.index}" + (
                f" (id {selected.cell_id})" if selected.cell_id else ""
            )
            action = AgentAction(
                "notebook",
                "run",
                run.api_path,
                f"run {what} of {path}, tagged {ASK_BEFORE_RUN}",
                (selected.cell_id,) if selected.cell_id else (),
                {"code": selected.source},
                run.request.timeout,
                index=cell.index,
            )
            try:
                await caller.gate.check_cell(caller, action, observer, control)
            except XcshError as e:
                refused.append(e)
                why = e.message.removesuffix(" Nothing was changed.")
                return f"{why} The run stopped at {what}; the cells before it ran."
            return None

        return before

    async def _start_run(
        self,
        run: _Run,
        observer: ExecutionObserver | None,
        control: CallControl | None,
        detach: bool,
    ) -> dict[str, Any]:
        """Run in a task of its own; return at the end of the run or (``ask``) its first prompt."""
        return await self.runs.start(
            lambda relay, run_control, stdin, run_id: self._run(
                run, relay, run_control, stdin, run_id
            ),
            run.request.stdin,
            self.input_timeout,
            observer,
            control,
            detach=detach,
            reject_queued=lambda waiting: self.inplace.reject_queued(
                run.api_path, session_waiting(run.request.notebook_path, waiting)
            ),
            notebook=run.api_path,
        )


@dataclass(frozen=True)
class _Run:
    """A request accepted against its notebook: what the run will do."""

    request: RunRequest
    api_path: str
    via: str
    accepted: AcceptedRun
    #: Shows the agent in the notebook's room at the cell it runs (None without a room).
    presence: ExecutionObserver | None = None
    #: Who runs it: asked before each ``ask-before-run`` cell.
    caller: Caller | None = None


class _RunPresence(ExecutionObserver):
    """The agent's cursor goes to each cell of a run as it starts running."""

    def __init__(
        self,
        presence: AgentPresence,
        live: Any,
        api_path: str,
        caller: Caller,
        accepted: AcceptedRun,
    ) -> None:
        self.presence = presence
        self.live = live
        self.api_path = api_path
        self.agent = (caller.name, caller.agent)
        self.cells = accepted.cells

    def cell_status(self, index: int, status: str) -> None:
        """A cell started running: the agent is shown there."""
        if status == "running" and 0 <= index < len(self.cells):
            cell_id = self.cells[index].cell_id
            self.presence.show(self.live, self.api_path, *self.agent, cell_id)
