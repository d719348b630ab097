"""The live shared notebook of a path: what a collaboration room serves (docs/contract.md §4).

With jupyter-collaboration (≥ 3.0) installed and a room open for a notebook — someone has it open
in the lab — the file on disk lags behind what people see, and writing the file makes the room
replace the whole shared document from disk, losing what was typed since its last save. The
notebook tool therefore changes the shared document itself when there is one. This module only
answers "which document, if any": through ``jupyter_server_ydoc``'s public
``get_document(path=..., content_type="notebook", file_format="json", copy=False)`` — never with
``create``, which other implementations reject — and "none" when the extension is absent, real
time collaboration is disabled, no room is open or the room has not loaded its notebook yet —
and runs the edit core on that document in one transaction (:func:`in_transaction`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from ..errors import ConflictError
from .shared import SharedNotebook, is_loaded

T = TypeVar("T")

#: The origin of the tool's transactions on shared documents.
ORIGIN = "jupyter-xcsh"
#: Seconds to wait for another task's transaction on the document (a room reloading the file
#: holds one across awaits) before answering 409.
BUSY_TIMEOUT = 30.0

log = logging.getLogger(__name__)

#: The server setting under which jupyter_server_ydoc publishes its extension app.
YDOC_SETTING = "jupyter_server_ydoc"


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

    async def find(self, api_path: str) -> Any:
        """The loaded ``YNotebook`` of the room open for ``api_path``, or None."""
        extension = self._extension()
        if extension is None:
            return None
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


async def in_transaction(
    ynotebook: Any, path: str, use: Callable[[SharedNotebook], T], commit: bool = True
) -> T:
    """Run ``use`` (a read, or the edit core's changes) on a live notebook in one transaction.

    Synchronous from reading to committing, so no other task — a person's typing arriving from
    the room — changes the document between the state checked and the change. A transaction
    another task keeps open across awaits (a room replacing its document from the file does)
    is waited for rather than joined: joining would read or change a half-replaced document.
    ``path`` is the notebook as the caller named it (for the 409 after ``BUSY_TIMEOUT``).
    """
    deadline = time.monotonic() + BUSY_TIMEOUT
    while True:
        try:
            # With an origin, pycrdt refuses to join a transaction another task started.
            transaction = ynotebook.ydoc.transaction(origin=ORIGIN)
        except RuntimeError:
            if time.monotonic() > deadline:
                raise ConflictError(
                    f"The live document of {path} is being replaced; try again",
                    reason="document_busy",
                ) from None
            await asyncio.sleep(0.02)
            continue
        with transaction:
            shared = SharedNotebook(ynotebook)
            value = use(shared)
            if commit:
                shared.commit()
        return value
