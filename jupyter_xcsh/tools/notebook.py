"""The notebook tool's one call path (docs/contract.md §2-§4), shared by REST, MCP and the lab."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
from typing import Any

from ..errors import InvalidRequestError, XcshError
from ..events.activity import (
    CALL_ID,
    MAX_EVENT_BATCH,
    MAX_EVENT_CELL,
    ActivityEvents,
    change_entry,
    event_source,
    new_call_id,
)
from ..fields import known_fields
from ..kernel_tool.logs import KernelLogs
from ..notebook.batch import parse_batch, require_batch_preconditions
from ..notebook.cells import parse_request
from ..notebook.find import NotebookFinder
from ..notebook.history import DEFAULT_MAX_CHARS, WHO, NotebookHistory, describe_changes
from ..notebook.model import Snapshot
from ..notebook.request import is_batch, require_preconditions
from ..notebook.store import NotebookStore
from ..outputs.artifacts import ArtifactStore
from ..paths import to_api_path
from .caller import Caller

__all__ = ["NotebookTool"]

#: A ``revision`` as answers carry it.
HASH = re.compile(r"[0-9a-f]{16}")

#: The fields of an undo request and their JSON types.
UNDO_FIELDS: dict[str, type] = {"path": str, "call_id": str, "cell_id": str}

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
        self.history = NotebookHistory()
        self.kernel_logs = kernel_logs

    async def call(self, body: dict[str, Any], caller: Caller) -> dict[str, Any]:
        """Validate ``body``, check the caller may, run it; return ``{callId, text, details}``.

        Reads and finds need ``read`` on ``contents``, changes and batches ``write``. Raises the
        domain errors of ``jupyter_xcsh.errors`` (a bad request, a missing notebook, a refusal,
        a stale read).
        """
        if is_batch(body):
            return await self._call_batch(body, caller)
        if body.get("action") == "changes":
            return await self._call_changes(body, caller)
        request = parse_request(body)
        await caller.require("write" if request.changes else "read", RESOURCE)
        require_preconditions(request, self.require_preconditions)
        call_id = new_call_id()
        try:
            if request.changes:
                await self._before_change(request.notebook_path)
                result = await self.store.change(request, call_id, _agent(caller))
                self._changed(request.notebook_path, result, caller)
            elif request.action == "find":
                result = await self.finder.find(request)
            else:
                code_of = None
                if self.kernel_logs is not None:
                    code_of = await self.kernel_logs.code_of(self.store.api_path(request))
                result, seen = await self.store.read_with_keys(request, code_of)
                self._note(self.store.api_path(request), seen)
            if request.action == "find":
                with contextlib.suppress(XcshError):  # the answer stands; the history waits
                    api_path, _ = await self.store.resolve(request.notebook_path)
                    if self.history.knows(api_path):  # else not worth a second load
                        await self._look(request.notebook_path)
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
            await self._before_change(batch.notebook_path)
            result = await self.store.change_batch(batch, call_id, _agent(caller))
            self._changed(batch.notebook_path, result, caller)
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

    async def undo(self, body: dict[str, Any], caller: Caller) -> dict[str, Any]:
        """Undo one call's change to a notebook's open room, or its change to one cell.

        ``body``: ``{path, call_id, cell_id}`` (``cell_id`` null or absent: the whole call).
        Needs ``write`` on ``contents``. What others typed since stays (``notebook/undo.py``).
        """
        given = known_fields(body, UNDO_FIELDS, required=("path", "call_id"))
        path, call_id, cell_id = given["path"], given["call_id"], given.get("cell_id")
        if not CALL_ID.fullmatch(call_id):
            raise InvalidRequestError(
                "call_id must be 32 lowercase hex digits (a notebook event's callId), "
                f"got {call_id!r}"
            )
        if not path:
            raise InvalidRequestError("path is required")
        await caller.require("write", RESOURCE)
        return await self.store.undo(path, call_id, cell_id)

    async def _look(self, path: str, agent: str | None = None) -> tuple[str, Any]:
        """Note the notebook as it is now in its history; its API path and snapshot.

        ``agent``: the caller whose change made it so; else a change found is a person's (in
        the room, or a save of the file).
        """
        api_path, _ = await self.store.resolve(path)
        snapshot = await self.store.snapshot(path)
        self._note(api_path, snapshot, agent)
        return api_path, snapshot

    def _note(self, api_path: str, snapshot: Snapshot, agent: str | None = None) -> None:
        """Record ``snapshot`` in the notebook's history (see ``_look``)."""
        found = "file" if snapshot.via == "file" else "room"  # any live document's room
        by = found if agent is None else "agent"
        self.history.record(api_path, snapshot.keys, by, agent or "")

    async def _before_change(self, path: str) -> None:
        """Before an agent's change: note what others changed since the last look, if kept."""
        with contextlib.suppress(XcshError):  # the change itself says what is wrong
            api_path, _ = await self.store.resolve(path)
            if self.history.knows(api_path):
                await self._look(path)

    def _changed(self, path: str, result: dict[str, Any], caller: Caller) -> None:
        """Note an agent's change (the state the store left: ``cellKeys``, taken out)."""
        keys = result.pop("cellKeys")
        api_path = to_api_path(path, self.store.contents_manager.root_dir)
        self.history.record(api_path, keys, "agent", caller.agent)

    async def _call_changes(self, body: dict[str, Any], caller: Caller) -> dict[str, Any]:
        """``changes``: the cells changed since ``since_revision``, and who changed them."""
        unknown = sorted(
            name
            for name, value in body.items()
            if value is not None
            and name not in ("action", "notebook_path", "since_revision", "max_chars")
        )
        if unknown:
            raise InvalidRequestError(f"Field {unknown[0]} is not accepted by the changes action")
        path, since = body.get("notebook_path"), body.get("since_revision")
        if not isinstance(path, str) or not path:
            raise InvalidRequestError("notebook_path is required")
        if not isinstance(since, str) or not HASH.fullmatch(since):
            raise InvalidRequestError(
                "since_revision must be 16 lowercase hex digits (the revision of an earlier "
                f"answer), got {since!r}"
            )
        max_chars = body.get("max_chars")
        if max_chars is None:
            max_chars = DEFAULT_MAX_CHARS
        elif isinstance(max_chars, float) and max_chars.is_integer():
            max_chars = int(max_chars)
        if isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < 1:
            raise InvalidRequestError(f"max_chars must be a positive integer, got {max_chars!r}")
        await caller.require("read", RESOURCE)
        api_path, snapshot = await self._look(path)
        pairs = self.history.since(api_path, since)
        changes, truncated = describe_changes(pairs, caller.agent, max_chars)
        revision = pairs[-1][1].revision if pairs else since
        details = {
            "action": "changes",
            "sinceRevision": since,
            "revision": revision,
            "via": snapshot.via,
            "totalCells": len(snapshot.keys),
            "changes": changes,
            "truncated": truncated,
        }
        return {"callId": new_call_id(), "text": _changes_text(details), "details": details}

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


def _agent(caller: Caller) -> tuple[str, str] | None:
    """The caller's name and key, to show it in a room; None for a caller not an agent."""
    return (caller.name, caller.agent) if caller.name else None


def _changes_text(details: dict[str, Any]) -> str:
    """The ``changes`` answer as the agent reads it."""
    since, now, changes = details["sinceRevision"], details["revision"], details["changes"]
    if not changes:
        return f"No changes since revision {since}."
    lines = [f"{len(changes)} change(s) since revision {since} (now {now}), oldest first:"]
    for change in changes:
        cell = f"cell {change['cellId']}" if change["cellId"] else "a cell"
        where = (
            f"from index {change['fromIndex']} to {change['index']}"
            if change["change"] == "moved"
            else f"at index {change['index']}"
        )
        lines.append(
            f"- {cell} ({change['cellType']}) {change['change']} {where} by {WHO[change['by']]}"
        )
        if "source" in change:
            more = " [...cut]" if change.get("sourceTruncated") else ""
            lines.extend("    " + line for line in (change["source"] + more).split("\n"))
    if details["truncated"]:
        lines.append("[The list or a source was cut: read the notebook for the rest.]")
    return "\n".join(lines)
