"""A run in place's progress and outputs as events on the server's bus, for the lab.

The progress events are the python tool's (the activity panel shows a run like a python call,
titled by the notebook), on their own schema so the lab can tell them apart; ``outputs`` events
carry a cell's outputs to the open notebook while no collaboration room does it.
"""

from __future__ import annotations

from typing import Any

from jupyter_xcsh.events.activity import MAX_EVENT_SOURCE, ActivityEvents, PythonCallEvents

__all__ = ["RUN_SCHEMA", "InPlaceEvents"]

RUN_SCHEMA = "https://events.jupyter.org/jupyter_xcsh/run/v1"


class InPlaceEvents(PythonCallEvents):
    """Report one run in place: its progress (throttled as the python tool's) and outputs."""

    schema = RUN_SCHEMA

    def __init__(
        self,
        events: ActivityEvents,
        call_id: str,
        path: str,
        interval: float = 0.25,
        *,
        reads_stdin: bool = False,
    ) -> None:
        super().__init__(events, call_id, interval, reads_stdin=reads_stdin)
        self.path = path

    def _emit(self, event: str, **fields: Any) -> None:
        data = {"callId": self.call_id, "event": event, "path": self.path, **fields}
        self.events.emit(RUN_SCHEMA, data)

    def call_started(self, call: dict[str, Any]) -> None:  # noqa: D102
        cells = [
            {
                "index": c["index"],
                "title": c["title"],
                "code": c["code"][:MAX_EVENT_SOURCE],
                "cellId": c.get("cellId"),
            }
            for c in call.get("cells", [])
        ]
        self._emit("started", cells=cells)

    def call_finished(self, result: dict[str, Any]) -> None:  # noqa: D102
        # The result numbers cells by their notebook index (the REST contract, rest-api.yml); the
        # events number them by their position in the run, as `started` announced them.
        cells = [{**c, "index": i} for i, c in enumerate(result.get("cells") or [])]
        super().call_finished({**result, "cells": cells})

    def outputs(self, event: dict[str, Any]) -> None:
        """Publish a cell's outputs (live or as written), for notebooks open in the lab."""
        self._emit("outputs", **{k: v for k, v in event.items() if k != "path"})
