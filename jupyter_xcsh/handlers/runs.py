"""``/api/xcsh/runs/<runId>``: follow a python call waiting for input, and answer its prompt."""

from __future__ import annotations

import json
from typing import Any

from tornado import web

from jupyter_xcsh.calls.control import CallControl
from jupyter_xcsh.errors import XcshError, status_for
from jupyter_xcsh.handlers.base import tool_authorized
from jupyter_xcsh.handlers.python import NDJSON, PythonHandler, StreamWriter
from jupyter_xcsh.runs.registry import BackgroundRun, RunInputTool
from jupyter_xcsh.services import XcshServices

#: A run id is the call id of the call (32 hex digits).
RUN_ID = r"(?P<run_id>[0-9a-f]{32})"


class RunInputHandler(PythonHandler):
    """``POST /api/xcsh/runs/<runId>/input``: answer a prompt (docs/developers/contract.md §8.2).

    Body: ``{"value": "..."}``. Answers 200 with what the call returns next — its result, or,
    at its next prompt, the output so far with ``awaitingInput`` — streamed as the python tool's
    with ``Accept: application/x-ndjson``. 400 for a malformed body, 404 for an unknown run,
    409 when the run is not waiting for input, 403 for a caller without ``execute`` on
    ``kernels``. A client that disconnects only stops following: the call goes on.
    """

    @web.authenticated
    @tool_authorized(RunInputTool)
    async def post(self, run_id: str) -> None:
        """Answer the run's prompt."""
        await self.call_tool(self.services.run_inputs.answering(run_id))


class RunFollowHandler(PythonHandler):
    """``GET /api/xcsh/runs/<runId>``: the call's result when it ends or waits for input.

    Answers 200 at once with the output so far and ``awaitingInput`` while the kernel waits
    for an answer (or with the result of a call that ended, kept a while); else when the call
    gets there. With ``?after=<n>``: at once, the run's state and its events after the
    ``n``-th (``RunProgress``: a client that lost its stream picks up where it left off);
    with ``Accept: application/x-ndjson`` too, those events as lines, then the run's live
    ones up to its next stop, and its result last (as the python tool's stream). 400 for a
    cursor that is not an event number or is past the end. 404 for an unknown run, 403 for a
    caller without ``execute`` on ``kernels``. Following never interrupts the run.
    """

    auth_resource = RunInputTool.permission.resource
    # Only GET: the python tool's POST (this class streams as its handler does) is not here.
    post = web.RequestHandler.post

    @web.authenticated
    @tool_authorized(RunInputTool)
    async def get(self, run_id: str) -> None:
        """Follow the run to its next stop."""
        values = self.request.query_arguments.get("after")
        with self.domain_errors():
            if values:  # read as sent: tornado's get_query_argument strips white space
                after = self.decode_argument(values[-1], name="after")
                result = await self.services.run_inputs.progress(run_id, after, self.caller)
                if NDJSON in self.request.headers.get("Accept", ""):
                    # Nothing awaited from here to the follow: no event falls in between.
                    run = self.services.runs.get(run_id)
                    await self._stream(run, result["events"])
                    return
            else:
                result = await self.services.run_inputs.follow(run_id, self.caller)
        self.finish(json.dumps(result))

    async def _stream(self, run: BackgroundRun, events: list[dict[str, Any]]) -> None:
        """The events after the cursor, then the live ones to the next stop, then the result."""
        self.set_header("Content-Type", NDJSON)
        self.set_header("Cache-Control", "no-cache")
        self.control = CallControl()
        self.writer = writer = StreamWriter(self, max_tail=self.services.settings.max_output_bytes)
        for event in events:
            writer.send(event)
        try:
            result = await run.next_stop(writer, self.control, detach=True)
            line: dict[str, Any] = {"type": "result", "result": result}
        except XcshError as e:
            line = {"type": "error", "status": status_for(e), **e.body()}
        writer.send(line)
        if not self.gone:
            self.finish()


def routes(services: XcshServices) -> list[tuple[str, type, dict[str, XcshServices]]]:
    """Return the runs URL routes."""
    given = {"services": services}
    return [
        (rf"/api/xcsh/runs/{RUN_ID}", RunFollowHandler, given),
        (rf"/api/xcsh/runs/{RUN_ID}/input", RunInputHandler, given),
    ]
