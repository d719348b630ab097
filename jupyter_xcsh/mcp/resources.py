"""Notebooks and runs as MCP resources: listed (paged), read, and subscribed to.

A notebook's URI is ``notebook:///<API path>`` (each segment percent-encoded; the host is left
empty so no client lower-cases a folder's name). ``resources/list`` walks the contents root as
the contents API lists it (hidden files only when the server shows them), bounded, in pages;
``resources/read`` answers the notebook tool's ``read`` view. Both ask what the notebook
tool's ``read`` asks: ``read`` on ``contents``.

``resources/subscribe`` on a notebook → ``notifications/resources/updated`` when it changes,
whoever changes it: a person typing in a collaboration room (its cells' ids, types and
sources: the notebook's revision), a save from the lab or any other writer (the file's
modification time), an agent. The server being stateless, a subscription is kept for the
client's credential and ``Mcp-Session-Id``, and its notifications go out on that client's
``GET`` stream (streamable HTTP's stream for server messages). That stream's request looks at
the client's subscribed notebooks every ``POLL_INTERVAL`` seconds while it is open (a room's
document in memory, a file by its modification time only): nothing is looked at, and nothing
runs, while no stream is open.

A run (a python call or a run in place, which may outlive its request) is ``run://<run id>``
(the id as the host, as an artifact's ``artifact://<id>``): read, it is what ``run_id`` +
``wait: 0`` answers (its result, or its output so far and how to follow it); subscribed to, it
notifies each change — new output, a prompt waiting or answered — while it runs, and its end.
Reading and subscribing ask what following a run asks (``execute`` on ``kernels``). A run is
looked at as notebooks are, every ``POLL_INTERVAL`` seconds (its count of events, whether it
waits, whether it runs: nothing is read), so a busy run notifies at most twice a second.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote, unquote, urlsplit

from jupyter_server.utils import ensure_async
from tornado.web import HTTPError

from jupyter_xcsh.errors import NotFoundError, XcshError
from jupyter_xcsh.events.activity import CALL_ID
from jupyter_xcsh.notebook.model import notebook_revision
from jupyter_xcsh.notebook.storage.store import NotebookStore
from jupyter_xcsh.runs.registry import RunRegistry

__all__ = [
    "NOTEBOOK_TEMPLATE",
    "RUN_TEMPLATE",
    "Subscriptions",
    "list_notebooks",
    "new_session_id",
    "notebook_path",
    "notebook_uri",
    "run_id",
    "run_uri",
    "updated",
]

log = logging.getLogger(__name__)

SCHEME = "notebook"
NOTEBOOK_TEMPLATE = {
    "uriTemplate": "notebook:///{path}",
    "name": "notebook",
    "title": "Notebook (agent view)",
    "description": "A notebook of the contents root, read as the notebook tool's read view.",
    "mimeType": "text/plain",
}
RUN_SCHEME = "run"
RUN_TEMPLATE = {
    "uriTemplate": "run://{id}",
    "name": "run",
    "title": "Run (python call or run in place)",
    "description": (
        "A run by its id (runId, a task's taskId): its result, or its output so far while it "
        "runs; subscribe to be told of its output, its prompts and its end."
    ),
    "mimeType": "text/plain",
}
#: Notebooks per ``resources/list`` page, and found at most (the walk stops there).
PAGE_SIZE, MAX_LISTED = 100, 5000
#: Folders the walk opens at most, and how deep it goes below the root.
MAX_FOLDERS, MAX_DEPTH = 1000, 8
#: Seconds between two looks at the subscribed notebooks.
POLL_INTERVAL = 0.5
#: Notebooks one client (credential and session) may be subscribed to, and clients kept.
MAX_PER_CLIENT, MAX_CLIENTS = 100, 1000


def new_session_id() -> str:
    """An ``Mcp-Session-Id`` for a client: it keys its subscriptions and notification stream."""
    return "xcsh-session-" + uuid.uuid4().hex


def notebook_uri(api_path: str) -> str:
    """The resource URI of the notebook at ``api_path``."""
    return f"{SCHEME}:///{quote(api_path.strip('/'), safe='/')}"


def notebook_path(uri: str) -> str | None:
    """The API path a ``notebook:///`` URI names (None for another URI)."""
    parts = urlsplit(uri)
    if parts.scheme != SCHEME or parts.netloc or parts.query or parts.fragment:
        return None
    path = unquote(parts.path).strip("/")
    return path or None


def run_uri(run: str) -> str:
    """The resource URI of the run ``run`` (its id)."""
    return f"{RUN_SCHEME}://{run}"


def run_id(uri: str) -> str | None:
    """The run id a ``run://`` URI names (None for another URI, or not a run id's shape)."""
    parts = urlsplit(uri)
    if parts.scheme != RUN_SCHEME or parts.path or parts.query or parts.fragment:
        return None
    return parts.netloc if CALL_ID.fullmatch(parts.netloc) else None


async def list_notebooks(contents_manager: Any) -> list[str]:
    """The API paths of the notebooks in the root, sorted, as the contents API lists them.

    Breadth first, at most ``MAX_FOLDERS`` folders, ``MAX_DEPTH`` deep, ``MAX_LISTED`` found.
    """
    found: list[str] = []
    folders = [("", 0)]
    opened = 0
    while folders and opened < MAX_FOLDERS and len(found) < MAX_LISTED:
        folder, depth = folders.pop(0)
        opened += 1
        try:
            model = await ensure_async(contents_manager.get(folder, content=True, type="directory"))
        except Exception:  # unreadable, gone meanwhile: not listed
            continue
        for entry in sorted(model.get("content") or [], key=lambda e: str(e.get("path"))):
            if entry.get("type") == "notebook":
                found.append(str(entry["path"]))
            elif entry.get("type") == "directory" and depth + 1 <= MAX_DEPTH:
                folders.append((str(entry["path"]), depth + 1))
    return sorted(found[:MAX_LISTED])


class Subscriptions:
    """Who is subscribed to which notebook, and which of them changed since last looked at."""

    def __init__(self, store: NotebookStore, runs: RunRegistry | None = None) -> None:
        self.store = store
        self.runs = runs
        # client key -> {uri: (api path or run id, last fingerprint)}
        self._subscribed: dict[str, dict[str, tuple[str, object]]] = {}
        self._streaming: dict[str, int] = {}  # client key -> notification streams open

    async def fingerprint(self, uri: str, target: str) -> object:
        """What changes when ``uri``'s resource changes (``target``: its API path or run id).

        A notebook: a room's revision, else the file's time. A run: its count of events (its
        output), whether a prompt waits, whether it runs. ``NotFoundError`` when it is not
        there (any more).
        """
        if run_id(uri) is not None:
            if self.runs is None:
                raise NotFoundError(f"No such run: {target}")
            run = self.runs.get(target)
            return ("run", run.events.next, run.waiting, run.running)
        api_path = target
        live = None if self.store.live is None else await self.store.live.find(api_path)
        if live is not None:
            snapshot = await self.store.snapshot(api_path)
            return ("room", notebook_revision(snapshot.keys))
        cm = self.store.contents_manager
        try:
            model = await ensure_async(cm.get(api_path, content=False))
        except HTTPError as e:
            if e.status_code == 404:  # gone (deleted since it was read)
                raise NotFoundError(f"Notebook not found: {api_path}") from None
            raise
        return ("file", str(model.get("last_modified")))

    async def subscribe(self, client: str, uri: str, target: str) -> None:
        """Subscribe ``client`` to ``uri`` (``target``: its API path or run id).

        ``XcshError`` when past the bounds, ``NotFoundError`` when it is not there.
        """
        subscribed = self._subscribed.get(client, {})
        if uri not in subscribed and len(subscribed) >= MAX_PER_CLIENT:
            raise XcshError(f"At most {MAX_PER_CLIENT} subscriptions per client")
        fingerprint = await self.fingerprint(uri, target)
        if client not in self._subscribed and len(self._subscribed) >= MAX_CLIENTS:
            # The oldest client without an open stream gives way.
            idle = next((key for key in self._subscribed if key not in self._streaming), None)
            if idle is None:
                raise XcshError(f"At most {MAX_CLIENTS} subscribed clients")
            del self._subscribed[idle]
        self._subscribed.setdefault(client, {})[uri] = (target, fingerprint)

    def unsubscribe(self, client: str, uri: str) -> None:
        """End ``client``'s subscription to ``uri`` (nothing when there is none)."""
        subscribed = self._subscribed.get(client)
        if subscribed is not None:
            subscribed.pop(uri, None)
            if not subscribed:
                del self._subscribed[client]

    def subscribed(self, client: str) -> list[str]:
        """The URIs ``client`` is subscribed to."""
        return list(self._subscribed.get(client, {}))

    @contextlib.contextmanager
    def streaming(self, client: str) -> Iterator[None]:
        """Mark ``client``'s notification stream open for the duration of the block."""
        self._streaming[client] = self._streaming.get(client, 0) + 1
        try:
            yield
        finally:
            self._streaming[client] -= 1
            if not self._streaming[client]:
                del self._streaming[client]

    async def changed(self, client: str) -> list[str]:
        """The URIs of ``client``'s subscriptions whose notebook changed since last looked."""
        found = []
        for uri, (target, before) in list(self._subscribed.get(client, {}).items()):
            try:
                now = await self.fingerprint(uri, target)
            except Exception:  # gone, unreadable: "changed" once, then quiet
                now = None
            subscribed = self._subscribed.get(client, {})
            if now != before and uri in subscribed:
                subscribed[uri] = (target, now)
                found.append(uri)
        return found


def updated(uri: str) -> dict[str, Any]:
    """The ``notifications/resources/updated`` message of ``uri``."""
    return {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": uri}}
