"""The pause of Python's cyclic garbage collector while a notebook file is parsed and saved.

The store (``store.py``) keeps the collector off while a notebook file is parsed, changed and
saved (``collection_paused``, the setting ``pause_collector``). A parsed notebook is tens of
thousands of dicts and lists (a 21 MB notebook: ~25,000) that live for the ~100 ms of one edit.
While they live, the collector's young-generation passes see them survive and move them into the
oldest generation, and every ~50,000 objects moved there trigger a full collection of the whole
server's heap: 60-100 ms on a Jupyter Server, paid by whichever edit crosses the line (measured:
4 full collections, 345 ms, in 15 edits of that notebook). JSON data has no reference cycles, so
reference counting frees all of it when the edit ends: the collector has nothing to find there.
With the collector paused for the edit, those objects are born and freed without it, and nothing
reaches the oldest generation. The pause is process-wide (``gc.disable``), so it is bounded:
overlapping holders share one pause, which ends when the last one leaves, or for good once it
has lasted ``MAX_PAUSE`` seconds: a timer ends it then, even while a holder still waits for a
slow save or a stream of overlapping edits keeps it held; a collector already disabled by
someone else stays disabled.
"""

from __future__ import annotations

import contextlib
import gc
import heapq
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

#: Longest one pause of the collector lasts, in seconds, however many holders overlap.
MAX_PAUSE = 2.0


#: Calls a function after a delay (seconds) on some thread; returns what cancels the call.
Scheduler = Callable[[float, Callable[[], None]], Callable[[], None]]


class _Timers:
    """Delayed calls on one daemon thread, started once.

    ``threading.Timer`` starts a thread per call: each edit's pause waited on the event loop's
    thread for that start.
    """

    def __init__(self) -> None:
        self._wake = threading.Condition()
        self._due: list[list[Any]] = []  # heap of [when, number, action or None (cancelled)]
        self._number = 0
        self._thread: threading.Thread | None = None

    def schedule(self, delay: float, action: Callable[[], None]) -> Callable[[], None]:
        """Call ``action`` on the timers' thread in ``delay`` seconds; return what cancels it."""
        with self._wake:
            self._number += 1
            entry: list[Any] = [time.monotonic() + delay, self._number, action]
            heapq.heappush(self._due, entry)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="xcsh-timers", daemon=True)
                self._thread.start()
            elif self._due[0] is entry:
                self._wake.notify()

        def cancel() -> None:
            entry[2] = None  # left in the heap: dropped when due

        return cancel

    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._due or self._due[0][0] > time.monotonic():
                    self._wake.wait(self._due[0][0] - time.monotonic() if self._due else None)
                action = heapq.heappop(self._due)[2]
            if action is not None:
                action()


_thread_timer: Scheduler = _Timers().schedule


class CollectorPause:
    """Holders of ``paused()`` keep the collector off, together, for at most ``max_pause`` s."""

    def __init__(self, max_pause: float = MAX_PAUSE, schedule: Scheduler = _thread_timer) -> None:
        self._max = max_pause
        self._schedule = schedule
        self._lock = threading.Lock()
        self._holders = 0
        self._pausing = False  # whether this pause turned the collector off (and must resume it)
        self._cancel_timer: Callable[[], None] | None = None
        self._pause_number = 0  # which pause a timer belongs to (a late one ends no other)

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Keep the collector off while the block runs (see the module's text for bounds)."""
        with self._lock:
            if self._holders == 0 and gc.isenabled():
                gc.disable()
                self._pausing = True
                self._pause_number += 1
                number = self._pause_number
                self._cancel_timer = self._schedule(self._max, lambda: self._timed_out(number))
            self._holders += 1
        try:
            yield
        finally:
            with self._lock:
                self._holders -= 1
                if self._holders == 0:
                    self._resume()

    def _timed_out(self, number: int) -> None:
        with self._lock:
            if number == self._pause_number:
                self._resume()

    def _resume(self) -> None:
        if self._pausing:
            self._pausing = False
            gc.enable()
        cancel, self._cancel_timer = self._cancel_timer, None
        if cancel is not None:
            cancel()


_PAUSE = CollectorPause()


def collection_paused() -> contextlib.AbstractContextManager[None]:
    """The server-wide pause of the cyclic collector (``CollectorPause.paused``)."""
    return _PAUSE.paused()
