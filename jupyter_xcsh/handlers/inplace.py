"""``POST /api/xcsh/notebook/run``: run notebook cells in place, as JSON or an NDJSON stream."""

from __future__ import annotations

from tornado import web

from jupyter_xcsh.handlers.base import tool_authorized
from jupyter_xcsh.handlers.python import PythonHandler
from jupyter_xcsh.services import XcshServices
from jupyter_xcsh.tools.inplace.tool import InPlaceTool


class InPlaceRunHandler(PythonHandler):
    """Run a notebook's cells in its kernel, outputs written back (docs/developers/contract.md §6).

    Body: ``{"notebook_path", one of "cell_id" | "cell_index" | "cell_ids" | "cell_index" +
    "end_index" | "all": true, "timeout"?, "stop_on_error"?, "kernel_name"?, "stdin"?,
    "expected_revision"?, "expected_source_hash"?}``. Answers 200 with the result (the python
    tool's, with ``kernel`` and ``notebook``), errors in the code, timeouts and a busy or dying
    kernel included (``isError``); streamed as the python tool's with ``Accept:
    application/x-ndjson``; with ``stdin: "ask"`` at the first prompt (``awaitingInput``).
    400 for a malformed body, an index out of range or a single cell that is not code; 403
    for a caller without ``write`` on ``contents`` and ``execute`` on ``kernels``, or a path
    outside the root; 404 for a missing notebook or cell id; 409 for a notebook or cell no
    longer as the caller read it, or a notebook whose run waits for input; 422 for a file
    that is not a notebook. A client that disconnects interrupts its own running cell.
    """

    auth_resource = InPlaceTool.permission.resource

    @web.authenticated
    @tool_authorized(InPlaceTool)
    async def post(self) -> None:
        """Run one call (the tool also requires ``execute`` on ``kernels``)."""
        await self.call_tool(self.services.run)


def routes(services: XcshServices) -> list[tuple[str, type, dict[str, XcshServices]]]:
    """Return the run tool's URL routes."""
    return [(InPlaceTool.route, InPlaceRunHandler, {"services": services})]
