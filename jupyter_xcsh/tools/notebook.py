"""The notebook tool's one call path (docs/contract.md §2-§4), shared by REST, MCP and the lab."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from ..activity import (
    MAX_EVENT_BATCH,
    MAX_EVENT_CELL,
    ActivityEvents,
    change_entry,
    event_source,
    new_call_id,
)
from ..errors import XcshError
from ..kernel.logs import KernelLogs
from ..notebook.batch import is_batch, parse_batch, require_batch_preconditions
from ..notebook.cells import parse_request
from ..notebook.find import NotebookFinder
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
    A batch (``changes``) is one call with one event listing its changes.
    """

    def __init__(
        self,
        store: NotebookStore,
        activity: ActivityEvents,
        require_preconditions: str = "never",
        artifacts: ArtifactStore | None = None,
        finder: NotebookFinder | None = None,
        kernel_logs: KernelLogs | None = None,
    ) -> None:
        """``require_preconditions`` is ``XcshSettings.require_preconditions``.

        ``kernel_logs`` tell a read what the notebook's kernel ran (for its stale cells).
        """
        self.store = store
        self.activity = activity
        self.require_preconditions = require_preconditions
        self.artifacts = artifacts
        self.finder = finder or NotebookFinder(store, store.limits)
        self.kernel_logs = kernel_logs

    async def call(self, body: dict[str, Any], caller: Caller) -> dict[str, Any]:
        """Validate ``body``, check the caller may, run it; return ``{callId, text, details}``.

        Reads and finds need ``read`` on ``contents``, changes and batches ``write``. Raises the
        domain errors of ``jupyter_xcsh.errors`` (a bad request, a missing notebook, a refusal,
        a stale read).
        """
        if is_batch(body):
            return await self._call_batch(body, caller)
        request = parse_request(body)
        await caller.require("write" if request.changes else "read", RESOURCE)
        require_preconditions(request, self.require_preconditions)
        call_id = new_call_id()
        try:
            if request.changes:
                result = await self.store.change(request)
            elif request.action == "find":
                result = await self.finder.find(request)
            else:
                code_of = None
                if self.kernel_logs is not None:
                    code_of = await self.kernel_logs.code_of(self.store.api_path(request))
                result = await self.store.read(request, code_of)
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
            **(await self._previous_cell(previous))[0],
        )
        return {"callId": call_id, **result}

    async def _call_batch(self, body: dict[str, Any], caller: Caller) -> dict[str, Any]:
        """Apply a batch (``changes``) as one atomic change; one event lists its changes."""
        batch = parse_batch(body)
        await caller.require("write", RESOURCE)
        require_batch_preconditions(batch, self.require_preconditions)
        call_id = new_call_id()
        try:
            result = await self.store.change_batch(batch)
        except XcshError as e:
            self.activity.notebook_call(
                "batch", batch.notebook_path, error=e.message, call_id=call_id
            )
            raise
        previous = result.pop("previousCells")
        changes = []
        budget = MAX_EVENT_BATCH  # one event stays bounded however many changes it lists
        for request, details, cell in zip(
            batch.changes, result["details"]["changes"], previous, strict=True
        ):
            source = event_source(details.get("cellSource"))
            if source is not None and len(source) > budget:
                source = None  # the lab then relies on the server's hash check alone
            budget -= len(source or "")
            fields, size = await self._previous_cell(cell, min(MAX_EVENT_CELL, budget))
            budget -= size
            entry = change_entry(
                details, source=source, restored=request.cell is not None, **fields
            )
            changes.append(entry)
        self.activity.notebook_call(
            "batch", self.store.api_path(batch), result, call_id=call_id, changes=changes
        )
        return {"callId": call_id, **result}

    async def _previous_cell(
        self, cell: Any, limit: int = MAX_EVENT_CELL
    ) -> tuple[dict[str, Any], int]:
        """The event fields holding the cell as it was, and the characters they carry inline.

        Inline up to ``limit`` characters of JSON, else an artifact (when there is a store).
        """
        if cell is None:
            return {}, 0
        text = json.dumps(cell, ensure_ascii=False)
        if len(text) <= limit:
            return {"previous_cell": cell}, len(text)
        if self.artifacts is None:
            return {}, 0
        try:
            artifact_id = await asyncio.to_thread(self._write_artifact, text)
        except OSError as e:  # the change is saved; only its revert becomes unavailable
            log.warning("Could not keep a changed cell for the lab's revert: %s", e)
            return {}, 0
        return {"previous_cell_artifact": artifact_id}, 0

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
