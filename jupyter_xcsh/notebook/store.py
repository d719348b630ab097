"""The one place notebooks are read and saved: through the server's contents manager.

Going through ``contents_manager`` (never ``open()``) keeps atomic writes, pre/post-save hooks,
contents events and non-disk contents managers working. Requests on one notebook are
serialised by a per-path lock; the text is saved only after the whole change succeeded, so a
failed request leaves the file as it was.
"""

from __future__ import annotations

import asyncio
import os
import weakref
from datetime import datetime
from typing import Any

from jupyter_core.utils import ensure_async
from tornado.web import HTTPError

from ..errors import InvalidDocumentError, NotFoundError, RefusedError
from ..paths import escapes_root, to_api_path
from .cells import NotebookRequest, apply_change
from .document import NoCellsError, NotebookDocument, NotJSONError
from .reader import ReadLimits, read_view


class NotebookStore:
    """Load, change and save notebooks through a Jupyter contents manager."""

    def __init__(self, contents_manager: Any, limits: ReadLimits | None = None) -> None:
        self.contents_manager = contents_manager
        self.limits = limits or ReadLimits()
        # One lock per notebook, dropped once no request holds or awaits it.
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()

    def _os_path(self, api_path: str) -> str | None:
        """The file system path of a file-backed contents manager; None for other backends."""
        get_os_path = getattr(self.contents_manager, "_get_os_path", None)
        if get_os_path is None:
            return None
        try:
            return str(get_os_path(api_path))
        except HTTPError:
            raise RefusedError(f"Path is outside the contents root: {api_path}") from None

    def _lock(self, key: str) -> asyncio.Lock:
        lock = self._locks.get(key)
        if lock is None:
            lock = self._locks[key] = asyncio.Lock()
        return lock

    async def resolve(self, path: str) -> tuple[str, str]:
        """Return the API path for a caller's path, enforcing root and hidden-file policy.

        Also returns the key of the notebook's lock: its real file when the contents manager
        has one, so two names of one file share a lock; else the API path.
        """
        cm = self.contents_manager
        api_path = to_api_path(path, cm.root_dir)
        os_path = self._os_path(api_path)
        if os_path is not None and escapes_root(os_path, cm.root_dir):
            raise RefusedError(f"Path is outside the contents root: {path}")
        if not cm.allow_hidden and await ensure_async(cm.is_hidden(api_path)):
            # As the server itself answers for hidden files: as if they did not exist.
            raise NotFoundError(f"Notebook not found: {path}")
        return api_path, os.path.realpath(os_path) if os_path is not None else api_path

    def api_path(self, request: NotebookRequest) -> str:
        """The API path a (successfully resolved) request addressed."""
        return to_api_path(request.notebook_path, self.contents_manager.root_dir)

    async def _load(self, api_path: str, path: str) -> tuple[NotebookDocument, str | None]:
        """The parsed notebook and the ``last_modified`` of the text it was parsed from."""
        cm = self.contents_manager
        if not await ensure_async(cm.file_exists(api_path)):
            raise NotFoundError(f"Notebook not found: {path}")
        try:
            model = await ensure_async(cm.get(api_path, content=True, type="file", format="text"))
        except HTTPError as e:
            if e.status_code == 404:
                raise NotFoundError(f"Notebook not found: {path}") from None
            if e.status_code == 400:
                # Not UTF-8 text, so certainly not notebook JSON.
                raise InvalidDocumentError(f"Invalid JSON in notebook: {path}") from None
            raise  # the contents manager's own answer (a permission problem, a fault)
        document = await asyncio.to_thread(_parse, model["content"], path)
        return document, _timestamp(model.get("last_modified"))

    async def read(self, request: NotebookRequest) -> dict[str, Any]:
        """Answer a ``read`` request with the bounded view of the notebook."""
        api_path, _ = await self.resolve(request.notebook_path)
        document, last_modified = await self._load(api_path, request.notebook_path)
        result = read_view(document, request, self.limits)
        result["details"]["lastModified"] = last_modified
        return result

    async def change(self, request: NotebookRequest) -> dict[str, Any]:
        """Apply an edit/insert/delete/move request and save the notebook (all or nothing)."""
        api_path, lock_key = await self.resolve(request.notebook_path)
        async with self._lock(lock_key):
            document, last_modified = await self._load(api_path, request.notebook_path)
            result, text = await asyncio.to_thread(_apply, document, request)
            if text is not None:
                model = {"type": "file", "format": "text", "content": text}
                saved = await ensure_async(self.contents_manager.save(model, api_path))
                last_modified = _timestamp(saved.get("last_modified"))
        details = dict(result.details, lastModified=last_modified)
        return {"text": result.text, "details": details}


def _parse(text: str, path: str) -> NotebookDocument:
    try:
        return NotebookDocument.parse(text)
    except NotJSONError:
        raise InvalidDocumentError(f"Invalid JSON in notebook: {path}") from None
    except NoCellsError:
        raise InvalidDocumentError(
            f"Invalid notebook structure (missing cells array): {path}"
        ) from None


def _apply(document: NotebookDocument, request: NotebookRequest) -> tuple[Any, str | None]:
    result = apply_change(document, request)
    return result, document.dumps() if result.changed else None


def _timestamp(value: Any) -> str | None:
    if isinstance(value, datetime):
        return value.isoformat()
    return value if isinstance(value, str) else None
