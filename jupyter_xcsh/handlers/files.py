"""``POST /api/xcsh/files``: the files tool."""

from __future__ import annotations

import json

from tornado import web

from jupyter_xcsh.handlers.base import XcshAPIHandler, tool_authorized
from jupyter_xcsh.services import XcshServices
from jupyter_xcsh.tools.files.tool import FilesTool


class FilesHandler(XcshAPIHandler):
    """List, read, write, create, rename, delete or search files of the contents root.

    Body: a JSON object (see ``rest-api.yml``). Answers 200 with ``{"text", "details"}``; 400
    for a malformed body or a bad field; 403 for a path outside the root, a hidden file to
    create or change, or a caller not allowed to write; 404 for a missing (or hidden) file;
    409 for a stale precondition or an existing file, with the file as it is now; 422 for a
    binary or too large file.
    """

    auth_resource = FilesTool.permission.resource

    @web.authenticated
    @tool_authorized(FilesTool)
    async def post(self) -> None:
        """Run one files tool request; changes also need ``write`` on ``contents``."""
        with self.domain_errors():
            result = await self.services.files.call(self.json_body(), self.caller)
        self.finish(json.dumps(result))


def routes(services: XcshServices) -> list[tuple[str, type, dict[str, XcshServices]]]:
    """Return the files tool's URL routes."""
    return [(FilesTool.route, FilesHandler, {"services": services})]
