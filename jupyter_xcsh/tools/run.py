"""The run-in-place tool's one call path (SPEC §6), shared by REST, MCP and the lab."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..activity import ActivityEvents
from ..execution import CallControl, ExecutionObserver
from ..execution.inplace import RunService
from ..execution.observer import ObserverGroup
from ..execution.run_request import parse_run_request, select_cells
from ..notebook.document_outputs import find_live_document, shared_cells
from ..notebook.file_outputs import FileOutputs
from ..notebook.outputs_target import NotebookOutputs
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
        server_settings: Mapping[str, Any] | None = None,
        stream_interval: float = 0.25,
    ) -> None:
        self.runs = runs
        self.store = store
        self.activity = activity
        self.calls = calls
        # The server's settings, read at each call: a collaboration extension publishes its
        # rooms there, and may load after this one.
        self.server_settings = server_settings or {}
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
        api_path, snapshot = await self.store.load(request.notebook_path)
        document = snapshot.document
        kernel_name = request.kernel_name or _kernelspec_name(document.data.get("metadata"))
        # With a collaboration room open, the cells are the ones people see, unsaved included.
        live = await find_live_document(self.server_settings, api_path)
        cells = select_cells(request, shared_cells(live) if live is not None else document.cells)
        control = control or CallControl()
        with self.calls.running(control) as call_id:
            events = RunCallEvents(self.activity, call_id, api_path, self.stream_interval)
            file = FileOutputs(
                self.store, request.notebook_path, api_path, snapshot, events.outputs
            )
            target = NotebookOutputs(
                file, lambda: find_live_document(self.server_settings, api_path), live
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
