"""Agent activity on the server's event bus, so JupyterLab can show every tool call live.

The schemas are registered with the *server's* ``event_logger`` (as jupyter_server and
jupyter-collaboration do); the lab receives the events through ``/api/events/subscribe``.
Emitting never fails a tool call: a broken event is logged and dropped.

Events cost nothing on a call's path: with nobody listening (no lab on the bus, the activity
history turned off) they are not even built; the history (``history.py``) takes each event
in memory and writes a finished call on a thread of its own. Events for the bus go out a few
milliseconds later, in order — while the server waits for the
kernel, not between a call's answer and the next request — each shape of event is
validated against its schema once (``validation``), and an event skips
``EventLogger.emit``'s per-event deep copy and metadata validation (``emit``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
import uuid
from functools import cache
from pathlib import Path
from typing import Any, ClassVar

from jupyter_events import EventLogger

from jupyter_xcsh.calls.observer import ExecutionObserver
from jupyter_xcsh.events.emit import emit_event
from jupyter_xcsh.events.history import ActivityHistory
from jupyter_xcsh.events.origin import origin_of
from jupyter_xcsh.events.validation import ShapeValidatedSchema
from jupyter_xcsh.outputs.sink import sanitize

SCHEMA_DIR = Path(__file__).parent / "schemas"
NOTEBOOK_SCHEMA = "https://events.jupyter.org/jupyter_xcsh/notebook/v1"
PYTHON_SCHEMA = "https://events.jupyter.org/jupyter_xcsh/python/v1"

#: Largest cell source carried by a notebook event, in characters.
MAX_EVENT_SOURCE = 64 * 1024
#: Largest cell before a change (its JSON, in characters) carried by a notebook event; a larger
#: one is kept as an artifact and the event carries its id.
MAX_EVENT_CELL = 64 * 1024
#: Most characters of sources and cells-as-they-were one batch's event carries in all; past it,
#: later changes' cells go to artifacts and their sources are left out.
MAX_EVENT_BATCH = 1024 * 1024

#: Seconds an event waits before it goes out (with the others queued by then, in order).
EMIT_DELAY = 0.003

log = logging.getLogger(__name__)


#: A call id as ``new_call_id`` makes it (a run's id is its call's): 32 lowercase hex digits.
CALL_ID = re.compile(r"[0-9a-f]{32}")


def new_call_id() -> str:
    """Return a fresh id for one tool call (it matches ``CALL_ID``)."""
    return uuid.uuid4().hex


def change_entry(
    details: dict[str, Any],
    *,
    source: str | None,
    previous_cell: dict[str, Any] | None = None,
    previous_cell_artifact: str | None = None,
    restored: bool = False,
) -> dict[str, Any]:
    """One change of a batch as its event lists it: the fields a single change's event has."""
    entry = {
        "action": details.get("action"),
        "cellIndex": details.get("cellIndex"),
        "fromIndex": details.get("fromIndex"),
        "cellId": details.get("cellId"),
        "cellType": details.get("cellType"),
        "source": source,
        "sourceHash": details.get("sourceHash"),
        "revision": details.get("revision"),
        "previousCell": previous_cell,
        "previousCellArtifactId": previous_cell_artifact,
        "restored": True if restored else None,
    }
    return {key: value for key, value in entry.items() if value is not None}


def event_source(source: Any) -> str | None:
    """A cell source as a notebook event carries it: one string, cut to ``MAX_EVENT_SOURCE``."""
    if isinstance(source, list):
        source = "".join(s for s in source if isinstance(s, str))
    if not isinstance(source, str):
        return None
    return source[:MAX_EVENT_SOURCE]


@cache
def event_schemas() -> tuple[ShapeValidatedSchema, ...]:
    """The extension's event schemas, loaded once per process and shared by its servers.

    Loading them (their YAML, jupyter_events' check of each schema) was most of the cost of
    loading the extension, paid again by every server a process starts (a test suite starts
    hundreds). A shape of event found valid stays valid for every server: the schema is one.
    """
    return tuple(ShapeValidatedSchema.from_file(p) for p in sorted(SCHEMA_DIR.glob("*.yaml")))


class ActivityEvents:
    """Emit the extension's events on the server's event logger."""

    def __init__(
        self,
        event_logger: EventLogger | None,
        *,
        fast_emit: bool = True,
        history: ActivityHistory | None = None,
    ) -> None:
        """Emit on ``event_logger``; ``fast_emit`` False: through ``EventLogger.emit`` only.

        ``history``: where every event is also kept (``history.py``), listened to or not.
        """
        self.event_logger = event_logger
        self.history = history
        self._fast = fast_emit
        self._queue: list[tuple[str, dict[str, Any]]] = []
        self._loop: asyncio.AbstractEventLoop | None = None  # where the queue is emptied
        self._timer: asyncio.TimerHandle | None = None
        self._closed = False
        if event_logger is not None:
            for schema in event_schemas():
                # jupyter_events registers an EventSchema as it is (its annotation says dict).
                event_logger.register_event_schema(schema)  # type: ignore[arg-type]

    def listening(self, schema_id: str) -> bool:
        """Whether an event of ``schema_id`` would reach anyone (the history, a listener)."""
        return self.history is not None or self._bus_listening(schema_id)

    def redact(self, call_id: str) -> None:
        """Keep no output text of the call ``call_id`` in the history (it reads stdin)."""
        if self.history is not None:
            self.history.redact(call_id)

    def _bus_listening(self, schema_id: str) -> bool:
        """Whether an event of ``schema_id`` would reach a handler or a listener of the bus."""
        logger = self.event_logger
        if logger is None:
            return False
        if not self._fast:
            return True  # EventLogger.emit itself does nothing when nobody listens
        try:  # the test jupyter_events' own emit makes before doing anything
            return bool(
                logger.handlers
                or logger._modified_listeners.get(schema_id)
                or logger._unmodified_listeners.get(schema_id)
            )
        except AttributeError:  # another jupyter_events: let it decide
            return True

    def emit(self, schema_id: str, data: dict[str, Any]) -> None:
        """Emit one event ``EMIT_DELAY`` seconds from now, dropping ``None`` fields; never raise.

        The delay puts the work of events in the time the server waits for a kernel, not
        between a call's answer and the next request; events keep their order. ``data`` is
        not changed afterwards by the caller (the history takes it as it is, and drops its
        ``None`` fields on its own thread).
        """
        bus = self._bus_listening(schema_id)
        data = origin_of(data)  # the agent and trace of the call that an event starts
        if self.history is not None:
            try:
                self.history.record(schema_id, data)
            except Exception:  # the history must never break the tool call it reports
                log.warning("Could not keep an xcsh event of %s", schema_id, exc_info=True)
        if not bus:
            return
        payload = {k: v for k, v in data.items() if v is not None}
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop (a plain script): at once
            self._emit(schema_id, payload)
            return
        self._queue.append((schema_id, payload))
        if self._closed:  # the server is stopping: no timer left behind
            self._emit_queued()
        elif self._timer is None or loop is not self._loop:
            self._loop = loop
            self._timer = loop.call_later(EMIT_DELAY, self._emit_queued)

    async def close(self) -> None:
        """Send the queued events now and the later ones at once (the server is stopping)."""
        self._closed = True
        self._emit_queued()
        await asyncio.sleep(0)  # the listeners' tasks take their turn while the loop runs
        if self.history is not None:
            await asyncio.to_thread(self.history.close)

    def _emit_queued(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        queue, self._queue = self._queue, []
        for schema_id, payload in queue:
            self._emit(schema_id, payload)

    def _emit(self, schema_id: str, payload: dict[str, Any]) -> None:
        assert self.event_logger is not None
        try:
            if self._fast:
                emit_event(self.event_logger, schema_id, payload)
            else:
                self.event_logger.emit(schema_id=schema_id, data=payload)
        except Exception:  # an event must never break the tool call it reports
            log.warning("Dropped an xcsh event of %s", schema_id, exc_info=True)

    def notebook_call(
        self,
        action: str,
        path: str,
        result: dict[str, Any] | None = None,
        error: str | None = None,
        *,
        call_id: str | None = None,
        previous_cell: dict[str, Any] | None = None,
        previous_cell_artifact: str | None = None,
        restored: bool = False,
        changes: list[dict[str, Any]] | None = None,
    ) -> None:
        """Report one finished notebook tool call (its result, or its error message).

        A change also carries what the lab needs to revert it: the hashes the call left
        (``sourceHash``, ``revision``), the cell as it was before an edit or a delete
        (``previous_cell``, or the id of the artifact keeping a large one), and whether the call
        wrote a whole cell (``restored``: outputs and metadata too, not only a source). A batch
        is one call: ``changes`` lists its changes (``change_entry``), in order.
        """
        details = (result or {}).get("details", {})
        self.emit(
            NOTEBOOK_SCHEMA,
            {
                "callId": call_id or new_call_id(),
                "action": action,
                "path": path,
                "status": "error" if error is not None else "ok",
                "cellIndex": details.get("cellIndex", details.get("startIndex")),
                "fromIndex": details.get("fromIndex"),
                "cellId": details.get("cellId"),
                "cellType": details.get("cellType"),
                "source": event_source(details.get("cellSource")),
                "totalCells": details.get("totalCells"),
                "lastModified": details.get("lastModified"),
                "sourceHash": details.get("sourceHash"),
                "revision": details.get("revision"),
                "previousCell": previous_cell,
                "previousCellArtifactId": previous_cell_artifact,
                "restored": True if restored else None,
                "changes": changes,
                "error": error,
            },
        )


#: Output tail carried by one chunk event, in characters.
MAX_EVENT_TAIL = 4096
#: Largest base64 image carried by a display event (larger: described by size only).
MAX_EVENT_IMAGE = 1024 * 1024
#: Largest JSON display carried by an event, in serialised characters.
MAX_EVENT_JSON = 256 * 1024
#: Largest result text carried by a finished event.
MAX_EVENT_TEXT = 16 * 1024


class PythonCallEvents(ExecutionObserver):
    """Report one python tool call's progress as lab events.

    Output chunks are throttled (at most one event per ``interval`` seconds per call) and carry
    only the latest tail of the cell's output, so a call printing megabytes cannot flood the
    event bus; a cell's final tail is always sent before its status changes.
    """

    def __init__(
        self,
        events: ActivityEvents,
        call_id: str | None = None,
        interval: float = 0.25,
        *,
        reads_stdin: bool = False,
    ) -> None:
        self.events = events
        self.interval = interval
        self.call_id = call_id or new_call_id()
        self.session: str | None = None
        self._tails: dict[int, str] = {}
        self._pending: set[int] = set()
        self._last_chunk_event = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._finished = False
        if reads_stdin:  # answers are echoed into the output: the history keeps none of it
            events.redact(self.call_id)

    #: The schema of the events (a subclass reporting other calls has its own).
    schema: ClassVar[str] = PYTHON_SCHEMA

    @property
    def listening(self) -> bool:
        """Whether anyone receives the events (else they are not built)."""
        return self.events.listening(self.schema)

    def _emit(self, event: str, **fields: Any) -> None:
        if not self.listening:
            return
        data = {"callId": self.call_id, "event": event, "session": self.session, **fields}
        self.events.emit(self.schema, data)

    def call_started(self, call: dict[str, Any]) -> None:  # noqa: D102
        self.session = call.get("session")
        if not self.listening:
            return
        cells = [
            {"index": c["index"], "title": c["title"], "code": c["code"][:MAX_EVENT_SOURCE]}
            for c in call.get("cells", [])
        ]
        self._emit("started", cells=cells)

    def cell_status(self, index: int, status: str) -> None:  # noqa: D102
        self._flush()
        self._emit("cell", cellIndex=index, status=status)

    def chunk(self, index: int, text: str) -> None:  # noqa: D102
        if self._finished:
            return  # nothing is reported after the call's end
        # Cut before joining: a kernel may send megabytes in one chunk, the event needs 4 KiB.
        self._tails[index] = (self._tails.get(index, "") + text[-MAX_EVENT_TAIL:])[-MAX_EVENT_TAIL:]
        self._pending.add(index)
        wait = self._last_chunk_event + self.interval - time.monotonic()
        if wait <= 0:
            self._flush()
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(wait, self._flush)

    def _flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._pending and self.listening:
            for index in sorted(self._pending):
                self._emit("chunk", cellIndex=index, text=sanitize(self._tails[index]))
        if self._pending:
            self._last_chunk_event = time.monotonic()
        self._pending.clear()

    def display(self, index: int, kind: str, data: Any) -> None:  # noqa: D102
        if not self.listening:
            return
        if kind == "image" and isinstance(data, dict):
            encoded = data["data"] if isinstance(data.get("data"), str) else ""
            display: dict[str, Any] = {
                "kind": "image",
                "mimeType": data.get("mimeType", "image/png"),
                "bytes": data.get("bytes", len(encoded) * 3 // 4),
            }
            # Where the whole image is kept, and its size, so the lab can show a larger one.
            for key in ("width", "height", "artifactId", "artifactPath"):
                if data.get(key) is not None:
                    display[key] = data[key]
            if len(encoded) <= MAX_EVENT_IMAGE:
                display["data"] = encoded
        else:
            try:
                size = len(json.dumps(data))
            except (TypeError, ValueError):
                size = MAX_EVENT_JSON + 1
            display = {"kind": "json", "data": data if size <= MAX_EVENT_JSON else None}
            if size > MAX_EVENT_JSON:
                display["bytes"] = size
        self._emit("display", cellIndex=index, display=display)

    def status_event(self, index: int, event: dict[str, Any]) -> None:  # noqa: D102
        self._emit("display", cellIndex=index, display={"kind": "status", "data": event})

    def input_requested(self, index: int, prompt: dict[str, Any]) -> None:  # noqa: D102
        self._flush()  # the prompt's text comes before the question
        self._emit("input", cellIndex=index, input={**prompt, "state": "waiting"})

    def input_ended(self, how: str) -> None:  # noqa: D102
        self._emit("input", input={"state": how})

    def call_finished(self, result: dict[str, Any]) -> None:  # noqa: D102
        self._flush()  # also cancels the throttle timer: nothing fires after the end
        self._finished = True
        if not self.listening:
            return
        keys = ("isError", "cancelled", "timedOut", "truncated", "totalLines", "totalBytes")
        summary: dict[str, Any] = {k: result.get(k) for k in keys}
        summary["text"] = str(result.get("text", ""))[:MAX_EVENT_TEXT]
        summary["artifactId"] = result.get("artifactId")
        summary["artifactPath"] = result.get("artifactPath")
        cells = result.get("cells") or []
        summary["durationMs"] = sum(c.get("durationMs") or 0 for c in cells)
        summary["cells"] = [
            {k: c.get(k) for k in ("index", "status", "durationMs", "exitCode")} for c in cells
        ]
        self._emit("finished", result=summary)
