"""A kernel session: one kernel, its connection, its FIFO queue and its restart history."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from dataclasses import dataclass
from typing import Any

from .connection import ConnectionClosedError, KernelConnection, KernelLostError
from .kernels import KernelLauncher

__all__ = ["KernelSession", "SessionDisposedError", "SessionKey", "TooManyRestartsError"]

#: The exact error of a session whose kernel died again right after a restart.
TOO_MANY_RESTARTS = "Python kernel restarted too many times in this session"

#: The message of a call whose session was shut down under it.
SESSION_SHUT_DOWN = "Session was shut down"

#: Longest wait for the server's own auto-restarter to act on a dead local kernel.
RESTARTER_WAIT = 10.0


class TooManyRestartsError(RuntimeError):
    """The session's kernel died again after being restarted once."""

    def __init__(self) -> None:
        super().__init__(TOO_MANY_RESTARTS)


class SessionDisposedError(RuntimeError):
    """The session was shut down (deleted, evicted, or the server stopping) during a call."""

    def __init__(self) -> None:
        super().__init__(SESSION_SHUT_DOWN)


@dataclass(frozen=True)
class SessionKey:
    """What identifies a session: the caller's session name and the working directory."""

    name: str
    cwd: str


class KernelSession:
    """One caller session: its kernel (started lazily), connection, queue and restarts.

    Only the session's own queue holder runs code on it; ``ensure_kernel`` starts, reconnects
    or restarts the kernel as needed before a call and initialises its environment.
    """

    def __init__(
        self,
        key: SessionKey,
        *,
        kernel_name: str,
        launcher: KernelLauncher,
        init_code: str,
        log: logging.Logger,
    ) -> None:
        self.key = key
        self.kernel_name = kernel_name
        self.launcher = launcher
        self.init_code = init_code
        self.log = log
        self.kernel_id: str | None = None
        self.connection: KernelConnection | None = None
        self.queue = asyncio.Lock()  # asyncio.Lock wakes waiters first in, first out
        self.waiting = 0
        self.busy = False
        self.last_used = time.time()
        self.dead: str | None = None
        self.restarted_underneath = False
        self.restart_streak = 0
        self.restart_count = 0
        self.generation = 0
        self.disposed = False
        self.current_call: Any = None
        self._restarter_event: asyncio.Event | None = None
        self._restarter_outcome: str | None = None
        # A kernel start that outlived its call's deadline; the next start waits for it.
        self._pending_start: asyncio.Future[str] | None = None
        self._pending_name = ""
        self._late_shutdowns: set[asyncio.Task[None]] = set()

    # -- observations --------------------------------------------------------------------
    def mark_dead(self, reason: str) -> None:
        """Record that the kernel is dead: the next call restarts it first."""
        if self.dead is None:
            self.log.info("xcsh: session %s kernel %s dead: %s", self.key, self.kernel_id, reason)
        self.dead = reason

    def release_connection(self) -> None:
        """Close the cached client (its sockets); the next call opens a new one."""
        if self.connection is not None:
            self.connection.close()
            self.connection = None

    def _on_connection_lost(self, reason: str) -> None:
        if reason in ("kernel restarting", "kernel starting"):
            self.restarted_underneath = True
        else:
            self.mark_dead(reason)

    def _on_restarter(self, what: str) -> None:
        self._restarter_outcome = what
        if what == "restart":
            self.restarted_underneath = True
        else:
            self.mark_dead("the server's auto-restarter gave up")
        if self._restarter_event is not None:
            self._restarter_event.set()

    def describe(self) -> dict[str, Any]:
        """The session as listed by the sessions API."""
        return {
            "name": self.key.name,
            "cwd": self.key.cwd,
            "kernelId": self.kernel_id,
            "kernelName": self.kernel_name,
            "busy": self.busy,
            "queueLength": self.waiting,
            "lastUsed": self.last_used,
            "restartCount": self.restart_count,
            # Dead, or restarted by someone else: either way the next call restarts/re-inits.
            "dead": self.dead is not None or self.restarted_underneath,
        }

    # -- kernel lifecycle ----------------------------------------------------------------
    async def ensure_kernel(self, deadline: float) -> bool:
        """Make the kernel ready to run; return whether earlier state was lost doing so.

        Raises ``TooManyRestartsError`` when the kernel needs a second restart in a row, and
        ``SessionDisposedError`` once the session was shut down.
        """
        self.check_disposed()
        if self.kernel_id is None:
            await self._start(deadline)
            return False
        if self.connection is not None and self.connection.lost is not None:
            self._on_connection_lost(self.connection.lost)
        if self.dead is not None or self.restarted_underneath:
            await self.recover(deadline)
            return True
        if self.connection is None:
            await self._connect(deadline)
        return False

    @property
    def starting(self) -> bool:
        """Whether a kernel start (perhaps one a timed-out call left behind) is under way."""
        return self._pending_start is not None

    def check_disposed(self) -> None:
        """Raise ``SessionDisposedError`` if the session was shut down."""
        if self.disposed:
            raise SessionDisposedError()

    async def _start(self, deadline: float) -> None:
        """Start the kernel, waiting at most until ``deadline`` (kernel start included).

        A start still running at the deadline is not abandoned: its kernel is kept for the
        session (the next call waits for that start rather than begin another one), or shut
        down if the session is gone by then.
        """
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("Kernel start timed out")
        start = self._pending_start
        if start is None or self._pending_name != self.kernel_name:
            start = asyncio.ensure_future(self.launcher.start(self.kernel_name, self.key.cwd))
            self._pending_start, self._pending_name = start, self.kernel_name
            start.add_done_callback(functools.partial(self._start_done, self.kernel_name))
        try:
            kernel_id = await asyncio.wait_for(asyncio.shield(start), remaining)
        except TimeoutError:
            raise TimeoutError("Kernel start timed out") from None
        self.check_disposed()  # _start_done shut the new kernel down
        self._adopt(kernel_id)
        await self._connect(deadline)

    def _adopt(self, kernel_id: str) -> None:
        if self.kernel_id == kernel_id:
            return
        self.kernel_id = kernel_id
        self.launcher.watch_restarts(kernel_id, self._on_restarter)
        self.generation += 1

    def _start_done(self, kernel_name: str, start: asyncio.Future[str]) -> None:
        """A kernel start ended: keep a late kernel, or shut it down if it is not wanted."""
        if self._pending_start is start:
            self._pending_start = None
        if start.cancelled() or start.exception() is not None:
            return
        kernel_id = start.result()
        unwanted = kernel_name != self.kernel_name or self.kernel_id not in (None, kernel_id)
        if self.disposed or unwanted:
            self.log.info("xcsh: shutting down kernel %s, started too late", kernel_id)
            task = asyncio.ensure_future(self.launcher.shutdown(kernel_id))
            self._late_shutdowns.add(task)
            task.add_done_callback(self._late_shutdowns.discard)
        elif self.kernel_id is None:
            self._adopt(kernel_id)  # a call that gave up on it left it for the next one

    async def _connect(self, deadline: float) -> None:
        assert self.kernel_id is not None
        kernel_id = self.kernel_id
        self.release_connection()
        connection = KernelConnection(
            self.launcher.client(kernel_id), log=self.log, on_lost=self._on_connection_lost
        )
        try:
            await connection.open(deadline, lambda: self.launcher.is_alive(kernel_id))
            await self._run_silently(connection, self.init_code, deadline)
            self.check_disposed()  # dispose() shut the kernel down meanwhile
        except BaseException:
            connection.close()
            self.check_disposed()
            raise
        self.connection = connection
        self.dead = None
        self.restarted_underneath = False

    async def _run_silently(self, connection: KernelConnection, code: str, deadline: float) -> None:
        queue: asyncio.Queue[tuple[str, dict[str, Any]]] = asyncio.Queue()
        msg_id = connection.execute(
            code, lambda channel, msg: queue.put_nowait((channel, msg)), silent=True
        )
        try:
            reply = idle = False
            while not (reply and idle):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError("Kernel initialisation timed out")
                channel, msg = await asyncio.wait_for(queue.get(), remaining)
                if channel == "closed":
                    raise ConnectionClosedError("the kernel connection was closed")
                if channel == "lost":
                    raise KernelLostError(connection.lost or "kernel lost")
                kind = msg.get("msg_type")
                if channel == "shell" and kind == "execute_reply":
                    reply = True
                    if msg["content"].get("status") != "ok":
                        self.log.warning("xcsh: kernel init failed: %s", msg["content"])
                elif kind == "status" and msg["content"].get("execution_state") == "idle":
                    idle = True
        finally:
            connection.unroute(msg_id)

    async def recover(self, deadline: float) -> None:
        """Bring a dead (or restarted-underneath) kernel back; count it as a restart."""
        self.restart_streak += 1
        if self.restart_streak > 1:
            self.restart_streak = 0
            self.mark_dead(TOO_MANY_RESTARTS)
            raise TooManyRestartsError()
        self.release_connection()
        kernel_id = self.kernel_id
        assert kernel_id is not None
        launcher = self.launcher
        if self.dead is not None and launcher.exists(kernel_id):
            if launcher.has_restarter(kernel_id) and not await launcher.is_alive(kernel_id):
                await self._wait_for_restarter(deadline)
            elif not self.restarted_underneath:
                try:
                    await launcher.restart(kernel_id)
                except Exception as e:
                    self.log.warning("xcsh: restart of %s failed (%s); replacing it", kernel_id, e)
                    await launcher.shutdown(kernel_id)
        if not launcher.exists(kernel_id):
            self.kernel_id = None
            await self._start(deadline)
        else:
            self.generation += 1
            await self._wait_alive(kernel_id, deadline)
            await self._connect(deadline)
        self.restart_count += 1
        self._restarter_outcome = None

    async def _wait_for_restarter(self, deadline: float) -> None:
        """Let the server's auto-restarter act rather than race it on the same kernel."""
        self._restarter_event = event = asyncio.Event()
        if self._restarter_outcome is None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(
                    event.wait(), max(0.0, min(RESTARTER_WAIT, deadline - time.monotonic()))
                )
        self._restarter_event = None
        if self._restarter_outcome is None and self.kernel_id is not None:
            await self.launcher.restart(self.kernel_id)
        self._restarter_outcome = None

    async def _wait_alive(self, kernel_id: str, deadline: float) -> None:
        while not await self.launcher.is_alive(kernel_id):
            if time.monotonic() >= deadline:
                raise TimeoutError("Kernel did not come back in time")
            await asyncio.sleep(0.1)

    async def reset(self, deadline: float) -> None:
        """Restart the kernel on request (state is dropped, the streak is not counted)."""
        if self.kernel_id is None or not self.launcher.exists(self.kernel_id):
            self.kernel_id = None
            await self._start(deadline)
            return
        self.release_connection()
        await self.launcher.restart(self.kernel_id)
        self.generation += 1
        self.restart_count += 1
        await self._wait_alive(self.kernel_id, deadline)
        await self._connect(deadline)

    async def shutdown_kernel(self) -> None:
        """Close the connection and shut the kernel down; the session stays usable."""
        self.release_connection()
        kernel_id, self.kernel_id = self.kernel_id, None
        self.dead, self.restarted_underneath = None, False
        if kernel_id is not None:
            await self.launcher.shutdown(kernel_id)

    async def dispose(self) -> None:
        """Shut the session down for good (idempotent).

        A kernel start in flight is shut down when it ends; a call running on the session
        ends as cancelled (``SessionDisposedError``).
        """
        self.disposed = True
        self.release_connection()
        kernel_id, self.kernel_id = self.kernel_id, None
        if kernel_id is not None:
            await self.launcher.shutdown(kernel_id)
