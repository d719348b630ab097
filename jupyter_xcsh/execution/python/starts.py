"""A session's kernel start: shared by its calls, bounded by each call's deadline, never lost."""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable

from jupyter_xcsh.execution.kernel.launcher import KernelLauncher

__all__ = ["KernelStart"]


class KernelStart:
    """Start kernels for one session so that a start outliving its call is not wasted.

    A call waits for a start at most until its deadline, but the start goes on: when it ends,
    ``keep(kernel_name, kernel_id)`` decides whether the session takes the kernel (the next
    call then finds it, or waits for the same start instead of beginning another); a kernel
    not kept is shut down at once.
    """

    def __init__(
        self,
        launcher: KernelLauncher,
        *,
        keep: Callable[[str, str], bool],
        log: logging.Logger,
    ) -> None:
        self.launcher = launcher
        self.keep = keep
        self.log = log
        self._start: asyncio.Future[str] | None = None
        self._name = ""
        self._shutdowns: set[asyncio.Future[None]] = set()

    @property
    def running(self) -> bool:
        """Whether a start (perhaps one a timed-out call left behind) is under way."""
        return self._start is not None

    async def wait(self, kernel_name: str, path: str, deadline: float) -> str:
        """Start a ``kernel_name`` kernel in API ``path`` (or join the start under way).

        Raises ``TimeoutError`` at ``deadline``; the start itself is not cancelled.
        """
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("Kernel start timed out")
        start = self._start
        if start is None or self._name != kernel_name:
            start = asyncio.ensure_future(self.launcher.start(kernel_name, path))
            self._start, self._name = start, kernel_name
            start.add_done_callback(functools.partial(self._done, kernel_name))
        try:
            return await asyncio.wait_for(asyncio.shield(start), remaining)
        except TimeoutError:
            raise TimeoutError("Kernel start timed out") from None

    def _done(self, kernel_name: str, start: asyncio.Future[str]) -> None:
        if self._start is start:
            self._start = None
        if start.cancelled() or start.exception() is not None:
            return
        kernel_id = start.result()
        if not self.keep(kernel_name, kernel_id):
            self.log.info("xcsh: shutting down kernel %s, started too late", kernel_id)
            task = asyncio.ensure_future(self.launcher.shutdown(kernel_id))
            self._shutdowns.add(task)
            task.add_done_callback(self._shutdowns.discard)
