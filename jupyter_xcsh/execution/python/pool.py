"""The pool of session kernels: the one owner of who uses which session, and when.

Every change to the pool's state — which sessions exist, which call runs on a session, who
waits behind it, which kernels are still shutting down — happens here, under one
``asyncio.Condition``; waiting for a turn or a free slot is waiting on that condition (woken
by every change), never polling. Calls get a session through ``checkout``; the heartbeat and
the sweep only mark or dispose sessions nobody uses. Disposing never raises to a caller:
whatever happens to one session's kernel, another caller's call goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict, deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from jupyter_xcsh.calls.control import CallControl
from jupyter_xcsh.execution.kernel.launcher import KernelLauncher
from jupyter_xcsh.execution.python.failures import KERNEL_GONE, SessionDisposedError
from jupyter_xcsh.execution.python.session import KernelSession, SessionHistory, SessionKey

__all__ = ["KernelSessionPool"]

#: Keys whose last session's fate is remembered (for ``stateLost`` on their next call).
HISTORY_SIZE = 1024

EVICTED = "the session was evicted: more than max_sessions ({}) sessions were in use"
IDLE = "the session was idle for more than {:g} seconds and its kernel was shut down"
DELETED = "the session was shut down through the sessions API"


@dataclass
class _Slot:
    """The pool's bookkeeping of one session: its running call and the calls queued behind."""

    session: KernelSession
    queue: deque[CallControl] = field(default_factory=deque)  # first in, first out
    running: CallControl | None = None
    last_used: float = field(default_factory=time.time)

    def describe(self) -> dict[str, Any]:
        return {
            **self.session.describe(),
            "busy": self.running is not None,
            "queueLength": len(self.queue),
            "lastUsed": self.last_used,
        }


class KernelSessionPool:
    """Hold at most ``max_sessions`` session kernels, evicting the least recently used.

    Kernels still shutting down count against the cap. A sweep every ``cleanup_interval``
    seconds disposes sessions that are dead or idle longer than ``idle_timeout``; a heartbeat
    every ``heartbeat_interval`` seconds marks sessions whose kernel is not alive as dead.
    Kernels of per-call sessions are tracked too, so ``close`` leaves nothing running.
    """

    def __init__(
        self,
        launcher: KernelLauncher,
        *,
        init_code: Callable[[SessionKey], str],
        log: logging.Logger,
        max_sessions: int = 4,
        idle_timeout: float = 300.0,
        cleanup_interval: float = 30.0,
        heartbeat_interval: float = 5.0,
    ) -> None:
        self.launcher = launcher
        self.init_code = init_code
        self.log = log
        self.max_sessions = max_sessions
        self.idle_timeout = idle_timeout
        self.cleanup_interval = cleanup_interval
        self.heartbeat_interval = heartbeat_interval
        self._slots: dict[SessionKey, _Slot] = {}
        self._transient: dict[KernelSession, _Slot] = {}
        self._disposing: set[asyncio.Task[None]] = set()
        self._history: OrderedDict[SessionKey, SessionHistory] = OrderedDict()
        self._changed = asyncio.Condition()
        self._timers: list[asyncio.Task[None]] = []
        self._closed = False

    def _new_session(self, key: SessionKey, kernel_name: str) -> KernelSession:
        return KernelSession(
            key,
            kernel_name=kernel_name,
            launcher=self.launcher,
            init_code=self.init_code(key),
            log=self.log,
            history=self._history.pop(key, None),
        )

    # -- calls ---------------------------------------------------------------------------
    @contextlib.asynccontextmanager
    async def checkout(
        self, key: SessionKey, kernel_name: str, *, deadline: float, control: CallControl
    ) -> AsyncIterator[KernelSession]:
        """Run a call on the session of ``key``: wait for its turn, yield it, hand it on.

        The session is created (evicting the least recently used idle one past the cap)
        when missing. Calls on one session run one at a time, in arrival order. Raises
        ``TimeoutError`` past ``deadline`` and ``CallCancelledError`` when ``control`` is
        cancelled while waiting.
        """
        self._start_timers()
        async with self._changed:
            slot = self._enter(key, kernel_name, control)
            if slot is None or not self._take(slot, control):
                try:
                    waiting = self._wait(key, kernel_name, control, slot)
                    slot = await control.guard(waiting, deadline)
                except BaseException:
                    for queued in self._slots.values():
                        if control in queued.queue:
                            queued.queue.remove(control)
                    self._changed.notify_all()
                    raise
        try:
            yield slot.session
        finally:
            slot.running = None
            slot.last_used = time.time()
            session = slot.session
            if session.generation == 0 and not slot.queue and not session.starting:
                # Its first start failed: keep no phantom session (one that had a kernel stays,
                # with its counters, until the next call replaces the kernel).
                self._forget(slot)
            async with self._changed:
                self._changed.notify_all()

    async def _wait(
        self, key: SessionKey, kernel_name: str, control: CallControl, slot: _Slot | None
    ) -> _Slot:
        # Holds the condition's lock (``checkout`` took it) except while waiting on it.
        while True:
            await self._changed.wait()
            if slot is None:
                slot = self._enter(key, kernel_name, control)
                if slot is None:
                    continue
            elif self._slots.get(key) is not slot:
                raise SessionDisposedError()  # deleted (or the server stopping) meanwhile
            if self._take(slot, control):
                return slot

    def _enter(self, key: SessionKey, kernel_name: str, control: CallControl) -> _Slot | None:
        """Queue ``control`` on the session of ``key``, made (evicting if full) when missing.

        None when the pool is full of sessions in use, or of kernels still shutting down.
        """
        slot = self._slots.get(key)
        if slot is None:
            if len(self._slots) + len(self._disposing) >= self.max_sessions:
                victim = min(
                    (s for s in self._slots.values() if s.running is None and not s.queue),
                    key=lambda s: s.last_used,
                    default=None,
                )
                if victim is None:
                    return None  # every session is in use: wait for one to be free
                self.log.info("xcsh: evicting session %s (pool full)", victim.session.key)
                self._dispose(victim, EVICTED.format(self.max_sessions))
                if len(self._slots) + len(self._disposing) >= self.max_sessions:
                    return None  # wait until its kernel is gone
            slot = self._slots[key] = _Slot(self._new_session(key, kernel_name))
        slot.queue.append(control)
        return slot

    @staticmethod
    def _take(slot: _Slot, control: CallControl) -> bool:
        """Start ``control`` on ``slot`` if it is its turn (first in the queue, slot free)."""
        if slot.running is not None or slot.queue[0] is not control:
            return False
        slot.queue.popleft()
        slot.running = control
        slot.last_used = time.time()
        return True

    @contextlib.asynccontextmanager
    async def checkout_per_call(
        self, key: SessionKey, kernel_name: str, control: CallControl
    ) -> AsyncIterator[KernelSession]:
        """A session of its own for one call; its kernel is always shut down at the end."""
        session = self._new_session(key, kernel_name)
        self._transient[session] = _Slot(session, running=control)
        try:
            yield session
        finally:
            del self._transient[session]
            await asyncio.shield(session.dispose())

    # -- sessions API --------------------------------------------------------------------
    def describe(self) -> list[dict[str, Any]]:
        """Every session, most recently used first."""
        slots = sorted(self._slots.values(), key=lambda s: -s.last_used)
        return [s.describe() for s in slots]

    def idle_sessions(self) -> list[KernelSession]:
        """The sessions no call runs on or waits for."""
        return [s.session for s in self._slots.values() if s.running is None and not s.queue]

    def find(self, name: str, cwd: str | None = None) -> list[KernelSession]:
        """The sessions called ``name`` (in ``cwd``, or in any working directory)."""
        return [
            slot.session
            for key, slot in self._slots.items()
            if key.name == name and (cwd is None or key.cwd == cwd)
        ]

    def reject_queued(self, key: SessionKey, error: Exception) -> None:
        """End the calls waiting for a turn on the session of ``key`` with ``error``.

        For a session whose running call waits for an answer to a prompt: the calls behind
        it would only wait out their deadline.
        """
        slot = self._slots.get(key)
        for control in list(slot.queue) if slot is not None else []:
            control.cancel(error)

    def interrupt(self, name: str, cwd: str | None = None) -> bool | None:
        """Cancel the running calls of the sessions called ``name`` (per-call ones included).

        Returns whether one was running; None when there is no such session.
        """
        slots = [
            slot
            for slot in [*self._slots.values(), *self._transient.values()]
            if slot.session.key.name == name and (cwd is None or slot.session.key.cwd == cwd)
        ]
        if not slots:
            return None
        running = [slot.running for slot in slots if slot.running is not None]
        for control in running:
            control.cancel()
        return bool(running)

    async def remove(self, session: KernelSession) -> None:
        """Shut a session down (its running call ends cancelled); never raises."""
        slot = self._slots.get(session.key)
        if slot is None or slot.session is not session:
            return
        if slot.running is not None:
            slot.running.cancel(SessionDisposedError())
        task = self._dispose(slot, DELETED)
        async with self._changed:
            self._changed.notify_all()
        await asyncio.wait({task})

    # -- disposal ------------------------------------------------------------------------
    def _forget(self, slot: _Slot) -> None:
        key = slot.session.key
        if self._slots.get(key) is slot:
            del self._slots[key]

    def _dispose(self, slot: _Slot, reason: str) -> asyncio.Task[None]:
        """Take ``slot`` out of the pool and shut its kernel down in the background.

        The kernel counts against the cap until it is gone; the next session of the key
        inherits the counters and ``reason``.
        """
        self._forget(slot)
        session = slot.session
        history = session.history(reason)
        if history is not None:
            self._history[session.key] = history
            self._history.move_to_end(session.key)
            while len(self._history) > HISTORY_SIZE:
                self._history.popitem(last=False)
        task = asyncio.ensure_future(self._shut_down(session))
        self._disposing.add(task)
        return task

    async def _shut_down(self, session: KernelSession) -> None:
        try:
            await session.dispose()  # never raises
        finally:
            self._disposing.discard(asyncio.current_task())
            async with self._changed:
                self._changed.notify_all()

    # -- periodic work -------------------------------------------------------------------
    def _start_timers(self) -> None:
        if self._timers or self._closed:
            return
        if self.cleanup_interval > 0:
            self._timers.append(asyncio.create_task(self._every(self.cleanup_interval, self.sweep)))
        if self.heartbeat_interval > 0:
            self._timers.append(
                asyncio.create_task(self._every(self.heartbeat_interval, self.heartbeat))
            )

    async def _every(self, interval: float, job: Callable[[], Any]) -> None:
        while True:
            await asyncio.sleep(interval)
            try:
                await job()
            except Exception:
                self.log.exception("xcsh: session pool %s failed", getattr(job, "__name__", job))

    async def sweep(self) -> None:
        """Dispose sessions that are dead or idle past ``idle_timeout`` (never raises)."""
        now = time.time()
        swept = []
        for slot in list(self._slots.values()):
            if slot.running is not None or slot.queue:
                continue
            session = slot.session
            idle = self.idle_timeout > 0 and now - slot.last_used > self.idle_timeout
            if session.dead is not None or idle:
                why = IDLE.format(self.idle_timeout) if idle else session.dead
                self.log.info("xcsh: disposing session %s: %s", session.key, why)
                swept.append(self._dispose(slot, str(why)))
        if swept:
            async with self._changed:
                self._changed.notify_all()
            await asyncio.wait(swept)

    async def heartbeat(self) -> None:
        """Mark sessions whose kernel is gone or not alive as dead (never raises)."""
        for slot in list(self._slots.values()):
            session = slot.session
            kernel_id = session.kernel_id
            if kernel_id is None or slot.running is not None or session.dead is not None:
                continue
            if not self.launcher.exists(kernel_id):
                session.mark_dead(KERNEL_GONE.format(kernel_id))
            elif not await self.launcher.is_alive(kernel_id):
                session.mark_dead("the kernel died (found by the heartbeat)")

    async def close(self) -> None:
        """Stop the timers and shut down every kernel the pool started."""
        self._closed = True
        for timer in self._timers:
            timer.cancel()
        for timer in self._timers:
            with contextlib.suppress(asyncio.CancelledError):
                await timer
        self._timers.clear()
        slots = [*self._slots.values(), *self._transient.values()]
        self._slots.clear()
        for slot in slots:
            if slot.running is not None:
                slot.running.cancel(SessionDisposedError())
        async with self._changed:
            self._changed.notify_all()  # queued calls find their session gone
        disposing = [*self._disposing]
        await asyncio.gather(*(s.session.dispose() for s in slots), *disposing)
