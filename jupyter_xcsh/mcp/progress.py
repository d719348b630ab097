"""A python call's progress as MCP ``notifications/progress`` for the client's progress token."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from jupyter_xcsh.calls.observer import ExecutionObserver
from jupyter_xcsh.outputs.sink import sanitize

__all__ = ["MAX_MESSAGE_CHARS", "ProgressNotifier"]

#: Longest output line quoted in a progress message.
MAX_MESSAGE_CHARS = 200


class ProgressNotifier(ExecutionObserver):
    """Send a progress notification when a cell starts, and the current state on each ``tick``.

    The transport calls ``tick`` on a timer, so a long, silent cell still reports at that pace
    (and a client whose timeout restarts on progress keeps waiting). ``progress`` counts the
    notifications, since MCP's specification wants it to grow with each one; the message says
    what runs and the last line it printed.
    """

    def __init__(self, token: str | int, send: Callable[[dict[str, Any]], None]) -> None:
        self.token = token
        self.send = send
        self.sent = 0
        self.cells: int | None = None  # known once a python call is accepted
        self.running: int | None = None
        self.last_line = ""

    def notify(self, message: str) -> None:
        """Send one ``notifications/progress`` with ``message``."""
        self.sent += 1
        params = {"progressToken": self.token, "progress": self.sent, "message": message}
        self.send({"jsonrpc": "2.0", "method": "notifications/progress", "params": params})

    def tick(self) -> None:
        """Report the current state (called by the transport's timer)."""
        self.notify(self.state())

    def state(self) -> str:
        """What the call is doing now, in a few words."""
        if self.cells is None:
            return "working"
        if self.running is None:
            return "waiting for the kernel"
        where = f"cell {self.running + 1}/{self.cells} running"
        return f"{where}: {self.last_line}" if self.last_line else where

    def call_started(self, call: dict[str, Any]) -> None:  # noqa: D102
        self.cells = len(call.get("cells", []))
        # First of all, the run's id: a client that gives up waiting can follow it again.
        run_id = call.get("callId")
        if run_id:
            self.notify(f"run {run_id} started (follow it with run_id and wait)")

    def cell_status(self, index: int, status: str) -> None:  # noqa: D102
        if status == "running":
            self.running, self.last_line = index, ""
            self.notify(self.state())

    def chunk(self, index: int, text: str) -> None:  # noqa: D102
        # Only the tail matters (a chunk may hold megabytes); \r splits too, so the latest
        # state of a progress bar is what is quoted.
        lines = (sanitize(line).strip() for line in text[-4 * MAX_MESSAGE_CHARS :].splitlines())
        last = [line for line in lines if line]
        if last:
            self.last_line = last[-1][-MAX_MESSAGE_CHARS:]

    def status_event(self, index: int, event: dict[str, Any]) -> None:  # noqa: D102
        if event.get("op") == "approval":  # the call waits for the person: say so at once
            self.notify(str(event.get("message", "waiting for the person's approval")))
            return
        self.last_line = f"status {event.get('op', '')}".strip()[:MAX_MESSAGE_CHARS]
