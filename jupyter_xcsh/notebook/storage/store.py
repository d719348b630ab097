"""The one place notebooks are read and changed: the live shared document, or the file.

When a collaboration room has the notebook open, reads and changes go to its shared document
(``live.py``, ``shared.py``), in one transaction; the room saves the file as it always does.
Otherwise the file is read and saved through the server's **contents manager** (never
``open()``), which keeps pre/post-save hooks, contents events and non-disk contents managers
working, and the text is saved only after the whole change succeeded.

Changes to one notebook are serialised by a per-notebook lock, and every load and save of the
file also holds the file's save lock (``saves.py``), which the server's own saves take too: a
change never reads a half-written file nor interleaves its write with a JupyterLab save. A
save that happened between the tool's load and its save is not overwritten: the change starts
again from the saved version. Just before saving, "no room" is checked again, so a room that
opened meanwhile gets the change instead of being overwritten from the file.

The document last read or saved is kept, parsed, with its signature (``cache.py``): while the
file is unchanged since, the next read or change starts from it instead of loading the file.

Python's cyclic garbage collector is paused while a notebook file is parsed, changed and saved
(``gcpause.py``, the setting ``pause_collector``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import posixpath
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, TypeVar

from jupyter_core.utils import ensure_async
from tornado.web import HTTPError

from jupyter_xcsh.errors import ConflictError, InvalidDocumentError, NotFoundError, RefusedError
from jupyter_xcsh.memory import TrimSoon
from jupyter_xcsh.notebook.edit.batch import NotebookBatch, apply_batch, batch_result
from jupyter_xcsh.notebook.edit.cells import ChangeResult, NotebookRequest, apply_changes
from jupyter_xcsh.notebook.model import CellDocument, CellKey, Snapshot
from jupyter_xcsh.notebook.outputs import CellPlace, SelectedCell, set_cell_outputs
from jupyter_xcsh.notebook.reader import ReadLimits, read_view
from jupyter_xcsh.notebook.rooms.live import LiveDocuments, in_transaction, wait_until_free
from jupyter_xcsh.notebook.rooms.presence import AgentPresence
from jupyter_xcsh.notebook.rooms.undo import RoomUndo
from jupyter_xcsh.notebook.storage.cache import CachedNotebook, FileStamp, NotebookCache, stamp_of
from jupyter_xcsh.notebook.storage.celltext import CellText, text_length
from jupyter_xcsh.notebook.storage.document import NoCellsError, NotebookDocument, NotJSONError
from jupyter_xcsh.notebook.storage.gcpause import collection_paused
from jupyter_xcsh.notebook.storage.saves import SaveGuard
from jupyter_xcsh.notebook.storage.trust import NotebookTrust
from jupyter_xcsh.paths import escapes_root, to_api_path

T = TypeVar("T")

#: Waits, in seconds, before reading again a notebook that was not valid JSON while it was
#: being written (by a program outside this server); a file still invalid after them is a 422.
READ_RETRY_DELAYS = (0.05, 0.1, 0.2, 0.4)
#: A file modified longer ago than this (seconds) is not being written: no retry.
WRITING_WINDOW = 5.0
#: How many times a change starts again because the file was saved under it; the last attempt
#: holds the file's save lock from load to save.
SAVE_ATTEMPTS = 3
#: The notebooks' text kept parsed between calls (``cache.py``), in characters, by default.
CACHE_BYTES = 128 * 1024 * 1024
#: A parsed notebook this large (characters) or more gives freed memory back once dropped.
TRIM_AFTER_CHARS = 4 * 1024 * 1024
#: A cell changed or deleted whose text in the file is longer than this (characters) is
#: reported as it was with that text as is (``_Outcome.cell_json``), not encoded again. Four
#: times the lab event's inline bound (``events.activity.MAX_EVENT_CELL``, 64 KiB): such a cell
#: goes to an artifact either way.
AS_IS_CHARS = 256 * 1024


class _Unreadable(Exception):
    """The file is not notebook JSON (maybe only for now: half-written)."""

    def __init__(self, last_modified: Any, error: Exception) -> None:
        super().__init__(str(error))
        self.last_modified = last_modified
        self.error = error


@dataclass
class _Loaded:
    document: NotebookDocument
    last_modified: Any
    #: The file's status read before its text (None without a file, or when nothing is kept).
    stamp: FileStamp | None = None


@dataclass
class _Outcome:
    """What an update did: the value it returned, where it went and the file's new timestamp."""

    value: Any
    via: str
    last_modified: str | None
    #: The JSON of each cell a change of the file replaced or deleted, by the cell's ``id``,
    #: made with the change on its worker thread (``_mutate_file``).
    texts: dict[int, tuple[Any, CellText]] = field(default_factory=dict)

    def cell_json(self, cell: Any) -> CellText:
        """The JSON of ``cell``, a cell as it was before the update (for the lab's revert).

        Made with the change for a file, within the notebook's lock, so the events of changes
        keep their saves' order; a large cell is its text as the file had it. Else (a room's
        change, encoded in the room's transaction anyway) encoded now.
        """
        kept = self.texts.get(id(cell))
        if kept is not None and kept[0] is cell:
            return kept[1]
        return json.dumps(cell, ensure_ascii=False)


class NotebookStore:
    """Read and change notebooks: the live shared document when open, else the file."""

    def __init__(
        self,
        contents_manager: Any,
        limits: ReadLimits | None = None,
        live: LiveDocuments | None = None,
        guard: SaveGuard | None = None,
        *,
        pause_collector: bool = True,
        cache_bytes: int = CACHE_BYTES,
        trim_memory: bool = True,
    ) -> None:
        """Read and save through ``contents_manager``.

        ``pause_collector``: keep the cyclic garbage collector off while a notebook file is
        parsed, changed and saved (``collection_paused``). ``cache_bytes``: the notebooks' text kept
        parsed between calls (``cache.py``; 0 keeps none, as does a guard that is not
        installed: the server's saves would not be seen). ``trim_memory``: give the memory of
        a large parsed notebook back to the system once it is dropped (``memory.py``).
        """
        self.contents_manager = contents_manager
        self._collection_paused: Callable[[], contextlib.AbstractContextManager[None]] = (
            collection_paused if pause_collector else contextlib.nullcontext
        )
        self.limits = limits or ReadLimits()
        self.live = live
        self.guard = guard or SaveGuard(contents_manager)
        self.trust = NotebookTrust(contents_manager)
        self.cache = NotebookCache(cache_bytes if self.guard.installed else 0)
        self.guard.on_change.append(self.cache.forget)
        self.trim_memory = trim_memory
        self._trim = TrimSoon()
        #: The undo of agent calls' changes to open rooms (``undo.py``).
        self.room_undo = RoomUndo()
        #: The agents shown in the awareness of the rooms they change (``presence.py``).
        self.presence = AgentPresence(live.settings if live is not None else None)
        # One lock per notebook, dropped once no request holds or awaits it.
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()

    def _lock(self, key: str) -> asyncio.Lock:
        lock = self._locks.get(key)
        if lock is None:
            lock = self._locks[key] = asyncio.Lock()
        return lock

    # -- paths ---------------------------------------------------------------------------------

    async def resolve(self, path: str) -> tuple[str, str]:
        """Return the API path for a caller's path, enforcing root and hidden-file policy.

        Also returns the key of the notebook's locks: its real file when the contents manager
        has one, so two names of one file share them; else the API path.
        """
        cm = self.contents_manager
        api_path = to_api_path(path, cm.root_dir)
        get_os_path = getattr(cm, "_get_os_path", None)
        if get_os_path is not None:
            try:
                os_path = str(get_os_path(api_path))
            except HTTPError:
                raise RefusedError(f"Path is outside the contents root: {path}") from None
            if escapes_root(os_path, cm.root_dir):
                raise RefusedError(f"Path is outside the contents root: {path}")
        if not cm.allow_hidden and await ensure_async(cm.is_hidden(api_path)):
            # As the server itself answers for hidden files: as if they did not exist.
            raise NotFoundError(f"Notebook not found: {path}")
        return api_path, self.guard.key(api_path)

    def api_path(self, request: NotebookRequest | NotebookBatch) -> str:
        """The API path a (successfully resolved) request or batch addressed."""
        return to_api_path(request.notebook_path, self.contents_manager.root_dir)

    # -- reading -------------------------------------------------------------------------------

    async def _live_document(self, api_path: str) -> Any:
        return None if self.live is None else await self.live.find(api_path)

    def _live(self, api_path: str) -> tuple[str, Any]:
        """``details.via`` of the live document and its outputs store (jupyter-server-documents)."""
        assert self.live is not None
        return self.live.via, self.live.outputs_store(api_path)

    def _os_path(self, api_path: str) -> str | None:
        """The notebook's file when notebooks are kept (``cache.py``); else None."""
        return self.guard.os_path(api_path) if self.cache.max_bytes else None

    def _kept(self, api_path: str, key: str, *, take: bool) -> CachedNotebook | None:
        """The kept document of the file if the file is unchanged since (``take``: to change it)."""
        if not len(self.cache):
            return None
        os_path = self._os_path(api_path)
        stamp = None if os_path is None else stamp_of(os_path)
        return self.cache.take(key, stamp) if take else self.cache.get(key, stamp)

    def _keep(self, key: str, entry: CachedNotebook) -> None:
        self.cache.put(key, entry)

    def _release(self, document: NotebookDocument) -> None:
        """After a large notebook was parsed, saved or dropped: give freed memory back.

        Its text, the saved text and the parse's garbage are tens of megabytes that glibc
        would otherwise keep (``memory.py``); the trim runs on another thread, after the call
        has answered (once for the changes of a burst).
        """
        if self.trim_memory and document.size >= TRIM_AFTER_CHARS:
            self._trim.ask()

    async def _load_once(self, api_path: str, path: str) -> _Loaded:
        """Read and parse the notebook; raise ``_Unreadable`` when it is not notebook JSON."""
        cm = self.contents_manager
        os_path = self._os_path(api_path)
        # Before the text: a write after it makes the kept document's stamp differ.
        stamp = None if os_path is None else stamp_of(os_path)
        if not await ensure_async(cm.file_exists(api_path)):
            raise NotFoundError(f"Notebook not found: {path}")
        try:
            model = await ensure_async(cm.get(api_path, content=True, type="file", format="text"))
        except HTTPError as e:
            if e.status_code == 404:
                raise NotFoundError(f"Notebook not found: {path}") from None
            if e.status_code == 400:
                # Not UTF-8 text: not notebook JSON (or cut inside a character while written).
                stat = await ensure_async(cm.get(api_path, content=False))
                raise _Unreadable(stat.get("last_modified"), NotJSONError()) from None
            raise  # the contents manager's own answer (a permission problem, a fault)
        try:
            document = await asyncio.to_thread(NotebookDocument.parse, model["content"])
        except (NotJSONError, NoCellsError) as e:
            raise _Unreadable(model.get("last_modified"), e) from None
        return _Loaded(document, model.get("last_modified"), stamp)

    async def _load(self, api_path: str, key: str, path: str) -> _Loaded:
        """Load the notebook under the file's save lock, reading again while it is written."""
        for delay in (*READ_RETRY_DELAYS, None):
            try:
                async with self.guard.holding(key):
                    return await self._load_once(api_path, path)
            except _Unreadable as e:
                if delay is None or not _recent(e.last_modified):
                    if isinstance(e.error, NoCellsError):
                        raise InvalidDocumentError(
                            f"Invalid notebook structure (missing cells array): {path}"
                        ) from None
                    raise InvalidDocumentError(f"Invalid JSON in notebook: {path}") from None
            await asyncio.sleep(delay)
        raise AssertionError("unreachable: the last attempt returns or raises")

    async def view(
        self, path: str, look: Callable[[CellDocument], T], *, in_thread: bool = False
    ) -> _Outcome:
        """Run ``look`` (a pure function that changes nothing) on the notebook as people see it.

        On the live shared document when a room is open (unsaved typing included), else on the
        file; the outcome's ``last_modified`` is the file's (None for the live document).
        ``in_thread``: a look at the file runs on a worker thread (a look over every cell of a
        large notebook: not on the event loop's thread); it must then read only the document
        and what is safe to read from another thread.
        """
        api_path, key = await self.resolve(path)
        live = await self._live_document(api_path)
        if live is not None:
            via, stored = self._live(api_path)
            value = await in_transaction(live, path, look, commit=False, outputs=stored)
            return _Outcome(value, via, None)
        kept = self._kept(api_path, key, take=False)
        if kept is not None:
            value = await self._look_at(kept, look, in_thread)
            return _Outcome(value, "file", _timestamp(kept.last_modified))
        with self._collection_paused():  # the parsed file is freed before the collector resumes
            return await self._view_file(api_path, key, path, look, in_thread)

    @staticmethod
    async def _look_at(
        kept: CachedNotebook, look: Callable[[CellDocument], T], in_thread: bool
    ) -> T:
        """``look`` at a kept document, on a worker thread if ``in_thread``.

        A change meanwhile takes a copy of its own (``cache.NotebookCache.take``).
        """
        if not in_thread:
            return look(kept.document)
        kept.readers += 1  # no change takes it while another thread reads it
        try:
            return await asyncio.to_thread(look, kept.document)
        finally:
            kept.readers -= 1

    async def _view_file(
        self,
        api_path: str,
        key: str,
        path: str,
        look: Callable[[CellDocument], T],
        in_thread: bool = False,
    ) -> _Outcome:
        loaded = await self._load(api_path, key, path)
        kept = self._keep_loaded(key, loaded)
        value = await self._look_at(kept, look, in_thread)
        outcome = _Outcome(value, "file", _timestamp(loaded.last_modified))
        self._release(loaded.document)  # the parse's garbage
        return outcome

    def _keep_loaded(self, key: str, loaded: _Loaded) -> CachedNotebook:
        """Keep a notebook just loaded (if the cache takes it); its entry either way."""
        entry = CachedNotebook(loaded.document, loaded.stamp, loaded.last_modified)
        self._keep(key, entry)
        return entry

    async def read(
        self, request: NotebookRequest, code_of: Callable[[int], str | None] | None = None
    ) -> dict[str, Any]:
        """Answer a ``read`` request with the bounded view of the notebook.

        ``code_of``: what the notebook's kernel ran, by execution count (for stale marks).
        """
        return (await self.read_with_keys(request, code_of))[0]

    async def read_with_keys(
        self, request: NotebookRequest, code_of: Callable[[int], str | None] | None = None
    ) -> tuple[dict[str, Any], Snapshot]:
        """``read``'s answer, and every cell's key of the state it read (one load, one look)."""

        def look(document: CellDocument) -> tuple[dict[str, Any], Snapshot]:
            view = read_view(document, request, self.limits, code_of)
            return view, Snapshot(document.cell_keys(), document.nbformat, "", None)

        outcome = await self.view(request.notebook_path, look, in_thread=True)
        result, snapshot = outcome.value
        result["details"].update(via=outcome.via, lastModified=outcome.last_modified)
        return result, replace(snapshot, via=outcome.via)

    async def snapshot(self, path: str, resolved: tuple[str, str] | None = None) -> Snapshot:
        """Every cell's id, type and source as they are now (what ``find`` searches).

        ``resolved``: what ``resolve(path)`` returned for this call (its checks then done).
        """
        api_path, key = resolved or await self.resolve(path)
        live = await self._live_document(api_path)
        if live is not None:
            via = self._live(api_path)[0]

            def shared_snapshot(shared: CellDocument) -> Snapshot:
                return Snapshot(shared.cell_keys(), shared.nbformat, via, None)

            return await in_transaction(live, path, shared_snapshot, commit=False)
        with self._collection_paused():
            return await self._file_snapshot(api_path, key, path)

    async def _file_snapshot(self, api_path: str, key: str, path: str) -> Snapshot:
        kept = self._kept(api_path, key, take=False)
        if kept is None:
            kept = self._keep_loaded(key, await self._load(api_path, key, path))
        # Keys kept since the last look cost a few changed cells' hashes: no thread for that.
        in_thread = not kept.document.keys_known
        keys = await self._look_at(kept, _cell_keys, in_thread)
        return Snapshot(keys, kept.document.nbformat, "file", _timestamp(kept.last_modified))

    # -- changing ------------------------------------------------------------------------------

    async def change(
        self,
        request: NotebookRequest,
        call_id: str | None = None,
        agent: tuple[str, str] | None = None,
        then: Callable[[CellDocument, ChangeResult], Any] | None = None,
    ) -> dict[str, Any]:
        """Apply an edit/insert/delete/move request (all or nothing) and describe it.

        ``call_id``: the agent call making the change, whose change to a room can then be
        undone (``undo``). Returns ``{text, details}``, ``cellKeys`` (every cell's key after the
        change, for the tool's history) and, for edit and delete, ``previousCell``: the cell as
        it was, which the tool reports on the event bus (for the lab's revert), with
        ``previousCellJson`` (``_Outcome.cell_json``); none of them is for the caller. ``then``
        (pure) looks at the notebook as the change left it, in the same step: what it returns
        is ``then``'s entry; when it raises, nothing is kept (a change followed by a run of its
        cell is accepted as one).
        """

        def mutate(d: CellDocument) -> tuple[list[ChangeResult], Sequence[CellKey], Any]:
            results = apply_changes(d, [request])
            after = then(d, results[0]) if then is not None else None
            return results, d.cell_keys(), after

        outcome = await self.update(request.notebook_path, mutate, call_id=call_id, agent=agent)
        results, keys, after = outcome.value
        result = results[0]
        details = dict(result.details, via=outcome.via, lastModified=outcome.last_modified)
        changed: dict[str, Any] = {"text": result.text, "details": details, "cellKeys": keys}
        if result.previous is not None:
            changed["previousCell"] = result.previous
            changed["previousCellJson"] = outcome.cell_json(result.previous)
        if then is not None:
            changed["then"] = after
        return changed

    async def create(self, path: str, notebook: dict[str, Any]) -> dict[str, Any]:
        """Write ``notebook`` (nbformat JSON) as a new file; never over an existing one.

        Through the contents manager, under the file's lock and save lock (no other write of
        that path between the check and the save). 404 ``Folder not found: <dir>`` for a
        missing folder, 409 ``Notebook already exists: <p>`` (reason ``exists``) when the path
        is taken. Returns the API path and the saved model's ``last_modified``.
        """
        api_path, key = await self.resolve(path)
        cm = self.contents_manager
        folder = posixpath.dirname(api_path)
        if folder and not await ensure_async(cm.dir_exists(folder)):
            raise NotFoundError(f"Folder not found: {folder}")
        async with self._lock(key), self.guard.holding(key):
            taken = await ensure_async(cm.file_exists(api_path)) or await ensure_async(
                cm.dir_exists(api_path)
            )
            if taken:
                raise ConflictError(f"Notebook already exists: {path}", reason="exists")
            model = {"type": "notebook", "format": "json", "content": notebook}
            saved = await self.guard.save_replacing(model, api_path)
        return {"path": api_path, "lastModified": _timestamp(saved.get("last_modified"))}

    async def change_batch(
        self,
        batch: NotebookBatch,
        call_id: str | None = None,
        agent: tuple[str, str] | None = None,
    ) -> dict[str, Any]:
        """Apply a batch in order, atomically, and describe it (docs/developers/contract.md §2.11).

        One save of the file, or one transaction on the live document; nothing when a change
        fails. ``call_id`` and ``agent`` as ``change``'s. Returns ``{text, details}`` and
        ``previousCells`` (per change, the cell as it was before an edit or a delete, else
        None) and ``previousCellsJson`` (their JSON, ``_Outcome.cell_json``) for the tool's
        event, and ``cellKeys`` (as ``change``'s), not for the caller.
        """
        outcome = await self.update(
            batch.notebook_path,
            lambda d: (apply_batch(d, batch), d.cell_keys()),
            call_id=call_id,
            agent=agent,
        )
        changes, keys = outcome.value
        result = batch_result(changes)
        result["details"].update(via=outcome.via, lastModified=outcome.last_modified)
        previous = [change.previous for change in changes]
        result["previousCells"] = previous
        texts = [None if cell is None else outcome.cell_json(cell) for cell in previous]
        result["previousCellsJson"] = texts
        result["cellKeys"] = keys
        return result

    async def write_outputs(
        self,
        path: str,
        cell: SelectedCell,
        outputs: list[dict[str, Any]],
        execution_count: int | None,
    ) -> _Outcome:
        """Store a run's outputs and count in its cell (docs/developers/contract.md §6.4).

        Into the live document when a room is open, else into the file (only that cell's
        ``outputs`` and ``execution_count`` bytes change). The cell is found again first
        (``outputs.find_cell``); the outcome's value is a ``CellPlace``, whose ``cell`` is None
        when the cell was gone and nothing was written.
        """
        return await self.update(
            path, lambda document: set_cell_outputs(document, cell, outputs, execution_count)
        )

    async def show_outputs(
        self,
        path: str,
        cell: SelectedCell,
        outputs: list[dict[str, Any]],
        execution_count: int | None,
    ) -> _Outcome | None:
        """Show the outputs of a cell still running in the live document, if a room is open.

        None, and nothing written, without a room: a file gets a run's outputs once each cell
        has ended (``write_outputs``), as JupyterLab writes outputs only when a person saves.
        """
        api_path, key = await self.resolve(path)
        async with self._lock(key):
            live = await self._live_document(api_path)
            if live is None:
                return None

            def show(document: CellDocument) -> CellPlace:
                return set_cell_outputs(document, cell, outputs, execution_count, running=True)

            via, stored = self._live(api_path)
            return _Outcome(await in_transaction(live, path, show, outputs=stored), via, None)

    async def update(
        self,
        path: str,
        mutate: Callable[[CellDocument], T],
        call_id: str | None = None,
        agent: tuple[str, str] | None = None,
    ) -> _Outcome:
        """Run ``mutate`` on the notebook and keep its changes, atomically.

        ``mutate`` (a pure function of the edit core, e.g. several changes of a batch) runs on
        the live shared document when a room is open — its changes then become one transaction
        — else on the file's text, saved once. When it raises, nothing is kept. ``call_id``:
        the agent call whose change it is; in a room, the change can then be undone by that id.
        ``agent``: the caller's name and key; in a room, the agent is shown there, its cursor
        in the cell it changed last (``presence.py``).
        """
        api_path, key = await self.resolve(path)
        async with self._lock(key):
            for attempt in range(1, SAVE_ATTEMPTS + 1):
                live = await self._live_document(api_path)
                if live is not None:
                    via, stored = self._live(api_path)
                    capture = None
                    if call_id is not None:
                        capture = self.room_undo.capture(api_path, call_id)
                    value = await in_transaction(live, path, mutate, outputs=stored, undo=capture)
                    if agent is not None and capture is not None and capture.focus is not None:
                        self.presence.show(live, api_path, *agent, *capture.focus)
                    return _Outcome(value, via, None)
                if attempt == SAVE_ATTEMPTS:
                    async with self.guard.holding(key):
                        final = await self._change_file(api_path, key, path, mutate, final=True)
                    assert final is not None
                    return final
                outcome = await self._change_file(api_path, key, path, mutate, final=False)
                if outcome is not None:
                    return outcome
        raise AssertionError("unreachable: the last attempt always returns")

    async def undo(self, path: str, call_id: str, cell_id: str | None = None) -> dict[str, Any]:
        """Undo an agent call's change to the notebook's open room (or its change to one cell).

        What anyone else changed since — typing in the same cells included — is kept (``undo.py``).
        Returns ``{path, callId, cellId, undone}`` (the ids of the cells undone). 404 with
        reason ``not-held`` when no open room holds the call, 409 when it is undone already.
        """
        api_path, key = await self.resolve(path)
        async with self._lock(key):
            live = await self._live_document(api_path)
            call = self.room_undo.held(api_path, call_id, live)
            await wait_until_free(live, path)
            undone = self.room_undo.undo(call, cell_id, live)
        return {"path": api_path, "callId": call_id, "cellId": cell_id, "undone": undone}

    async def _change_file(
        self, api_path: str, key: str, path: str, mutate: Callable[[CellDocument], T], final: bool
    ) -> _Outcome | None:
        """Load, change and save the file.

        None when the change must start again: a room opened, or someone saved the file since
        the load (never on the ``final`` attempt, which holds the file's save lock throughout).
        """
        with self._collection_paused():  # the parsed file is freed before the collector resumes
            outcome, document = await self._change_loaded_file(api_path, key, path, mutate, final)
        self._release(document)
        return outcome

    async def _change_loaded_file(
        self, api_path: str, key: str, path: str, mutate: Callable[[CellDocument], T], final: bool
    ) -> tuple[_Outcome | None, NotebookDocument]:
        # The kept document leaves the cache while it is changed: it comes back once saved.
        kept = self._kept(api_path, key, take=True)
        if kept is None:
            loaded = await self._load(api_path, key, path)
            kept = CachedNotebook(loaded.document, loaded.stamp, loaded.last_modified)
        document = kept.document
        # Whether the notebook was trusted before the change: the signature is known when the
        # tool signed this content; it need not be computed when this content was found not
        # trusted and the notary's store has not changed since (``cache.py``).
        store_state = self.trust.state()
        untrusted = kept.untrusted_in is not None and kept.untrusted_in == store_state
        known = kept.signature if kept.signature is not None or untrusted else _UNKNOWN
        try:
            value, before, texts = await asyncio.to_thread(
                _mutate_file, document, mutate, self.trust, known
            )
        except BaseException:
            self._release(document)  # half changed, or unchanged: dropped either way
            raise
        if not document.changed:
            self._keep(key, kept)
            return _Outcome(value, "file", _timestamp(kept.last_modified), texts), document
        if not final and await self._live_document(api_path) is not None:
            return None, document  # a room opened meanwhile: change its document instead
        pieces = document.pieces()  # the text, never joined where the guard writes pieces
        async with self.guard.holding(key):
            if not final and not await self._unchanged(api_path, kept):
                return None, document  # saved by someone else since: start from their version
            trusted = self.trust.is_trusted(before)
            after = None
            if trusted:
                after = await asyncio.to_thread(self.trust.signature, document.data)
                self.trust.sign(after)
            saved, written = await self.guard.save_text_noting(pieces, api_path)
            del pieces
            document.saved()
            os_path = self._os_path(api_path)
            if written is not None and os_path is not None:
                # The file in place is the one written (nobody wrote it since, nor replaced
                # it); its stamp is as of the write, so a write in that clock tick is racy.
                stamp = FileStamp.of(*written)
                now = stamp_of(os_path)
                if now is not None and stamp.same_written(now):
                    untrusted_in = None if trusted else store_state
                    entry = CachedNotebook(
                        document,
                        replace(now, noted_ns=stamp.noted_ns),
                        saved.get("last_modified"),
                        after,
                        untrusted_in,
                    )
                    self._keep(key, entry)
        return _Outcome(value, "file", _timestamp(saved.get("last_modified")), texts), document

    async def _unchanged(self, api_path: str, kept: CachedNotebook) -> bool:
        """Whether the file is still the one ``kept`` was read from or saved as.

        Its status, when the stamp taken then can be trusted (``cache.FileStamp``): an
        ``os.stat``, where the contents manager's model of the file (path checks, hidden-file
        checks, the model) costs the event loop's thread far more. Else that model's
        ``last_modified``.
        """
        stamp, os_path = kept.stamp, self._os_path(api_path)
        if stamp is not None and not stamp.racy and os_path is not None:
            now = stamp_of(os_path)
            if now is not None and stamp.same_file(now):
                return True
        last_modified = kept.last_modified
        try:
            model = await ensure_async(self.contents_manager.get(api_path, content=False))
        except HTTPError:
            return True  # gone or unreadable: the save says so
        return bool(model.get("last_modified") == last_modified)


#: ``_mutate_file``'s ``known`` when the signature from before the change must be computed.
_UNKNOWN = object()


def _mutate_file(
    document: NotebookDocument,
    mutate: Callable[[CellDocument], T],
    trust: NotebookTrust,
    known: Any = _UNKNOWN,
) -> tuple[T, str | None, dict[int, tuple[Any, CellText]]]:
    """Apply ``mutate`` to the file's document; also return its signature from before.

    ``known``: that signature when already known (None: known not to be trusted). Also
    returns the JSON of each cell the change replaced or deleted, by its ``id``
    (``_Outcome.texts``): encoded here, on the change's worker thread — a batch of 100 changes
    of cells with ~10 KB of outputs held the event loop ~16 ms encoding them there one by one
    — and a cell longer than ``AS_IS_CHARS`` not encoded at all, its text in the file taken as
    it is (a cell with 50 MB of outputs held the GIL, hence the event loop, for ~0.7 s in
    ``json.dumps``, a single C call, whichever thread made it).
    """
    before = trust.signature(document.data) if known is _UNKNOWN else known
    try:
        value = mutate(document)
    finally:
        removed = document.take_removed()
    texts: dict[int, tuple[Any, CellText]] = {}
    for cell, text in removed:
        if text_length(text) <= AS_IS_CHARS:
            text = json.dumps(cell, ensure_ascii=False)
        texts[id(cell)] = (cell, text)
    return value, before, texts


def _recent(modified: Any) -> bool:
    """Whether a file's ``last_modified`` is recent enough for a write to be under way."""
    if not isinstance(modified, datetime):
        return True
    return time.time() - modified.timestamp() < WRITING_WINDOW


def _cell_keys(document: CellDocument) -> Sequence[CellKey]:
    return document.cell_keys()


def _timestamp(value: Any) -> str | None:
    if isinstance(value, datetime):
        return value.isoformat()
    return value if isinstance(value, str) else None
