"""Agent activity on the server's event bus, so JupyterLab can show every tool call live.

The schemas are registered with the *server's* ``event_logger`` (as jupyter_server and
jupyter-collaboration do); the lab receives the events through ``/api/events/subscribe``.
Emitting never fails a tool call: a broken event is logged and dropped.
"""

from __future__ import annotations

import logging
import uuid
from pathlib import Path
from typing import Any

from jupyter_events import EventLogger

SCHEMA_DIR = Path(__file__).parent / "event_schemas"
NOTEBOOK_SCHEMA = "https://events.jupyter.org/jupyter_xcsh/notebook/v1"
PYTHON_SCHEMA = "https://events.jupyter.org/jupyter_xcsh/python/v1"

#: Largest cell source carried by a notebook event, in characters.
MAX_EVENT_SOURCE = 64 * 1024

log = logging.getLogger(__name__)


def new_call_id() -> str:
    """Return a fresh id for one tool call."""
    return uuid.uuid4().hex


def _source_text(source: Any) -> str | None:
    if isinstance(source, list):
        source = "".join(s for s in source if isinstance(s, str))
    if not isinstance(source, str):
        return None
    return source[:MAX_EVENT_SOURCE]


class ActivityEvents:
    """Emit the extension's events on the server's event logger."""

    def __init__(self, event_logger: EventLogger | None) -> None:
        self.event_logger = event_logger
        if event_logger is not None:
            for schema in sorted(SCHEMA_DIR.glob("*.yaml")):
                event_logger.register_event_schema(schema)

    def emit(self, schema_id: str, data: dict[str, Any]) -> None:
        """Emit one event, dropping ``None`` fields; never raise."""
        if self.event_logger is None:
            return
        payload = {k: v for k, v in data.items() if v is not None}
        try:
            self.event_logger.emit(schema_id=schema_id, data=payload)
        except Exception:  # an event must never break the tool call it reports
            log.warning("Dropped an xcsh event of %s", schema_id, exc_info=True)

    def notebook_call(
        self,
        action: str,
        path: str,
        result: dict[str, Any] | None = None,
        error: str | None = None,
    ) -> None:
        """Report one finished notebook tool call (its result, or its error message)."""
        details = (result or {}).get("details", {})
        self.emit(
            NOTEBOOK_SCHEMA,
            {
                "callId": new_call_id(),
                "action": action,
                "path": path,
                "status": "error" if error is not None else "ok",
                "cellIndex": details.get("cellIndex", details.get("startIndex")),
                "fromIndex": details.get("fromIndex"),
                "cellId": details.get("cellId"),
                "cellType": details.get("cellType"),
                "source": _source_text(details.get("cellSource")),
                "totalCells": details.get("totalCells"),
                "lastModified": details.get("lastModified"),
                "error": error,
            },
        )
