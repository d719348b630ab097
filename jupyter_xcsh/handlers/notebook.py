"""``POST /api/xcsh/notebook``: the notebook tool."""

from __future__ import annotations

import json
from typing import Any

from jupyter_core.utils import ensure_async
from jupyter_server.auth.decorator import authorized
from tornado import web

from ..activity import ActivityEvents
from ..errors import XcshError
from ..notebook.cells import parse_request
from ..notebook.store import NotebookStore
from .base import XcshAPIHandler


class NotebookHandler(XcshAPIHandler):
    """Edit, insert, delete, move or read notebook cells (SPEC §1).

    Body: a JSON object (see ``rest-api.yml``). Answers 200 with ``{"text", "details"}``; 400 for
    a malformed body, a bad field or an index out of range; 403 for a path outside the root or a
    caller not allowed to write; 404 for a missing (or hidden) notebook or unknown cell id; 422
    for a file that is not notebook JSON.
    """

    auth_resource = "contents"

    @property
    def store(self) -> NotebookStore:
        """The notebook store built by the extension app."""
        return self.services["notebook_store"]

    @property
    def activity(self) -> ActivityEvents:
        """Where finished calls are reported for the lab."""
        return self.services["activity"]

    @web.authenticated
    @authorized("read")
    async def post(self) -> None:
        """Run one notebook tool request; changes also need ``write`` on ``contents``."""
        with self.domain_errors():
            request = parse_request(self.json_body())
            if request.changes:
                await self._require("write")
            try:
                if request.changes:
                    result = await self.store.change(request)
                else:
                    result = await self.store.read(request)
            except XcshError as e:
                self.activity.notebook_call(request.action, request.notebook_path, error=e.message)
                raise
        self.activity.notebook_call(request.action, self.store.api_path(request), result)
        self.finish(json.dumps(result))

    async def _require(self, action: str) -> None:
        allowed = await ensure_async(
            self.authorizer.is_authorized(self, self.current_user, action, self.auth_resource)
        )
        if not allowed:
            raise web.HTTPError(
                403, f"User is not authorized to {action} on resource: {self.auth_resource}."
            )


def routes(services: dict[str, Any]) -> list[tuple[str, type, dict[str, Any]]]:
    """Return the notebook tool's URL routes."""
    return [(r"/api/xcsh/notebook", NotebookHandler, services)]
