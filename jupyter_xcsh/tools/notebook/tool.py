"""The notebook tool's one call path (docs/developers/contract.md §2-§4): REST, MCP and the lab.

The ``changes`` action answers from the tool's own history of the notebooks (``history.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import re
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import nbformat

from jupyter_xcsh.artifacts.store import ArtifactStore
from jupyter_xcsh.calls.caller import Caller
from jupyter_xcsh.calls.control import CallControl
from jupyter_xcsh.calls.observer import ExecutionObserver
from jupyter_xcsh.errors import InvalidRequestError, XcshError
from jupyter_xcsh.events.activity import (
    CALL_ID,
    MAX_EVENT_BATCH,
    MAX_EVENT_CELL,
    ActivityEvents,
    change_entry,
    event_source,
    new_call_id,
)
from jupyter_xcsh.execution.inplace.logs import KernelLogs
from jupyter_xcsh.execution.inplace.request import (
    AcceptedRun,
    RunRequest,
    accept_run,
    parse_run_request,
)
from jupyter_xcsh.execution.kernel.launcher import KernelLauncher
from jupyter_xcsh.fields import check_type, known_fields
from jupyter_xcsh.memory import hand_over, release_in_slices
from jupyter_xcsh.notebook.edit.batch import parse_batch, require_batch_preconditions
from jupyter_xcsh.notebook.edit.cells import ChangeResult, NotebookRequest, parse_request
from jupyter_xcsh.notebook.edit.request import is_batch, require_preconditions
from jupyter_xcsh.notebook.model import CellDocument, Snapshot, notebook_revision
from jupyter_xcsh.notebook.reader import IMAGE_MARK, ReadImage
from jupyter_xcsh.notebook.storage.celltext import PART_CHARS, CellText, text_chunks, text_length
from jupyter_xcsh.notebook.storage.store import NotebookStore
from jupyter_xcsh.outputs.images import CapturedImage, ImageCapture, ImageResult, budget_images
from jupyter_xcsh.paths import to_api_path
from jupyter_xcsh.policy.gate import AgentAction
from jupyter_xcsh.search.find import NotebookFinder
from jupyter_xcsh.tools.base import Permission
from jupyter_xcsh.tools.classify import batch_action, notebook_action
from jupyter_xcsh.tools.inplace.tool import InPlaceTool
from jupyter_xcsh.tools.notebook.history import (
    DEFAULT_MAX_CHARS,
    NotebookHistory,
    changes_text,
    describe_changes,
)

__all__ = ["NotebookTool"]

#: A ``revision`` as answers carry it.
HASH = re.compile(r"[0-9a-f]{16}")

#: The fields of an undo request and their JSON types.
UNDO_FIELDS: dict[str, type] = {"path": str, "call_id": str, "cell_id": str}

#: The actions whose change may run its cell (``run: true``), and the fields of that run.
RUN_ACTIONS = ("edit", "insert")
RUN_FIELDS = ("timeout", "stdin", "detach")

#: A placeholder of an image in a read's text (``notebook/reader.py``), and its halves left
#: over where a clipped output summary cut one.
_IMAGE_PLACEHOLDER = re.compile(f"{IMAGE_MARK[0]}(\\d+){IMAGE_MARK[1]}")
_IMAGE_MARK_LEFT = re.compile(f"{IMAGE_MARK[0]}\\d*|{IMAGE_MARK[1]}")

log = logging.getLogger(__name__)


class NotebookTool:
    """Read or change notebook cells; every finished call is reported on the event bus once.

    A change's event carries what the lab needs to revert it: the cell as it was before an edit
    or a delete, inline when small, else kept as an artifact the lab fetches (``artifacts``).
    A batch (``changes``) is one call with one event listing its changes.
    """

    name: ClassVar[str] = "notebook"
    route: ClassVar[str] = "/api/xcsh/notebook"
    #: Every call reads the notebook; a change also needs ``write`` on the same resource.
    permission: ClassVar[Permission] = Permission("read", "contents")
    #: Undoing a call's change in a room (``undo``, ``POST /api/xcsh/notebook/undo``).
    UNDO: ClassVar[Permission] = Permission("write", "contents")

    def __init__(
        self,
        store: NotebookStore,
        activity: ActivityEvents,
        require_preconditions: str = "never",
        artifacts: ArtifactStore | None = None,
        finder: NotebookFinder | None = None,
        kernel_logs: KernelLogs | None = None,
        *,
        run: InPlaceTool | None = None,
        kernels: KernelLauncher | None = None,
    ) -> None:
        """``require_preconditions`` is ``XcshSettings.require_preconditions``.

        ``kernel_logs`` tell a read what the notebook's kernel ran (for its stale cells).
        ``run`` runs a changed cell (``run: true``); ``kernels`` names a new notebook's kernel
        spec (``create``); without them, those are refused.
        """
        self.store = store
        self.activity = activity
        self.require_preconditions = require_preconditions
        self.artifacts = artifacts
        self.finder = finder or NotebookFinder(store, store.limits)
        self.history = NotebookHistory()
        self.kernel_logs = kernel_logs
        self.run = run
        self.kernels = kernels

    @property
    def follow_ups(self) -> Any:
        """What answers and follows a run a change started (``run: true``): the run tool's."""
        assert self.run is not None
        return self.run.follow_ups

    async def call(
        self,
        body: dict[str, Any],
        caller: Caller,
        observer: ExecutionObserver | None = None,
        control: CallControl | None = None,
    ) -> dict[str, Any]:
        """Validate ``body``, check the caller may, run it; return ``{callId, text, details}``.

        Reads and finds need ``read`` on ``contents``, changes, batches and ``create``
        ``write``. An insert or edit with ``run: true`` then runs its cell in place: the answer
        is the run's (``observer`` and ``control`` follow it, as the run tool's), its text
        starting with the change's summary and the change's details under ``change``. Raises
        the domain errors of ``jupyter_xcsh.errors`` (a bad request, a missing notebook, a
        refusal, a stale read).
        """
        if is_batch(body):
            if body.get("run") is not None:
                raise InvalidRequestError(
                    "run: true goes with a single insert or edit, not a batch (run the cells "
                    'afterwards with action "run")'
                )
            return await self._call_batch(body, caller, observer, control)
        if body.get("action") == "changes":
            return await self._call_changes(body, caller)
        body, run = _split_run(body)
        request = parse_request(body)
        if run is not None:
            if request.action not in RUN_ACTIONS:
                raise InvalidRequestError(
                    f"Field run is not accepted by the {request.action} action (run: true goes "
                    "with insert or edit)"
                )
            return await self._change_and_run(request, run, caller, observer, control)
        if request.action == "create":
            return await self._create(request, caller, observer, control)
        await caller.require("write" if request.changes else "read", self.permission.resource)
        require_preconditions(request, self.require_preconditions)
        await caller.permit(notebook_action(request), observer, control)
        return await self._single(request, caller)

    async def _single(
        self,
        request: NotebookRequest,
        caller: Caller,
        then: Callable[[CellDocument, ChangeResult], Any] | None = None,
    ) -> dict[str, Any]:
        """One change, read or find (authorized), reported on the event bus; its answer.

        ``then``: for a change, what ``NotebookStore.change`` looks at next in the same step
        (its value is the answer's ``then``, not for the caller).
        """
        call_id = new_call_id()
        try:
            if request.changes:
                await self._look_if_kept(request.notebook_path)
                result = await self.store.change(request, call_id, _agent(caller), then)
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
                await self._look_if_kept(request.notebook_path)  # the answer stands
        except XcshError as e:
            self.activity.notebook_call(
                request.action, request.notebook_path, error=e.message, call_id=call_id
            )
            raise
        previous = result.pop("previousCell", None)
        found = result.pop("images", None)
        text = result.pop("previousCellJson", None)
        self.activity.notebook_call(
            request.action,
            self.store.api_path(request),
            result,
            call_id=call_id,
            restored=request.cell is not None,
            **(await self._previous_cell(previous, text=text))[0],
        )
        if _large(text):
            garbage = [previous, text]
            del previous, text
            _let_go(garbage)
        if found is not None:
            result = await self._with_images(result, found)
        return {"callId": call_id, **result}

    async def _change_and_run(
        self,
        request: NotebookRequest,
        fields: dict[str, Any],
        caller: Caller,
        observer: ExecutionObserver | None,
        control: CallControl | None,
    ) -> dict[str, Any]:
        """An insert or edit, then a run in place of its cell: one call (``run: true``).

        Everything is checked before the change (the run's fields, both tools' rights, no run
        of the notebook waiting for input); the run is accepted against the notebook as the
        change left it, in the same step, so a cell that cannot run (not code) leaves the
        notebook unchanged. The answer is the run's, as ``action: "run"`` gives it.
        """
        if self.run is None:
            raise InvalidRequestError("run: true is not available on this server")
        detach = fields.pop("detach", False)
        if not isinstance(detach, bool):
            raise InvalidRequestError("detach must be a boolean")
        # A placeholder selection: the cell is the one the change leaves (its index then).
        run = parse_run_request({"notebook_path": request.notebook_path, "cell_index": 0, **fields})
        await caller.require("write", self.permission.resource)
        require_preconditions(request, self.require_preconditions)
        api_path = await self.run.admit(run, caller)
        # Both the change and its run are judged before anything changes.
        await caller.permit(notebook_action(request), observer, control)
        ids = (request.cell_id,) if request.cell_id else ()
        code = {"code": request.content} if request.content else {}
        summary = f"run the cell it {request.action}s in {request.notebook_path}"
        ran = AgentAction("notebook", "run", request.notebook_path, summary, ids, code, run.timeout)
        await caller.permit(ran, observer, control)

        def accept(document: CellDocument, change: ChangeResult) -> AcceptedRun:
            return accept_run(_run_of(run, change.details["cellIndex"]), document)

        result = await self._single(request, caller, accept)
        details = result["details"]
        answer = await self.run.start(
            _run_of(run, details["cellIndex"]),
            api_path,
            details["via"],
            result["then"],
            caller,
            observer,
            control,
            detach,
        )
        # A copy: the run keeps its own result for those who follow it later.
        return {**answer, "text": f"{result['text']}\n\n{answer['text']}", "change": details}

    async def _create(
        self,
        request: NotebookRequest,
        caller: Caller,
        observer: ExecutionObserver | None,
        control: CallControl | None,
    ) -> dict[str, Any]:
        """``create``: a new empty notebook naming a kernel spec, never over an existing file."""
        await caller.require("write", self.permission.resource)
        await caller.permit(notebook_action(request), observer, control)
        call_id = new_call_id()
        path = request.notebook_path
        try:
            if not path.endswith(".ipynb"):
                raise InvalidRequestError(f"notebook_path must end with .ipynb, got {path}")
            spec = await self._kernel_spec(request.kernel_name)
            metadata: dict[str, Any] = {"kernelspec": {k: v for k, v in spec.items() if v}}
            if spec["language"]:
                metadata["language_info"] = {"name": spec["language"]}
            notebook = nbformat.v4.new_notebook(metadata=metadata)  # type: ignore[no-untyped-call]
            saved = await self.store.create(path, notebook)
        except XcshError as e:
            self.activity.notebook_call("create", path, error=e.message, call_id=call_id)
            raise
        details = {
            "action": "create",
            "path": saved["path"],
            "kernelName": spec["name"],
            "totalCells": 0,
            "revision": notebook_revision([]),
            "lastModified": saved["lastModified"],
            "via": "file",
        }
        result = {
            "text": f"Created {saved['path']} (kernel {spec['name']}, no cells).",
            "details": details,
        }
        self.activity.notebook_call("create", saved["path"], result, call_id=call_id)
        self.history.record(saved["path"], (), "agent", caller.agent)
        return {"callId": call_id, **result}

    async def _kernel_spec(self, name: str | None) -> dict[str, str]:
        """``{name, display_name, language}`` of kernel spec ``name`` (None: the default)."""
        if self.kernels is None:
            raise InvalidRequestError("create is not available on this server")
        name = name or self.kernels.default_kernel_name
        spec = await self.kernels.kernel_spec(name)
        if spec is None:
            raise InvalidRequestError(f"No such kernel: {name}")
        return spec

    async def _with_images(self, result: dict[str, Any], found: list[ReadImage]) -> dict[str, Any]:
        """A read's answer with its images (``images: true``), as the python tool returns them.

        The images whose placeholder the text still holds, in order, are kept as artifacts and
        budgeted (at most 4 inlined, downscaled or linked past the limits: ``images.py``); each
        placeholder becomes the image's line.
        """
        text = result["text"]
        shown = [found[int(k)] for k in _IMAGE_PLACEHOLDER.findall(text)]
        capture = ImageCapture(self.artifacts, "notebook")

        def keep() -> list[CapturedImage | None]:
            return [capture.capture(i.cell_index, i.mime_type, i.value) for i in shown]

        kept = await asyncio.to_thread(keep)
        budgeted = iter(await budget_images([c for c in kept if c is not None], self.artifacts))
        lines: list[str | ImageResult] = [
            f"[{image.mime_type} not shown: unreadable]" if captured is None else next(budgeted)
            for image, captured in zip(shown, kept, strict=True)
        ]
        images = [item for item in lines if isinstance(item, ImageResult)]
        numbered = iter(lines)

        def line(match: re.Match[str]) -> str:
            item = next(numbered)
            return item if isinstance(item, str) else item.marker()

        text = _IMAGE_MARK_LEFT.sub("", _IMAGE_PLACEHOLDER.sub(line, text))
        return {**result, "text": text, "images": [image.to_json() for image in images]}

    async def _call_batch(
        self,
        body: dict[str, Any],
        caller: Caller,
        observer: ExecutionObserver | None,
        control: CallControl | None,
    ) -> dict[str, Any]:
        """Apply a batch (``changes``) as one atomic change; one event lists its changes."""
        batch = parse_batch(body)
        await caller.require("write", self.permission.resource)
        require_batch_preconditions(batch, self.require_preconditions)
        await caller.permit(batch_action(batch), observer, control)
        call_id = new_call_id()
        try:
            await self._look_if_kept(batch.notebook_path)
            result = await self.store.change_batch(batch, call_id, _agent(caller))
            self._changed(batch.notebook_path, result, caller)
        except XcshError as e:
            self.activity.notebook_call(
                "batch", batch.notebook_path, error=e.message, call_id=call_id
            )
            raise
        previous = result.pop("previousCells")
        # Each cell as it was, as JSON, made with the change (``store._Outcome.cell_json``);
        # each text is let go once used.
        texts = result.pop("previousCellsJson")
        large = any(map(_large, texts))
        changes = []
        budget = MAX_EVENT_BATCH  # one event stays bounded however many changes it lists
        for i, (request, details, cell) in enumerate(
            zip(batch.changes, result["details"]["changes"], previous, strict=True)
        ):
            source = event_source(details.get("cellSource"))
            if source is not None and len(source) > budget:
                source = None  # the lab then relies on the server's hash check alone
            budget -= len(source or "")
            text, texts[i] = texts[i], None
            fields, size = await self._previous_cell(cell, min(MAX_EVENT_CELL, budget), text)
            budget -= size
            entry = change_entry(
                details, source=source, restored=request.cell is not None, **fields
            )
            changes.append(entry)
        self.activity.notebook_call(
            "batch", self.store.api_path(batch), result, call_id=call_id, changes=changes
        )
        if large and previous:
            garbage = [previous]
            del previous, cell, text
            _let_go(garbage)
        return {"callId": call_id, **result}

    async def undo(self, body: dict[str, Any], caller: Caller) -> dict[str, Any]:
        """Undo one call's change to a notebook's open room, or its change to one cell.

        ``body``: ``{path, call_id, cell_id}`` (``cell_id`` null or absent: the whole call).
        Needs ``write`` on ``contents``. What others typed since stays (``notebook/rooms/undo.py``).
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
        await caller.require(*self.UNDO)
        return await self.store.undo(path, call_id, cell_id)

    async def _look(
        self, path: str, agent: str | None = None, resolved: tuple[str, str] | None = None
    ) -> tuple[str, Any]:
        """Note the notebook as it is now in its history; its API path and snapshot.

        ``agent``: the caller whose change made it so; else a change found is a person's (in
        the room, or a save of the file). ``resolved``: ``store.resolve(path)``, when known.
        """
        resolved = resolved or await self.store.resolve(path)
        snapshot = await self.store.snapshot(path, resolved)
        api_path = resolved[0]
        self._note(api_path, snapshot, agent)
        return api_path, snapshot

    def _note(self, api_path: str, snapshot: Snapshot, agent: str | None = None) -> None:
        """Record ``snapshot`` in the notebook's history (see ``_look``)."""
        found = "file" if snapshot.via == "file" else "room"  # any live document's room
        by = found if agent is None else "agent"
        self.history.record(api_path, snapshot.keys, by, agent or "")

    async def _look_if_kept(self, path: str) -> None:
        """Note what others changed since the last look, if states of the notebook are kept.

        Before an agent's change and after a find; else not worth a second load. An error is
        left to the call itself to report (the history waits).
        """
        with contextlib.suppress(XcshError):
            resolved = await self.store.resolve(path)
            if self.history.knows(resolved[0]):
                await self._look(path, resolved=resolved)

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
        await caller.require("read", self.permission.resource)
        await caller.permit(AgentAction("notebook", "read", path, f"changes in {path}"))
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
        return {"callId": new_call_id(), "text": changes_text(details), "details": details}

    async def _previous_cell(
        self, cell: Any, limit: int = MAX_EVENT_CELL, text: CellText | None = None
    ) -> tuple[dict[str, Any], int]:
        """The event fields holding the cell as it was, and the characters they carry inline.

        Inline up to ``limit`` characters of JSON, else an artifact (when there is a store).
        ``text``: the cell's JSON as the change made it (``store._Outcome.cell_json``; for a
        large cell, its text in the file, perhaps in parts), written to the artifact as it is.
        """
        if cell is None:
            return {}, 0
        if text is None:
            text = json.dumps(cell, ensure_ascii=False)
        size = text_length(text)
        if size <= limit:
            return {"previous_cell": cell}, size
        if self.artifacts is None:
            return {}, 0
        try:
            artifact_id = await asyncio.to_thread(self._write_artifact, text)
        except OSError as e:  # the change is saved; only its revert becomes unavailable
            log.warning("Could not keep a changed cell for the lab's revert: %s", e)
            return {}, 0
        return {"previous_cell_artifact": artifact_id}, 0

    def _write_artifact(self, text: CellText) -> str:
        assert self.artifacts is not None

        # Whole or not at all (save): a cell's JSON cut short could not be reverted to. A MiB
        # at a time: encoding holds the GIL, and the event loop's thread waits for it (50 MB
        # encoded at once: ~100 ms).
        def chunks() -> Iterator[bytes]:
            for chunk in text_chunks(text):
                yield chunk.encode("utf-8")
                hand_over()

        return self.artifacts.save("notebook", "log", chunks()).id


def _split_run(body: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """A body without ``run`` and its fields; those fields (None without ``run: true``)."""
    run = body.get("run")
    fields = {name: body[name] for name in RUN_FIELDS if body.get(name) is not None}
    rest = {k: v for k, v in body.items() if k != "run" and k not in RUN_FIELDS}
    if run is None or check_type("run", run, bool) is False:
        if fields:
            raise InvalidRequestError(
                f"{next(iter(fields))} goes with run: true (an insert or edit that runs its cell)"
            )
        return rest, None
    return rest, fields


def _run_of(run: RunRequest, index: int) -> RunRequest:
    """The run request of one cell, the one at ``index``."""
    return dataclasses.replace(run, cell_index=index)


def _large(text: CellText | None) -> bool:
    """Whether a cell whose JSON is ``text`` is let go off the event loop (``_let_go``)."""
    return text is not None and text_length(text) > PART_CHARS


def _let_go(garbage: list[Any]) -> None:
    """Free the large cells as they were, once reported, on a worker thread, a slice at a time.

    Their last reference dropped on the event loop, a cell with 50 MB of output lines held it
    60-130 ms (``memory.release_in_slices``). The caller keeps no reference to them.
    """
    asyncio.get_running_loop().run_in_executor(None, release_in_slices, garbage)


def _agent(caller: Caller) -> tuple[str, str] | None:
    """The caller's name and key, to show it in a room; None for a caller not an agent."""
    return (caller.name, caller.agent) if caller.name else None
