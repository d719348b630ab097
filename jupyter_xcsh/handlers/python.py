"""``POST /api/xcsh/python``: the python tool, as one JSON result or an NDJSON stream."""

from __future__ import annotations

import functools
import json
from typing import Any

from tornado import web
from tornado.iostream import StreamClosedError

from jupyter_xcsh.calls.control import CallControl
from jupyter_xcsh.calls.observer import ExecutionObserver
from jupyter_xcsh.errors import XcshError, status_for
from jupyter_xcsh.handlers.base import DomainHTTPError, XcshAPIHandler, tool_authorized
from jupyter_xcsh.services import XcshServices
from jupyter_xcsh.tools.python.tool import PythonTool

#: The media type that asks for a stream of JSON lines.
NDJSON = "application/x-ndjson"


#: Bytes written to a streaming client but not yet taken by its socket, past which further
#: output chunks are coalesced (only their tail is kept) until the client catches up.
MAX_PENDING_BYTES = 1024 * 1024


class StreamWriter(ExecutionObserver):
    """Write each progress callback of a call as one JSON line, flushed at once.

    Memory stays bounded whatever the client's pace: an output chunk that would take the bytes
    waiting for the client past ``max_pending`` is not written whole but coalesced per cell,
    keeping only the last ``max_tail`` bytes; as soon as the client has room, one chunk per
    cell carries that tail and ``skipped``, the bytes left out before it. The final result and
    the artifact hold everything.
    """

    def __init__(
        self,
        handler: PythonHandler,
        *,
        max_tail: int,
        max_pending: int = MAX_PENDING_BYTES,
    ) -> None:
        self.handler = handler
        self.max_tail = max_tail
        self.max_pending = max_pending
        self.started = False  # whether a line was written (the response has begun)
        self.pending = 0  # bytes written whose flush has not completed
        self.peak_pending = 0
        self._held: dict[int, tuple[str, int]] = {}  # cell -> (tail, bytes skipped)

    def send(self, event: dict[str, Any]) -> None:
        """Write ``event`` as a line (after any held output); a client gone cancels the call."""
        self._release()
        self._write(event)

    def _write(self, event: dict[str, Any]) -> None:
        handler = self.handler
        if handler.gone:
            return
        data = (json.dumps(event) + "\n").encode()
        self.started = True
        try:
            handler.write(data)
            future = handler.flush()
        except StreamClosedError:
            handler.on_connection_close()
            return
        self.pending += len(data)
        self.peak_pending = max(self.peak_pending, self.pending)
        future.add_done_callback(functools.partial(self._flushed, len(data)))

    def _flushed(self, size: int, future: Any) -> None:
        self.pending -= size
        self.handler.flushed(future)
        if self.pending < self.max_pending:
            self._release()

    def _hold(self, index: int, text: str) -> None:
        tail, skipped = self._held.get(index, ("", 0))
        kept = (tail + text).encode()
        cut = max(0, len(kept) - self.max_tail)
        while cut < len(kept) and kept[cut] & 0xC0 == 0x80:  # a whole character
            cut += 1
        self._held[index] = (kept[cut:].decode(), skipped + cut)

    def _release(self) -> None:
        held, self._held = self._held, {}
        for index, (tail, skipped) in held.items():
            self._write({"type": "chunk", "index": index, "text": tail, "skipped": skipped})

    def chunk(self, index: int, text: str) -> None:  # noqa: D102
        # A chunk that does not fit (one kernel message may hold megabytes) is cut to its tail.
        if self.pending + len(text) > self.max_pending:
            self._hold(index, text)
            if self.pending < self.max_pending:
                self._release()
        else:
            self.send({"type": "chunk", "index": index, "text": text})

    def call_started(self, call: dict[str, Any]) -> None:  # noqa: D102
        self.send({"type": "start", **call})

    def cell_status(self, index: int, status: str) -> None:  # noqa: D102
        self.send({"type": "cell", "index": index, "status": status})

    def display(self, index: int, kind: str, data: Any) -> None:  # noqa: D102
        self.send({"type": "display", "index": index, "kind": kind, "data": data})

    def status_event(self, index: int, event: dict[str, Any]) -> None:  # noqa: D102
        self.send({"type": "status", "index": index, "event": event})

    def input_requested(self, index: int, prompt: dict[str, Any]) -> None:  # noqa: D102
        self.send({"type": "input", "index": index, "state": "waiting", **prompt})

    def input_ended(self, how: str) -> None:  # noqa: D102
        self.send({"type": "input", "state": how})


class PythonHandler(XcshAPIHandler):
    """Run cells of code in a kernel of the server (docs/developers/contract.md §5).

    Body: ``{"cells": [{"code", "title"?}], "timeout"?, "cwd"?, "reset"?, "session"?, "mode"?,
    "kernel_name"?}``. Answers 200 with the result, code errors and timeouts included
    (``isError``); with ``Accept: application/x-ndjson``, 200 with one JSON line per progress
    event and the result last (``{"type": "result", "result": ...}``). 400 for a malformed body
    or working directory, 403 for a caller without ``execute`` on ``kernels`` or a directory
    outside the root. A client that disconnects interrupts its call.
    """

    auth_resource = PythonTool.permission.resource
    control: CallControl | None = None
    writer: StreamWriter | None = None
    gone = False

    @web.authenticated
    @tool_authorized(PythonTool)
    async def post(self) -> None:
        """Run one python tool call."""
        await self.call_tool(self.services.python)

    async def call_tool(self, tool: Any) -> None:
        """Call ``tool`` (a tool with the python tool's call and result) and write its answer."""
        body = self.json_body()
        self.control = CallControl()
        if NDJSON not in self.request.headers.get("Accept", "") or not self.streams(body):
            with self.domain_errors():
                result = await tool.call(body, self.caller, control=self.control)
            self.finish(json.dumps(result))
            return
        self.set_header("Content-Type", NDJSON)
        self.set_header("Cache-Control", "no-cache")
        if self.request.connection is not None and hasattr(self.request.connection, "stream"):
            # Without this, back-to-back small lines wait on delayed ACKs (~40 ms each).
            self.request.connection.stream.set_nodelay(True)
        self.writer = writer = StreamWriter(self, max_tail=self.services.settings.max_output_bytes)
        try:
            result = await tool.call(body, self.caller, writer, self.control)
            line: dict[str, Any] = {"type": "result", "result": result}
        except XcshError as e:
            if not writer.started:  # refused before anything ran: a plain HTTP error
                raise DomainHTTPError(e) from None
            line = {"type": "error", "status": status_for(e), **e.body()}
        writer.send(line)
        if not self.gone:
            self.finish()

    def streams(self, body: Any) -> bool:
        """Whether a call with ``body`` runs code, and so may answer as a stream."""
        return True

    def flushed(self, future: Any) -> None:
        """Notice a failed flush (the client went away) and cancel the call."""
        if future.cancelled() or future.exception() is not None:
            self.on_connection_close()

    def on_connection_close(self) -> None:
        """Interrupt the call of a client that went away."""
        self.gone = True
        if self.control is not None:
            self.control.cancel()


def routes(services: XcshServices) -> list[tuple[str, type, dict[str, XcshServices]]]:
    """Return the python tool's URL routes."""
    return [(PythonTool.route, PythonHandler, {"services": services})]
