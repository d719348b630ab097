"""The python tool's one call path (SPEC §2), shared by REST, MCP and the lab."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..activity import ActivityEvents, PythonCallEvents, new_call_id
from ..errors import NotFoundError
from ..execution import CallControl, ExecutionObserver, ExecutionService, parse_python_request
from ..execution.observer import ObserverGroup
from ..settings import XcshSettings
from .caller import Caller

__all__ = ["CallRegistry", "PythonTool"]

#: The authorizer resource and action of running code (as the server's kernels API).
RESOURCE, ACTION = "kernels", "execute"


class CallRegistry:
    """The calls running now, by ``callId``, so one of them can be interrupted on its own."""

    def __init__(self) -> None:
        self._calls: dict[str, CallControl] = {}

    @contextmanager
    def running(self, control: CallControl) -> Iterator[str]:
        """Register ``control`` under a fresh call id for the duration of the block."""
        call_id = new_call_id()
        self._calls[call_id] = control
        try:
            yield call_id
        finally:
            del self._calls[call_id]

    def interrupt(self, call_id: str) -> None:
        """Cancel the call ``call_id``; ``NotFoundError`` when no such call is running."""
        control = self._calls.get(call_id)
        if control is None:
            raise NotFoundError(f"No running call: {call_id}")
        control.cancel()


class PythonTool:
    """Run cells of code on the server's kernels; progress goes to the lab and the observer."""

    def __init__(
        self,
        execution: ExecutionService,
        activity: ActivityEvents,
        settings: XcshSettings,
        calls: CallRegistry,
        *,
        contents_manager: Any,
    ) -> None:
        self.execution = execution
        self.activity = activity
        self.settings = settings
        self.calls = calls
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
        a bad request or a refused caller raises a domain error before anything runs.
        ``control`` lets the transport cancel the call (a client gone away).
        """
        request = parse_python_request(
            body,
            root_dir=self.execution.root_dir,
            default_mode=self.settings.kernel_mode,
            allow_hidden=self.contents_manager.allow_hidden,
        )
        await caller.require(ACTION, RESOURCE)
        control = control or CallControl()
        with self.calls.running(control) as call_id:
            events = PythonCallEvents(self.activity, call_id, self.execution.stream_interval)
            progress = events if observer is None else ObserverGroup(observer, events)
            return await self.execution.run(request, progress, control, call_id=call_id)
