"""Threads a test process must not be left waiting for."""

from __future__ import annotations

import contextlib
import queue
import threading


def stop_anyio_workers() -> None:
    """Send every AnyIO worker thread still alive AnyIO's own shutdown command.

    AnyIO's worker threads are not daemons and stop only when the task that first used them
    ends. jupyter-collaboration 4.x's stores use them from tasks of a test server's event loop
    that is closed without those tasks ending, and the interpreter then waits for the threads
    forever after the last test (seen in CI: ``24 passed`` printed, the process never exiting).
    A worker still busy takes the command once its work is done.
    """
    for thread in threading.enumerate():
        work = getattr(thread, "queue", None)
        if thread.name == "AnyIO worker thread" and isinstance(work, queue.Queue):
            with contextlib.suppress(queue.Full):
                work.put(None, timeout=5)
