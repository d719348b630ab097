"""The run-in-place tool's one call path (SPEC §6), shared by REST, MCP and the lab."""

from __future__ import annotations

from typing import Any

from ..activity import ActivityEvents
from ..execution import CallControl, ExecutionObserver
from ..execution.inplace import RunService
from ..execution.observer import ObserverGroup
from ..execution.run_request import parse_run_request, select_cells
from ..notebook.file_outputs import FileOutputs
from ..notebook.store import NotebookStore
from ..run_events import RunCallEvents
from .caller import Caller
from .python import CallRegistry

__all__ = ["RunTool"]

#: What running cells in place needs: changing the notebook and executing code in a kernel.
PERMISSIONS = (("write", "contents"), ("execute", "kernels"))


def _kernelspec_name(metadata: Any) -> str | None:
    spec = metadata.get("kernelspec") if isinstance(metadata, dict) else None
    name = spec.get("name") if isinstance(spec, dict) else None
    return name if isinstance(name, str) and name else None


class RunTool:
    """Run code cells of a notebook in its own kernel and write their outputs back into it."""

    def __init__(
        self,
        runs: RunService,
        store: NotebookStore,
        activity: ActivityEvents,
        calls: CallRegistry,
        *,
        stream_interval: float = 0.25,
    ) -> None:
        self.runs = runs
        self.store = store
        self.activity = activity
        self.calls = calls
        self.stream_interval = stream_interval

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
        notebook or cell, or a refused caller raise domain errors before anything runs.
        """
        request = parse_run_request(body)
        for action, resource in PERMISSIONS:
            await caller.require(action, resource)
        api_path, document = await self.store.load(request.notebook_path)
        cells = select_cells(request, document.cells)
        kernel_name = request.kernel_name or _kernelspec_name(document.data.get("metadata"))
        control = control or CallControl()
        with self.calls.running(control) as call_id:
            events = RunCallEvents(self.activity, call_id, api_path, self.stream_interval)
            target = FileOutputs(
                self.store, request.notebook_path, api_path, len(document.cells), events.outputs
            )
            progress = events if observer is None else ObserverGroup(observer, events)
            return await self.runs.run(
                request,
                cells,
                target,
                api_path=api_path,
                kernel_name=kernel_name,
                observer=progress,
                control=control,
                call_id=call_id,
            )
