"""Calls that outlive the request that started them: a call waiting for input (stdin ``ask``).

With ``stdin: "ask"`` a call runs in a task of its own. The request that started it returns at
the first prompt with the output so far and ``awaitingInput``; the kernel keeps waiting. Whoever
answers (``POST /api/xcsh/runs/<runId>/input``: the agent, or a person in the lab's activity
panel) gets what the request would have got next: the end of the call, or its next prompt.
``GET /api/xcsh/runs/<runId>`` follows the call without answering. The id of a run is its
call id.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Iterator
from typing import Any

from ..errors import ConflictError, InvalidRequestError, NotFoundError
from ..execution import CallControl, ExecutionObserver
from ..execution.stdin import StdinPolicy
from .caller import Caller

__all__ = ["BackgroundRun", "RelayObserver", "RunInputTool", "RunRegistry"]

#: The authorizer resource and action of answering a run (it runs code further).
RESOURCE, ACTION = "kernels", "execute"

#: Seconds a finished run's result stays available to ``GET`` and late answers.
RETENTION = 600.0


class RelayObserver(ExecutionObserver):
    """Forward a run's progress to the requests following it now (each may come and go)."""

    def __init__(self) -> None:
        self.targets: list[ExecutionObserver] = []

    @contextlib.contextmanager
    def following(self, observer: ExecutionObserver | None) -> Iterator[None]:
        """Forward to ``observer`` for the duration of the block."""
        if observer is None:
            yield
            return
        self.targets.append(observer)
        try:
            yield
        finally:
            self.targets.remove(observer)

    def call_started(self, call: dict[str, Any]) -> None:  # noqa: D102
        for target in list(self.targets):
            target.call_started(call)

    def cell_status(self, index: int, status: str) -> None:  # noqa: D102
        for target in list(self.targets):
            target.cell_status(index, status)

    def chunk(self, index: int, text: str) -> None:  # noqa: D102
        for target in list(self.targets):
            target.chunk(index, text)

    def display(self, index: int, kind: str, data: Any) -> None:  # noqa: D102
        for target in list(self.targets):
            target.display(index, kind, data)

    def status_event(self, index: int, event: dict[str, Any]) -> None:  # noqa: D102
        for target in list(self.targets):
            target.status_event(index, event)

    def input_requested(self, index: int, prompt: dict[str, Any]) -> None:  # noqa: D102
        for target in list(self.targets):
            target.input_requested(index, prompt)

    def input_ended(self, how: str) -> None:  # noqa: D102
        for target in list(self.targets):
            target.input_ended(how)

    def call_finished(self, result: dict[str, Any]) -> None:  # noqa: D102
        for target in list(self.targets):
            target.call_finished(result)


class BackgroundRun:
    """One call running in its own task, which requests follow until it ends or asks."""

    def __init__(
        self,
        run_id: str,
        stdin: StdinPolicy,
        control: CallControl,
        *,
        session: str | None = None,
        cwd: str = "",
        notebook: str | None = None,
    ) -> None:
        self.id = run_id
        self.stdin = stdin
        self.control = control
        self.session = session  # None for a call on a kernel of its own (per-call mode)
        self.cwd = cwd
        self.notebook = notebook  # the API path of a run in place, which holds its kernel
        self.relay = RelayObserver()
        self.finished_at: float | None = None
        self._task: asyncio.Task[dict[str, Any]] | None = None
        self._wake = asyncio.Event()
        stdin.listen(self._wake.set)

    def start(self, work: Awaitable[dict[str, Any]]) -> None:
        """Run ``work`` (the call, reporting to ``self.relay``) in a task of its own."""
        self._task = asyncio.ensure_future(work)
        self._task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[dict[str, Any]]) -> None:
        self.finished_at = time.monotonic()
        self._wake.set()
        if not task.cancelled():
            task.exception()  # retrieved: a follower gets it, or nobody needs it

    @property
    def waiting(self) -> bool:
        """Whether the kernel waits for an answer now."""
        return self.stdin.waiting is not None

    async def next_stop(
        self,
        observer: ExecutionObserver | None = None,
        control: CallControl | None = None,
        *,
        answer: str | None = None,
    ) -> dict[str, Any]:
        """Wait until the call ends or waits for input; its result (partial while waiting).

        ``answer`` is first sent to the waiting prompt (``ConflictError`` when nothing waits).
        ``observer`` gets the call's progress meanwhile; cancelling ``control`` (its client
        went away) cancels the call.
        """
        task = self._task
        assert task is not None, "start() the run first"
        if answer is not None and self.stdin.waiting is None:
            self.stdin.answer(answer)  # raises the ConflictError before anything is followed
        if control is not None:
            control.attach(self.control.cancel)
        try:
            with self.relay.following(observer):
                if answer is not None:
                    self.stdin.answer(answer)  # after following: the answer is reported too
                while True:
                    if task.done():
                        return task.result()
                    partial = self.stdin.partial_result
                    if self.stdin.waiting is not None and partial is not None:
                        result = await partial()
                        if "awaitingInput" in result:
                            return result
                        continue  # answered while the result was being made
                    self._wake.clear()
                    woken = asyncio.ensure_future(self._wake.wait())
                    try:
                        await asyncio.wait({task, woken}, return_when=asyncio.FIRST_COMPLETED)
                    finally:
                        woken.cancel()
        finally:
            if control is not None:
                control.attach(None)

    async def close(self) -> None:
        """Cancel the call and wait for it to end (the server is stopping)."""
        if self._task is not None and not self._task.done():
            self.control.cancel()
            await asyncio.wait({self._task})


class RunRegistry:
    """The background runs, by id: waiting for input, running on, or recently finished."""

    def __init__(self, retention: float = RETENTION) -> None:
        self.retention = retention
        self._runs: dict[str, BackgroundRun] = {}

    def add(self, run: BackgroundRun) -> None:
        """Keep ``run`` findable by its id (until ``retention`` seconds after it ends)."""
        self.prune()
        self._runs[run.id] = run

    def get(self, run_id: str) -> BackgroundRun:
        """The run ``run_id``; ``NotFoundError`` if there is none (or no longer)."""
        self.prune()
        run = self._runs.get(run_id)
        if run is None:
            raise NotFoundError(f"No such run: {run_id}")
        return run

    def waiting_on(self, session: str, cwd: str) -> BackgroundRun | None:
        """The run waiting for input on the session ``session`` in ``cwd``, if any."""
        for run in self._runs.values():
            if run.session == session and run.cwd == cwd and run.waiting:
                return run
        return None

    def waiting_in(self, notebook: str) -> BackgroundRun | None:
        """The run in place waiting for input in notebook ``notebook`` (API path), if any."""
        for run in self._runs.values():
            if run.notebook == notebook and run.waiting:
                return run
        return None

    def prune(self) -> None:
        """Forget runs that ended more than ``retention`` seconds ago."""
        now = time.monotonic()
        for run_id, run in list(self._runs.items()):
            if run.finished_at is not None and now - run.finished_at > self.retention:
                del self._runs[run_id]

    async def close(self) -> None:
        """Cancel every run still going and wait for them."""
        await asyncio.gather(*(run.close() for run in self._runs.values()))
        self._runs.clear()


class RunInputTool:
    """Answer a run's prompt, or follow it, for a caller allowed to execute code."""

    def __init__(self, runs: RunRegistry) -> None:
        self.runs = runs

    async def answer(
        self,
        run_id: str,
        body: dict[str, Any],
        caller: Caller,
        observer: ExecutionObserver | None = None,
        control: CallControl | None = None,
    ) -> dict[str, Any]:
        """Answer the run's waiting prompt with ``body["value"]``; return its next stop.

        Raises ``InvalidRequestError`` for a bad body, ``NotFoundError`` for an unknown run
        and ``ConflictError`` when the run is not waiting for input. Whoever answers only
        follows the call: ``control`` cancelled (its client gone) leaves the call running —
        a person answering from the lab must not end an agent's call by closing the page.
        """
        unknown = sorted(set(body) - {"value"})
        if unknown:
            raise InvalidRequestError(f"Unknown field(s): {', '.join(unknown)}")
        value = body.get("value")
        if not isinstance(value, str):
            raise InvalidRequestError("value must be a string")
        await caller.require(ACTION, RESOURCE)
        return await self.runs.get(run_id).next_stop(observer, answer=value)

    async def follow(self, run_id: str, caller: Caller) -> dict[str, Any]:
        """The run's next stop without answering: its end, or its prompt (at once if waiting)."""
        await caller.require(ACTION, RESOURCE)
        return await self.runs.get(run_id).next_stop()

    def answering(self, run_id: str) -> RunAnswer:
        """A tool whose ``call(body, ...)`` answers the run ``run_id`` (for the handlers)."""
        return RunAnswer(self, run_id)


class RunAnswer:
    """``RunInputTool.answer`` for one run, with the python tool's ``call`` signature."""

    def __init__(self, tool: RunInputTool, run_id: str) -> None:
        self.tool = tool
        self.run_id = run_id

    async def call(
        self,
        body: dict[str, Any],
        caller: Caller,
        observer: ExecutionObserver | None = None,
        control: CallControl | None = None,
    ) -> dict[str, Any]:
        """Answer the run's prompt with ``body["value"]`` and return its next stop."""
        return await self.tool.answer(self.run_id, body, caller, observer, control)


def session_waiting(name: str) -> ConflictError:
    """The error of a call on a session whose kernel waits for an answer (SPEC §8)."""
    return ConflictError(f"Session {name} is waiting for input")
