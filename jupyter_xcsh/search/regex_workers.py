"""Regex searches in child processes, each stopped at a deadline (the notebook tool's ``find``).

Python's ``re`` cannot be interrupted from another thread and keeps the GIL while it matches,
so a catastrophically backtracking pattern run inside the server would stall every request
until it finished — which may be never. Each search is sent to a small child process running
``grep.py`` (standard library only, started with ``python -I``: no site customisation, no
package import); the server waits for the answer off its event loop and kills the child when
the deadline passes, answering with :class:`SearchTimeout`. Children are reused between
searches (starting Python costs far more than a search).

One caller's runaway patterns must not hold up everyone else's searches, so the pool grows:
every search gets a child of its own at once (an idle one, else a new one; a spare is kept
started so the next search need not wait for Python to start), up to ``max_workers`` children
at once. A search still running after ``slow_after`` seconds is lowered to the least CPU
priority (``nice`` 19), so the searches that finish quickly keep the processor while runaways
burn out their deadlines; such a child is retired when its search ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO, Any

from jupyter_xcsh.search import grep
from jupyter_xcsh.search.grep import Hit

#: Seconds a new child may take to start (Python's start-up on a loaded machine), apart from
#: the search's own deadline.
START_TIMEOUT = 30.0
#: The niceness a slow search's child is lowered to (the least CPU priority).
SLOW_NICENESS = 19


class SearchTimeout(Exception):
    """The search did not finish within its deadline (its child was killed)."""


class WorkerFailed(Exception):
    """The child answered with an error or went away."""


class _Worker:
    """One child process serving searches, one at a time (blocking calls: run them in threads)."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-I", str(Path(grep.__file__))],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.ready = False
        #: Whether the child was lowered to the least CPU priority (then it is not reused).
        self.lowered = False

    def lower_priority(self) -> None:
        """Give the child the least CPU priority: its search has run for long."""
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, self.process.pid, SLOW_NICENESS)
            self.lowered = True

    @property
    def _stdin(self) -> IO[bytes]:
        assert self.process.stdin is not None
        return self.process.stdin

    @property
    def _stdout(self) -> IO[bytes]:
        assert self.process.stdout is not None
        return self.process.stdout

    def _read(self) -> dict[str, Any]:
        line = self._stdout.readline()
        if not line:
            raise WorkerFailed("the search process ended")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def wait_ready(self) -> None:
        """Block until the child says it is ready."""
        if not self.ready:
            self._read()
            self.ready = True

    def exchange(self, payload: bytes) -> dict[str, Any]:
        """Send one request line and block for its answer."""
        self._stdin.write(payload)
        self._stdin.flush()
        return self._read()

    def kill(self) -> None:
        """Stop the child now (a blocked ``exchange`` then fails) and release its pipes."""
        with contextlib.suppress(OSError):
            self.process.kill()
        self.process.wait()
        self._close_pipes()

    def stop(self, timeout: float = 5.0) -> None:
        """Let the child end (stdin closed), or kill it after ``timeout`` seconds."""
        with contextlib.suppress(OSError):
            self._stdin.close()
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._close_pipes()

    def _close_pipes(self) -> None:
        for pipe in (self.process.stdin, self.process.stdout):
            with contextlib.suppress(OSError):
                if pipe is not None:
                    pipe.close()


class RegexWorkers:
    """Run regex line searches (``grep.search_texts``) in child processes with a deadline."""

    def __init__(
        self,
        timeout: float = 2.0,
        max_workers: int = 16,
        *,
        slow_after: float = 0.25,
        keep_idle: int = 2,
    ) -> None:
        """Searches in child processes.

        Parameters
        ----------
        timeout
            Seconds one search may run before its child is killed.
        max_workers
            Children at most at once (searches past that wait for one to be free).
        slow_after
            Seconds after which a search's child gets the least CPU priority.
        keep_idle
            Children kept started for the next searches (besides the busy ones).

        """
        self.timeout = timeout
        self.slow_after = slow_after
        self.keep_idle = max(keep_idle, 1)
        self.max_workers = max_workers
        self._idle: list[_Worker] = []
        self._busy: set[_Worker] = set()
        self._slots = asyncio.Semaphore(max_workers)
        self._closed = False
        # The blocking pipe calls wait on threads of their own: on the loop's shared default
        # executor (a handful of threads on a small machine) a few runaway searches would hold
        # every thread, and every other search (and anything else the server runs on a
        # thread) would queue behind them.
        self._threads = ThreadPoolExecutor(max_workers + 2, thread_name_prefix="xcsh-regex")

    async def _blocking(self, call: Callable[..., Any], *args: Any) -> Any:
        """Run a blocking call on the searches' own threads."""
        return await asyncio.get_running_loop().run_in_executor(self._threads, call, *args)

    @property
    def started(self) -> int:
        """How many children exist now (busy and idle)."""
        return len(self._idle) + len(self._busy)

    async def search(self, texts: Sequence[str], pattern: str, max_lines: int) -> list[Hit]:
        """Search ``texts`` line by line for the regex ``pattern`` (already known to compile).

        Raises ``SearchTimeout`` when it runs longer than ``timeout`` seconds.
        """
        request = {"pattern": pattern, "texts": list(texts), "max_lines": max_lines}
        # The child's own alarm is a second guard, a little later than the kill here.
        request["timeout"] = self.timeout + 1.0
        payload = json.dumps(request).encode("ascii") + b"\n"
        async with self._slots:
            worker = await self._checkout()
            lowering = asyncio.get_running_loop().call_later(self.slow_after, worker.lower_priority)
            try:
                answer = await asyncio.wait_for(
                    self._blocking(worker.exchange, payload), self.timeout
                )
            except TimeoutError:
                await self._discard(worker)
                raise SearchTimeout(
                    f"the search ran longer than {self.timeout:g} seconds"
                ) from None
            except BaseException:
                await self._discard(worker)
                raise
            finally:
                lowering.cancel()
            self._busy.discard(worker)
            if self._closed or worker.lowered or len(self._idle) >= self.keep_idle:
                await self._blocking(worker.stop)
            else:
                self._idle.append(worker)
        if "hits" not in answer:
            error = str(answer.get("error"))
            if error == "timeout":
                raise SearchTimeout(f"ran longer than {self.timeout:g} seconds")
            raise WorkerFailed(error)
        hits: list[Hit] = answer["hits"]
        return hits

    async def _checkout(self) -> _Worker:
        """An idle child, or a new one once it is ready; a spare is started for the next."""
        if self._closed:
            raise WorkerFailed("the server is stopping")
        # The longest idle first: the spare started last may still be starting.
        worker = self._idle.pop(0) if self._idle else _Worker()
        self._busy.add(worker)
        if not self._idle and self.started < self.max_workers:
            self._idle.append(_Worker())  # starts while this search runs; waited for when used
        try:
            await asyncio.wait_for(self._blocking(worker.wait_ready), START_TIMEOUT)
        except BaseException:
            await self._discard(worker)
            raise
        return worker

    async def _discard(self, worker: _Worker) -> None:
        self._busy.discard(worker)
        await self._blocking(worker.kill)

    async def close(self) -> None:
        """Stop every child (idle ones end on their own; busy ones are killed)."""
        self._closed = True
        workers, self._idle = self._idle, []
        for worker in workers:
            await self._blocking(worker.stop)
        for worker in list(self._busy):
            await self._blocking(worker.kill)
        self._threads.shutdown(wait=False)
