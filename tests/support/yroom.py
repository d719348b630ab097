"""A person in a notebook's collaboration room, for tests: a real Yjs client over the websocket.

It does what a JupyterLab tab does to join a notebook's room — ``PUT
/api/collaboration/session/<path>`` then the room's websocket, speaking the Yjs sync protocol
through ``pycrdt.Provider`` — and can type into cells. Joining a room needs jupyter-collaboration
(pycrdt, jupyter_ydoc) in the environment; importing this module does not.

With jupyter-server-documents (no session endpoint) it does what that backend's lab plugin does:
``POST /api/fileid/index?path=<path>`` for the file's id, then the room
``json:notebook:<id>``'s websocket.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import threading
import time
from collections.abc import Callable, Coroutine
from typing import Any, Self, TypeVar
from urllib.parse import quote

from tornado.httpclient import AsyncHTTPClient, HTTPClientError, HTTPRequest
from tornado.websocket import WebSocketClientConnection, websocket_connect

T = TypeVar("T")


class _Channel:
    """A tornado websocket as the ``pycrdt.Channel`` a provider synchronises through.

    Awareness messages (which the provider ignores) go to ``awareness`` when given.
    """

    def __init__(
        self, connection: WebSocketClientConnection, path: str, awareness: Any = None
    ) -> None:
        self._connection = connection
        self._path = path
        self._awareness = awareness

    @property
    def path(self) -> str:
        return self._path

    def __aiter__(self) -> _Channel:
        return self

    async def __anext__(self) -> bytes:
        from pycrdt import YMessageType, read_message

        while True:
            message = await self._connection.read_message()
            if message is None:
                raise StopAsyncIteration
            data = message if isinstance(message, bytes) else message.encode()
            if self._awareness is None or not data or data[0] != YMessageType.AWARENESS:
                return data
            self._awareness.apply_awareness_update(read_message(data[1:]), "remote")

    async def recv(self) -> bytes:
        return await self.__anext__()

    async def send(self, message: bytes) -> None:
        await self._connection.write_message(message, binary=True)


class RoomClient:
    """One collaborator with a notebook open: ``async with RoomClient(...) as person: ...``."""

    def __init__(
        self, server_url: str, headers: dict[str, str], path: str, load_timeout: float = 60.0
    ) -> None:
        """``server_url``: ``http://127.0.0.1:<port>/<base_url>`` (ending with ``/``);
        ``load_timeout``: seconds to wait for the room to send the notebook."""
        self.server_url = server_url
        self.load_timeout = load_timeout
        self.headers = headers
        self.path = path
        from jupyter_ydoc import YNotebook  # here: the module imports without collaboration

        self.doc = YNotebook()
        self._connection: WebSocketClientConnection | None = None
        self._provider: Any = None
        self._task: asyncio.Task[None] | None = None

    async def _room_url(self) -> tuple[str, str]:
        """The room's name and websocket path (under the server's URL)."""
        try:
            response = await AsyncHTTPClient().fetch(
                f"{self.server_url}api/collaboration/session/{quote(self.path)}",
                method="PUT",
                request_timeout=self.load_timeout,
                headers={**self.headers, "Content-Type": "application/json"},
                body=json.dumps({"format": "json", "type": "notebook"}),
            )
        except HTTPClientError as e:
            if e.code != 404:
                raise
            # jupyter-server-documents: the file's id, then its room.
            response = await AsyncHTTPClient().fetch(
                f"{self.server_url}api/fileid/index?path={quote(self.path)}",
                method="POST",
                request_timeout=self.load_timeout,
                headers=self.headers,
                body=b"",
            )
            room = f"json:notebook:{json.loads(response.body)['id']}"
            return room, f"api/collaboration/room/{room}"
        session = json.loads(response.body)
        room = f"{session['format']}:{session['type']}:{session['fileId']}"
        return room, f"api/collaboration/room/{room}?sessionId={session['sessionId']}"

    async def __aenter__(self) -> RoomClient:
        room, room_path = await self._room_url()
        ws_url = self.server_url.replace("http", "ws", 1)
        request = HTTPRequest(
            f"{ws_url}{room_path}",
            headers=self.headers,
            request_timeout=self.load_timeout,
        )
        # A large notebook comes as one message (tornado's default cap is 10 MiB).
        self._connection = await websocket_connect(request, max_message_size=1 << 30)
        from pycrdt import Awareness, Provider

        #: The room's awareness as this collaborator receives it (other clients' states).
        self.awareness = Awareness(self.doc.ydoc)
        channel = _Channel(self._connection, room, self.awareness)
        self._provider = Provider(self.doc.ydoc, channel)
        started = asyncio.Event()

        async def serve() -> None:
            async with self._provider:
                started.set()
                await asyncio.Event().wait()  # until cancelled

        self._task = asyncio.create_task(serve())
        await started.wait()
        await self.wait_for(
            lambda: self.doc.cell_number > 0, "the room to send the notebook", self.load_timeout
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
        if self._connection is not None:
            self._connection.close()

    def sources(self) -> list[str]:
        """The cells' sources as this collaborator sees them."""
        return [str(ycell["source"]) for ycell in self.doc.ycells]

    def ids(self) -> list[str]:
        """The cells' ids as this collaborator sees them."""
        return [str(ycell["id"]) for ycell in self.doc.ycells]

    def others(self) -> list[dict[str, Any]]:
        """The awareness states of the room's other clients, as this collaborator sees them."""
        own = self.awareness.client_id
        return [state for client, state in self.awareness.states.items() if client != own]

    def type(self, cell_index: int, text: str, at: int | None = None) -> None:
        """Type ``text`` into a cell (at a UTF-8 byte offset; default the end), unsaved."""
        ytext = self.doc.ycells[cell_index]["source"]
        ytext.insert(len(ytext) if at is None else at, text)

    async def wait_for(
        self, condition: Callable[[], bool], what: str, timeout: float = 60.0
    ) -> None:
        """Wait until ``condition()`` holds (updates arrive asynchronously), or fail."""
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}")
            await asyncio.sleep(0.05)


class RoomOnThread:
    """A ``RoomClient`` run on an event loop of its own thread, for synchronous callers.

    ``with RoomOnThread(...) as room: room.run(coroutine)``; ``room.client`` is the
    ``RoomClient`` (use it only from coroutines run on that loop). pycrdt objects must live and
    die on one thread: the client is made, left and released on the loop's thread.
    """

    def __init__(
        self, server_url: str, headers: dict[str, str], path: str, load_timeout: float = 60.0
    ) -> None:
        """The arguments are ``RoomClient``'s."""
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self._make = lambda: RoomClient(server_url, headers, path, load_timeout)
        self._join_timeout = load_timeout + 60
        self.client: RoomClient

    def _serve(self) -> None:
        self.loop.run_forever()
        # Everything the client made is released here, on its own thread (pycrdt < 0.14
        # raises when an object of a document is dropped on another thread).
        self.loop.run_until_complete(self.loop.shutdown_asyncgens())
        self.loop.close()
        gc.collect()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 90) -> T:
        """Run ``coro`` on the room's loop; wait up to ``timeout`` seconds for its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def __enter__(self) -> Self:
        async def join() -> None:
            self.client = self._make()
            await self.client.__aenter__()

        self.thread.start()
        self.run(join(), timeout=self._join_timeout)
        return self

    def __exit__(self, *exc: object) -> None:
        async def leave() -> None:
            await self.client.__aexit__()
            del self.client  # dropped on this thread (see _serve)

        try:
            self.run(leave())
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(60)
