"""``POST /api/xcsh/notebook``: the notebook tool."""

from __future__ import annotations

import json
from typing import Any

from tornado import web

from jupyter_xcsh.handlers.base import XcshAPIHandler, permission_authorized, tool_authorized
from jupyter_xcsh.handlers.python import PythonHandler
from jupyter_xcsh.services import XcshServices
from jupyter_xcsh.tools.notebook.tool import NotebookTool


class NotebookHandler(PythonHandler):
    """Edit, insert, delete, move, read or create notebook cells (docs/developers/contract.md §2).

    Body: a JSON object (see ``rest-api.yml``). Answers 200 with ``{"text", "details"}``; 400 for
    a malformed body, a bad field or an index out of range; 403 for a path outside the root or a
    caller not allowed to write; 404 for a missing (or hidden) notebook or unknown cell id; 409
    for a stale read (``expected_source_hash``, ``expected_revision``, ``old_content``), with
    the cell as it is now, or a notebook that ``create`` finds; 422 for a file that is not
    notebook JSON. An insert or edit with ``run: true`` answers as a run in place (§6), as a
    stream with ``Accept: application/x-ndjson``; a client that disconnects interrupts it.
    """

    auth_resource = NotebookTool.permission.resource

    @web.authenticated
    @tool_authorized(NotebookTool)
    async def post(self) -> None:
        """Run one notebook tool request; changes also need ``write`` on ``contents``."""
        await self.call_tool(self.services.notebook)

    def streams(self, body: Any) -> bool:
        """Only a change that runs its cell streams (``run: true``)."""
        return isinstance(body, dict) and body.get("run") is True


class NotebookUndoHandler(XcshAPIHandler):
    """Undo one agent call's change in a collaboration room (docs/developers/contract.md §4.3).

    Body ``{"path", "call_id", "cell_id"}``. Answers 200 with the cells undone; 400 for a bad
    body; 404 (reason ``not-held``) when no open room holds the call; 409 when already undone.
    """

    auth_resource = NotebookTool.UNDO.resource

    @web.authenticated
    @permission_authorized(NotebookTool.UNDO)
    async def post(self) -> None:
        """Undo the call (or its change to one cell), keeping what others typed since."""
        with self.domain_errors():
            result = await self.services.notebook.undo(self.json_body(), self.caller)
        self.finish(json.dumps(result))


def routes(services: XcshServices) -> list[tuple[str, type, dict[str, XcshServices]]]:
    """Return the notebook tool's URL routes."""
    given = {"services": services}
    return [
        (NotebookTool.route, NotebookHandler, given),
        (r"/api/xcsh/notebook/undo", NotebookUndoHandler, given),
    ]
