"""The notebook tool's one call path (SPEC §1, §5, §10), shared by REST, MCP and the lab."""

from __future__ import annotations

from typing import Any

from ..activity import ActivityEvents
from ..errors import XcshError
from ..notebook.cells import parse_request
from ..notebook.preconditions import require_preconditions
from ..notebook.store import NotebookStore
from .caller import Caller

__all__ = ["NotebookTool"]

#: The authorizer resource of the notebook tool (as the server's contents API).
RESOURCE = "contents"


class NotebookTool:
    """Read or change notebook cells; every finished call is reported on the event bus once."""

    def __init__(
        self, store: NotebookStore, activity: ActivityEvents, require_preconditions: str = "never"
    ) -> None:
        """``require_preconditions`` is ``XcshSettings.require_preconditions``."""
        self.store = store
        self.activity = activity
        self.require_preconditions = require_preconditions

    async def call(self, body: dict[str, Any], caller: Caller) -> dict[str, Any]:
        """Validate ``body``, check the caller may do it, run it and return ``{text, details}``.

        Reads need ``read`` on ``contents``, changes ``write``. Raises the domain errors of
        ``jupyter_xcsh.errors`` (a bad request, a missing notebook, a refusal, a stale read).
        """
        request = parse_request(body)
        await caller.require("write" if request.changes else "read", RESOURCE)
        require_preconditions(request, self.require_preconditions)
        try:
            if request.changes:
                result = await self.store.change(request)
            else:
                result = await self.store.read(request)
        except XcshError as e:
            self.activity.notebook_call(request.action, request.notebook_path, error=e.message)
            raise
        self.activity.notebook_call(request.action, self.store.api_path(request), result)
        return result
