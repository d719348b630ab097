"""The pool of session kernels: lookup by key, LRU eviction, idle cleanup and heartbeat."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable

from .kernels import KernelLauncher
from .session import KernelSession, SessionKey

__all__ = ["KernelSessionPool"]


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
        self.sessions: dict[SessionKey, KernelSession] = {}
        self.transient: set[KernelSession] = set()
        self.shutting_down = 0
        self._lock = asyncio.Lock()
        self._tasks: list[asyncio.Task[None]] = []
        self._closed = False

    def new_session(self, key: SessionKey, kernel_name: str) -> KernelSession:
        """Make a session object (its kernel starts on first use)."""
        return KernelSession(
            key,
            kernel_name=kernel_name,
            launcher=self.launcher,
            init_code=self.init_code(key),
            log=self.log,
        )

    # -- lookup and eviction -------------------------------------------------------------
    async def acquire(self, key: SessionKey, kernel_name: str, deadline: float) -> KernelSession:
        """Return the session for ``key``, creating it (and evicting if full) when missing."""
        self._start_timers()
        while True:
            async with self._lock:
                session = self.sessions.get(key)
                if session is not None:
                    session.last_used = time.time()
                    return session
                if len(self.sessions) + self.shutting_down < self.max_sessions:
                    session = self.new_session(key, kernel_name)
                    self.sessions[key] = session
                    return session
                victim = self._least_recently_used_idle()
                if victim is not None:
                    self.log.info("xcsh: evicting session %s (pool full)", victim.key)
                    del self.sessions[victim.key]
            if victim is not None:
                await self.dispose(victim)
                continue
            # Every session is busy: wait for one to finish (the call's deadline still holds).
            if time.monotonic() >= deadline:
                raise TimeoutError("No free session kernel slot")
            await asyncio.sleep(0.05)

    def _least_recently_used_idle(self) -> KernelSession | None:
        idle = [s for s in self.sessions.values() if not s.busy and not s.waiting]
        return min(idle, key=lambda s: s.last_used, default=None)

    def find(self, name: str) -> list[KernelSession]:
        """Every session with the caller's session ``name`` (in any working directory)."""
        return [s for s in self.sessions.values() if s.key.name == name]

    async def dispose(self, session: KernelSession) -> None:
        """Shut a session's kernel down, counting it against the cap until it is gone."""
        self.shutting_down += 1
        try:
            await session.dispose()
        finally:
            self.shutting_down -= 1

    async def remove(self, session: KernelSession) -> None:
        """Take a session out of the pool and dispose of it."""
        if self.sessions.get(session.key) is session:
            del self.sessions[session.key]
        if session.current_call is not None:
            session.current_call.cancel()
        await self.dispose(session)

    def discard(self, session: KernelSession) -> None:
        """Forget a session that has no kernel (nothing to shut down)."""
        if self.sessions.get(session.key) is session:
            del self.sessions[session.key]

    def release_idle(self) -> None:
        """Release the cached clients of idle sessions and mark them for restart (EMFILE)."""
        for session in list(self.sessions.values()):
            if not session.busy:
                session.release_connection()
                session.mark_dead("file descriptors exhausted")

    # -- periodic work -------------------------------------------------------------------
    def _start_timers(self) -> None:
        if self._tasks or self._closed:
            return
        if self.cleanup_interval > 0:
            self._tasks.append(asyncio.create_task(self._every(self.cleanup_interval, self.sweep)))
        if self.heartbeat_interval > 0:
            self._tasks.append(
                asyncio.create_task(self._every(self.heartbeat_interval, self.heartbeat))
            )

    async def _every(self, interval: float, job: Callable[[], object]) -> None:
        while True:
            await asyncio.sleep(interval)
            try:
                result = job()
                if asyncio.iscoroutine(result):
                    await result
            except Exception:
                self.log.exception("xcsh: session pool %s failed", getattr(job, "__name__", job))

    async def sweep(self) -> None:
        """Dispose sessions that are dead or idle past ``idle_timeout``."""
        now = time.time()
        for session in list(self.sessions.values()):
            if session.busy or session.waiting:
                continue
            idle = self.idle_timeout > 0 and now - session.last_used > self.idle_timeout
            if session.dead is not None or idle:
                why = "idle" if idle else "dead"
                self.log.info("xcsh: disposing %s session %s", why, session.key)
                await self.remove(session)

    async def heartbeat(self) -> None:
        """Mark sessions whose kernel is no longer alive as dead."""
        for session in list(self.sessions.values()):
            kernel_id = session.kernel_id
            if kernel_id is None or session.busy or session.dead is not None:
                continue
            if not await self.launcher.is_alive(kernel_id):
                session.mark_dead("heartbeat: kernel is not alive")

    async def close(self) -> None:
        """Stop the timers and shut down every kernel the pool started."""
        self._closed = True
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()
        sessions = list(self.sessions.values()) + list(self.transient)
        self.sessions.clear()
        self.transient.clear()
        for session in sessions:
            if session.current_call is not None:
                session.current_call.cancel()
        await asyncio.gather(*(s.dispose() for s in sessions), return_exceptions=True)
