"""The notebook tool's one call path (SPEC §1, §5, §10), shared by REST, MCP and the lab."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from ..activity import MAX_EVENT_CELL, ActivityEvents, new_call_id
from ..errors import XcshError
from ..notebook.cells import parse_request
from ..notebook.preconditions import require_preconditions
from ..notebook.store import NotebookStore
from ..outputs.artifacts import ArtifactStore
from .caller import Caller

__all__ = ["NotebookTool"]

#: The authorizer resource of the notebook tool (as the server's contents API).
RESOURCE = "contents"

log = logging.getLogger(__name__)


class NotebookTool:
    """Read or change notebook cells; every finished call is reported on the event bus once.

    A change's event carries what the lab needs to revert it: the cell as it was before an edit
    or a delete, inline when small, else kept as an artifact the lab fetches (``artifacts``).
    """

    def __init__(
        self,
        store: NotebookStore,
        activity: ActivityEvents,
        require_preconditions: str = "never",
        artifacts: ArtifactStore | None = None,
    ) -> None:
        """``require_preconditions`` is ``XcshSettings.require_preconditions``."""
        self.store = store
        self.activity = activity
        self.require_preconditions = require_preconditions
        self.artifacts = artifacts

    async def call(self, body: dict[str, Any], caller: Caller) -> dict[str, Any]:
        """Validate ``body``, check the caller may, run it; return ``{callId, text, details}``.

        Reads need ``read`` on ``contents``, changes ``write``. Raises the domain errors of
        ``jupyter_xcsh.errors`` (a bad request, a missing notebook, a refusal, a stale read).
        """
        request = parse_request(body)
        await caller.require("write" if request.changes else "read", RESOURCE)
        require_preconditions(request, self.require_preconditions)
        call_id = new_call_id()
        try:
            if request.changes:
                result = await self.store.change(request)
            else:
                result = await self.store.read(request)
        except XcshError as e:
            self.activity.notebook_call(
                request.action, request.notebook_path, error=e.message, call_id=call_id
            )
            raise
        previous = result.pop("previousCell", None)
        self.activity.notebook_call(
            request.action,
            self.store.api_path(request),
            result,
            call_id=call_id,
            restored=request.cell is not None,
            **(await self._previous_cell(previous)),
        )
        return {"callId": call_id, **result}

    async def _previous_cell(self, cell: Any) -> dict[str, Any]:
        """The event fields holding the cell as it was: inline, or an artifact when too large."""
        if cell is None:
            return {}
        text = json.dumps(cell, ensure_ascii=False)
        if len(text) <= MAX_EVENT_CELL:
            return {"previous_cell": cell}
        if self.artifacts is None:
            return {}
        try:
            artifact_id = await asyncio.to_thread(self._write_artifact, text)
        except OSError as e:  # the change is saved; only its revert becomes unavailable
            log.warning("Could not keep a changed cell for the lab's revert: %s", e)
            return {}
        return {"previous_cell_artifact": artifact_id}

    def _write_artifact(self, text: str) -> str:
        assert self.artifacts is not None
        writer = self.artifacts.create("notebook")
        try:
            writer.write(text.encode("utf-8"))
        except BaseException:
            writer.abort()
            raise
        writer.close()
        return writer.id
