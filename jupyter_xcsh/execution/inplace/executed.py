"""What a notebook's kernel executed, as seen on its IOPub channel: code by execution count.

Every ``execute_input`` message (anyone's: a person's cell in the lab, a run in place) tells
which code ran as which execution count; a ``status`` of ``starting``/``restarting`` means a new
kernel process, whose history starts empty. The log answers "which execution is running now"
(the kernel tool's ``status``) and "did this cell's source change since it ran as ``[n]``" (the
notebook tool's stale cells). Only what happened while a connection of this server read the
kernel is known; codes are kept as hashes, and the log is bounded.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from jupyter_xcsh.notebook.stale import code_hash

__all__ = ["ExecutionLog", "Running", "code_hash"]

#: Execution counts remembered per kernel (the oldest are forgotten first).
MAX_ENTRIES = 10000


@dataclass
class Running:
    """The execution running now: its request, code and execution count."""

    msg_id: str
    code: str
    execution_count: int | None


class ExecutionLog:
    """Follow one kernel's IOPub messages: the code of each execution count, what runs now."""

    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        self.max_entries = max_entries
        self._codes: OrderedDict[int, str] = OrderedDict()
        #: The highest execution count seen in this kernel process (None: none seen).
        self.last_count: int | None = None
        self.running: Running | None = None
        #: How many times a new kernel process was seen (a restart empties the log).
        self.restarts = 0
        #: Requests sent with ``store_history`` false (scratch code): their ``execute_input``
        #: names the next count, which they do not take, so it is not recorded.
        self.uncounted: set[str] = set()

    def on_iopub(self, msg: dict[str, Any]) -> None:
        """Take one IOPub message of the kernel."""
        kind = msg.get("msg_type")
        content = msg.get("content") or {}
        parent = (msg.get("parent_header") or {}).get("msg_id") or ""
        if kind == "execute_input":
            count = content.get("execution_count")
            code = content.get("code")
            if not isinstance(code, str):
                return
            count = count if isinstance(count, int) and not isinstance(count, bool) else None
            if parent in self.uncounted:
                count = None
            self.running = Running(parent, code, count)
            if count is not None:
                self._codes[count] = code_hash(code)
                self._codes.move_to_end(count)
                while len(self._codes) > self.max_entries:
                    self._codes.popitem(last=False)
                self.last_count = count if self.last_count is None else max(self.last_count, count)
        elif kind == "status":
            state = content.get("execution_state")
            if state in ("starting", "restarting"):
                self.reset()
            elif state == "idle":
                self.uncounted.discard(parent)
                if self.running is not None and parent == self.running.msg_id:
                    self.running = None

    def reset(self) -> None:
        """Forget everything: the kernel process is a new one."""
        if self._codes or self.running is not None or self.last_count is not None:
            self.restarts += 1
        self._codes.clear()
        self.last_count = None
        self.running = None

    def code_of(self, execution_count: int) -> str | None:
        """The hash of the code that ran as ``execution_count`` in this kernel, if seen."""
        return self._codes.get(execution_count)
