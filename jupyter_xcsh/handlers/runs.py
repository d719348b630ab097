"""``/api/xcsh/runs/<runId>``: follow a python call waiting for input, and answer its prompt."""

from __future__ import annotations

import json

from jupyter_server.auth.decorator import authorized
from tornado import web

from ..services import XcshServices
from .base import XcshAPIHandler
from .python import PythonHandler

#: A run id is the call id of the call (32 hex digits).
RUN_ID = r"(?P<run_id>[0-9a-f]{32})"


class RunInputHandler(PythonHandler):
    """``POST /api/xcsh/runs/<runId>/input``: answer a waiting prompt (docs/contract.md §8.2).

    Body: ``{"value": "..."}``. Answers 200 with what the call returns next — its result, or,
    at its next prompt, the output so far with ``awaitingInput`` — streamed as the python tool's
    with ``Accept: application/x-ndjson``. 400 for a malformed body, 404 for an unknown run,
    409 when the run is not waiting for input, 403 for a caller without ``execute`` on
    ``kernels``. A client that disconnects only stops following: the call goes on.
    """

    @web.authenticated
    @authorized("execute")
    async def post(self, run_id: str) -> None:
        """Answer the run's prompt."""
        await self.call_tool(self.services.run_inputs.answering(run_id))


class RunHandler(XcshAPIHandler):
    """``GET /api/xcsh/runs/<runId>``: the call's result when it ends or waits for input.

    Answers 200 at once with the output so far and ``awaitingInput`` while the kernel waits
    for an answer (or with the result of a call that ended, kept a while); else when the call
    gets there. 404 for an unknown run, 403 for a caller without ``execute`` on ``kernels``.
    """

    auth_resource = "kernels"

    @web.authenticated
    @authorized("execute")
    async def get(self, run_id: str) -> None:
        """Follow the run to its next stop."""
        with self.domain_errors():
            result = await self.services.run_inputs.follow(run_id, self.caller)
        self.finish(json.dumps(result))


def routes(services: XcshServices) -> list[tuple[str, type, dict[str, XcshServices]]]:
    """Return the runs URL routes."""
    given = {"services": services}
    return [
        (rf"/api/xcsh/runs/{RUN_ID}", RunHandler, given),
        (rf"/api/xcsh/runs/{RUN_ID}/input", RunInputHandler, given),
    ]
