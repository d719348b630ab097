"""Cancelling a call from outside: an interrupt request, a client gone away, a session shut down.

A call spends its time in two kinds of waits. While a cell runs, a cancel must reach the kernel
as an interrupt (the cell gets a chance to stop, the session keeps its state): the cell runner
``attach``-es a callback that wakes it. Every other wait — for a turn on the session, for a
kernel to start, restart or answer — is simply abandoned: ``guard`` runs it so that a cancel
ends it at once with ``CallCancelledError``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

__all__ = ["CallCancelledError", "CallControl"]

T = TypeVar("T")


class CallCancelledError(Exception):
    """The call was cancelled while it waited for something other than a running cell."""


class CallControl:
    """Lets someone else (an interrupt request, a client disconnect) cancel a running call."""

    def __init__(self) -> None:
        self.cancelled = False
        self._error: Exception | None = None
        self._notify: Callable[[], None] | None = None
        self._waiters: set[asyncio.Future[None]] = set()

    def attach(self, notify: Callable[[], None] | None) -> None:
        """Call ``notify`` on a later cancel (it wakes the running cell)."""
        self._notify = notify

    def cancel(self, error: Exception | None = None) -> None:
        """Ask the call to stop: the running cell is interrupted, any other wait abandoned.

        An abandoned wait raises ``error`` (say, the session was shut down), by default
        ``CallCancelledError``.
        """
        if self.cancelled:
            return
        self.cancelled = True
        self._error = error
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None)
        if self._notify is not None:
            self._notify()

    async def guard(self, awaitable: Awaitable[T], deadline: float | None = None) -> T:
        """Await ``awaitable``, abandoning it (cancelled) when the call is or past ``deadline``.

        Raises ``CallCancelledError`` (or the cancel's own error) on a cancel and
        ``TimeoutError`` at ``deadline`` (a ``time.monotonic`` value); the abandoned work has
        finished its cleanup by then.
        """
        task = asyncio.ensure_future(awaitable)
        if self.cancelled:
            await _abandon(task)
            raise self._error or CallCancelledError()
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.add(waiter)
        timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
        try:
            await asyncio.wait({task, waiter}, timeout=timeout, return_when="FIRST_COMPLETED")
        except BaseException:
            await _abandon(task)  # our own task was cancelled: take the work down with it
            raise
        finally:
            self._waiters.discard(waiter)
        if task.done():
            return task.result()
        await _abandon(task)
        if self.cancelled:
            raise self._error or CallCancelledError()
        raise TimeoutError()


async def _abandon(task: asyncio.Future[T]) -> None:
    """Cancel ``task`` and wait until it has unwound (its ``finally`` blocks ran).

    ``asyncio.wait`` rather than ``await task``: a cancel of our own task still propagates.
    """
    task.cancel()
    task.add_done_callback(_retrieve)
    await asyncio.wait({task})


def _retrieve(task: asyncio.Future[T]) -> None:
    # The abandoned work's own error (or cancellation) is nobody's business any more.
    if not task.cancelled():
        task.exception()
