"""A path's live shared notebook, as a room serves it (docs/developers/contract.md §4).

With jupyter-collaboration (≥ 3.0) installed and a room open for a notebook — someone has it open
in the lab — the file on disk lags behind what people see, and writing the file makes the room
replace the whole shared document from disk, losing what was typed since its last save. The
notebook tool therefore changes the shared document itself when there is one. This module only
answers "which document, if any": through ``jupyter_server_ydoc``'s public
``get_document(path=..., content_type="notebook", file_format="json", copy=False)`` — never with
``create``, which other implementations reject — and "none" when the extension is absent, real
time collaboration is disabled, no room is open or the room has not loaded its notebook yet —
and runs the edit core on that document in one transaction (:func:`in_transaction`).

jupyter-server-documents (Jupyter AI 3's collaboration backend) publishes a compatible
``get_document`` under the same setting, but its ``get_document`` opens a room (and gives the
file an id) for any path it is asked about. Its rooms are therefore looked up without that
call: the file's id if it has one (``get_id``, never ``index``), then ``has_room`` of its room
manager; only an existing, running room's document is used (``details.via`` is then
``jupyter-server-documents``). When its outputs service is on (``OutputProcessor.
use_outputs_service``), cells in the document hold placeholders whose outputs live in its
``OutputsManager``, which also writes them into the saved file: :class:`OutputsStore` writes
and reads them through that manager's ``write``/``clear``/``get_output``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from jupyter_xcsh.errors import ConflictError
from jupyter_xcsh.notebook.rooms.shared import SharedNotebook, is_loaded
from jupyter_xcsh.notebook.rooms.undo import UndoCapture

T = TypeVar("T")

#: The origin of the tool's transactions on shared documents.
ORIGIN = "jupyter-xcsh"
#: Seconds to wait for another task's transaction on the document (a room reloading the file
#: holds one across awaits) before answering 409.
BUSY_TIMEOUT = 30.0

log = logging.getLogger(__name__)

#: The server setting under which jupyter_server_ydoc publishes its extension app.
YDOC_SETTING = "jupyter_server_ydoc"
#: ``details.via`` of a jupyter-collaboration room's live document.
VIA_DOCUMENT = "document"
#: ``details.via`` of a jupyter-server-documents room's live document.
VIA_SERVER_DOCUMENTS = "jupyter-server-documents"
#: The server setting of jupyter-server-documents' outputs store (None when it is off).
OUTPUTS_SETTING = "outputs_manager"


def _server_documents(extension: Any) -> bool:
    """Whether the collaboration API published is jupyter-server-documents'."""
    return type(extension).__module__.startswith("jupyter_server_documents.")


class OutputsStore:
    """jupyter-server-documents' outputs store for one notebook: placeholders in the document.

    Through the ``OutputsManager``'s public methods: ``clear(file_id, cell_id)``,
    ``write(file_id, cell_id, output)`` (stores the output, returns its placeholder: the
    output type and ``metadata.url``, ``/api/outputs/<file_id>/<cell_id>/<n>.output``) and
    ``get_output(file_id, cell_id, n)``. The manager keeps the outputs of each cell by id and
    puts them in the file when the room saves it.
    """

    def __init__(self, manager: Any, file_id: str) -> None:
        """``manager``: the ``OutputsManager``; ``file_id``: the notebook's file id."""
        self.manager = manager
        self.file_id = file_id

    def placeholders(self, cell_id: str, outputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Store ``outputs`` as the cell's only outputs; their placeholders for the document."""
        self.manager.clear(self.file_id, cell_id)
        return [
            dict(self.manager.write(self.file_id, cell_id, output, None, asdict=True))
            for output in outputs
        ]

    def resolve(self, cell: dict[str, Any]) -> dict[str, Any]:
        """``cell`` (from the document) with each placeholder output replaced by its output."""
        outputs = cell.get("outputs")
        if not outputs or not any(self._index(o) is not None for o in outputs):
            return cell
        resolved = []
        for output in outputs:
            index = self._index(output)
            if index is not None:
                # Gone from the store (or unreadable): the placeholder is shown as it is.
                with contextlib.suppress(OSError, ValueError):
                    output = self.manager.get_output(self.file_id, cell["id"], index)
            resolved.append(output)
        return {**cell, "outputs": resolved}

    def _index(self, output: Any) -> int | None:
        metadata = output.get("metadata") if isinstance(output, dict) else None
        url = metadata.get("url") if isinstance(metadata, dict) else None
        prefix = f"/api/outputs/{self.file_id}/"
        if not isinstance(url, str) or not url.startswith(prefix) or not url.endswith(".output"):
            return None
        number = url.rsplit("/", 1)[-1].removesuffix(".output")
        return int(number) if number.isdigit() else None


class LiveDocuments:
    """Look up open collaboration rooms' shared notebooks in the server's settings."""

    def __init__(self, settings: Mapping[str, Any], load_timeout: float = 5.0) -> None:
        """Look documents up in the server's ``settings`` (``web_app.settings``).

        They are read at each lookup because extensions may load after this one.
        ``load_timeout``: seconds to wait for a room that is still loading its notebook; after
        that the notebook counts as not shared.
        """
        self.settings = settings
        self.load_timeout = load_timeout

    def _extension(self) -> Any:
        extension = self.settings.get(YDOC_SETTING)
        if extension is None or getattr(extension, "disable_rtc", False):
            return None
        return extension if callable(getattr(extension, "get_document", None)) else None

    @property
    def available(self) -> bool:
        """Whether real time collaboration is installed, enabled and offers ``get_document``."""
        return self._extension() is not None

    @property
    def via(self) -> str:
        """What ``details.via`` calls a live document here (which collaboration backend)."""
        extension = self._extension()
        return VIA_SERVER_DOCUMENTS if _server_documents(extension) else VIA_DOCUMENT

    def outputs_store(self, api_path: str) -> OutputsStore | None:
        """jupyter-server-documents' outputs store for ``api_path`` when it is on, else None."""
        extension = self._extension()
        manager = self.settings.get(OUTPUTS_SETTING)
        if extension is None or manager is None or not _server_documents(extension):
            return None
        file_id = extension.fileid_manager.get_id(api_path)
        return None if file_id is None else OutputsStore(manager, file_id)

    async def find(self, api_path: str) -> Any:
        """The loaded ``YNotebook`` of the room open for ``api_path``, or None."""
        extension = self._extension()
        if extension is None:
            return None
        if _server_documents(extension):
            return await self._find_room(extension, api_path)
        deadline = time.monotonic() + self.load_timeout
        delay = 0.01
        while True:
            try:
                document = await extension.get_document(
                    path=api_path, content_type="notebook", file_format="json", copy=False
                )
            except Exception:  # the collaboration layer's own trouble: fall back to the file
                log.warning(
                    "Could not look up a collaboration room for %s", api_path, exc_info=True
                )
                return None
            if document is None or not hasattr(document, "ycells"):
                return None
            if is_loaded(document):
                return document
            # A room between its creation and its first load (a lab tab connecting right now).
            if time.monotonic() >= deadline:
                log.warning("The collaboration room of %s did not load; using the file", api_path)
                return None
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.2)

    async def _find_room(self, extension: Any, api_path: str) -> Any:
        """jupyter-server-documents: the document of a room already open, never a new room."""
        try:
            file_id = extension.fileid_manager.get_id(api_path)
            rooms = extension.yroom_manager
            room_id = f"json:notebook:{file_id}"
            if file_id is None or not rooms.has_room(room_id):
                return None
            room = rooms.get_room(room_id)
            if room is None or room.stopped:
                return None
            document = await asyncio.wait_for(room.get_jupyter_ydoc(), self.load_timeout)
        except TimeoutError:
            log.warning("The collaboration room of %s did not load; using the file", api_path)
            return None
        except Exception:  # the collaboration layer's own trouble: fall back to the file
            log.warning("Could not look up a collaboration room for %s", api_path, exc_info=True)
            return None
        if document is None or not hasattr(document, "ycells") or not is_loaded(document):
            return None
        return document


async def in_transaction(
    ynotebook: Any,
    path: str,
    use: Callable[[SharedNotebook], T],
    commit: bool = True,
    outputs: OutputsStore | None = None,
    undo: UndoCapture | None = None,
) -> T:
    """Run ``use`` (a read, or the edit core's changes) on a live notebook in one transaction.

    Synchronous from reading to committing, so no other task — a person's typing arriving from
    the room — changes the document between the state checked and the change. A transaction
    another task keeps open across awaits (a room replacing its document from the file does)
    is waited for rather than joined: joining would read or change a half-replaced document.
    ``path`` is the notebook as the caller named it (for the 409 after ``BUSY_TIMEOUT``);
    ``outputs``: the outputs store of jupyter-server-documents, when it holds the outputs.

    ``undo``: an agent call's capture (``undo.py``). The changes are then committed in a
    transaction of their own whose origin is the call's, right after the one ``use`` ran in,
    with no await between: the call's undo manager, which cannot be made inside a transaction,
    is made between the two.
    """
    transaction = await _free_transaction(ynotebook, path)
    with transaction:
        shared = SharedNotebook(ynotebook, outputs)
        value = use(shared)
        if commit and undo is None:
            shared.commit()
    if commit and undo is not None and shared.changed:
        undo.begin(ynotebook)
        with ynotebook.ydoc.transaction(origin=undo.origin):
            shared.commit()
        undo.end(ynotebook, shared.touched, shared.focus)
    return value


async def _free_transaction(ynotebook: Any, path: str) -> Any:
    """A transaction of the tool on ``ynotebook`` once no other task holds one (or a 409)."""
    deadline = time.monotonic() + BUSY_TIMEOUT
    while True:
        try:
            # With an origin, pycrdt refuses to join a transaction another task started.
            return ynotebook.ydoc.transaction(origin=ORIGIN)
        except RuntimeError:
            if time.monotonic() > deadline:
                raise ConflictError(
                    f"The live document of {path} is being replaced; try again",
                    reason="document_busy",
                ) from None
            await asyncio.sleep(0.02)


async def wait_until_free(ynotebook: Any, path: str) -> None:
    """Return once no transaction is open on ``ynotebook`` (an undo opens its own)."""
    with await _free_transaction(ynotebook, path):
        pass
