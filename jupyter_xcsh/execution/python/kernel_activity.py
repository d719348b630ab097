"""Record a session kernel's activity for the server from the messages the tool reads anyway.

Jupyter Server watches every kernel it starts: a second IOPub socket per kernel whose every
message it decodes (dates parsed with dateutil, status messages twice) to keep the kernel's
``last_activity`` and ``execution_state`` (``GET /api/kernels``, the idle culler). For a session
kernel that is a quarter of the server's work on a ``pass`` call, spent on messages the tool's
own connection has just decoded. While a connection reads a session kernel, it takes the watch
over: the server's watcher is closed and the connection records the same figures, by the same
rules; when the connection closes, the server's watcher comes back.
"""

from __future__ import annotations

import contextlib
import logging
from datetime import UTC, datetime
from typing import Any

__all__ = ["ActivityRecorder", "resume_server_watch", "take_over_watch"]

log = logging.getLogger(__name__)


def utcnow() -> datetime:
    """The time now, timezone-aware, as jupyter_server stamps kernel activity."""
    return datetime.now(UTC)


class ActivityRecorder:
    """Keep a kernel's ``last_activity``/``execution_state`` as ``record_activity`` does."""

    def __init__(self, kernel_manager: Any, kernel: Any) -> None:
        self.km = kernel_manager
        self.kernel = kernel

    def __call__(self, msg: dict[str, Any]) -> None:
        """Record one IOPub message of the kernel."""
        km, kernel = self.km, self.kernel
        msg_type = msg.get("msg_type")
        parent_type = (msg.get("parent_header") or {}).get("msg_type")
        tracked_parent = km.track_message_type(parent_type)
        if km.track_message_type(msg_type) or tracked_parent or kernel.execution_state == "busy":
            km.last_kernel_activity = kernel.last_activity = utcnow()
        if msg_type == "status":
            state = (msg.get("content") or {}).get("execution_state")
            if tracked_parent:
                kernel.execution_state = state
            elif kernel.execution_state == "starting" and state != "starting":
                kernel.execution_state = "idle"


def take_over_watch(kernel_manager: Any, kernel_id: str) -> ActivityRecorder | None:
    """Close the server's activity watcher of a kernel; the recorder to feed instead.

    None (the server's watch left alone) when the server does not watch the kernel this way:
    a gateway's kernel, another kernel manager.
    """
    try:
        kernel = kernel_manager.get_kernel(kernel_id)
    except Exception:
        return None
    stream = getattr(kernel, "_activity_stream", None)
    if stream is None or not hasattr(kernel_manager, "track_message_type"):
        return None
    # Not stop_watching_activity: it also runs a pending restart's cleanup.
    kernel._activity_stream = None
    with contextlib.suppress(Exception):
        stream.close()
    return ActivityRecorder(kernel_manager, kernel)


def resume_server_watch(kernel_manager: Any, kernel_id: str) -> None:
    """Give the watch back to the server (the kernel is still there and nobody watches it)."""
    try:
        kernel = kernel_manager.get_kernel(kernel_id)
    except Exception:  # shut down meanwhile
        return
    if getattr(kernel, "_activity_stream", None) is not None:
        return  # a restart started a watcher of its own
    try:
        kernel_manager.start_watching_activity(kernel_id)
    except Exception as e:
        log.debug("xcsh: could not resume the server's activity watch of %s: %s", kernel_id, e)
