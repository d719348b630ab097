"""Calls that outlive the request that started them: runs, followed by whoever asks.

Every python call and run in place runs in a task of its own (a ``BackgroundRun``), which the
request that started it follows. With ``stdin: "ask"`` that request returns at the first
prompt with the output so far and ``awaitingInput``; the kernel keeps waiting. Whoever answers
(``POST /api/xcsh/runs/<runId>/input``, the tool's own ``run_id`` + ``answer``: the agent, or a
person in the lab's activity panel) gets what the request would have got next: the end of the
call, or its next prompt. ``GET /api/xcsh/runs/<runId>`` and ``run_id`` + ``wait`` follow the
call without answering; ``GET /api/xcsh/runs/<runId>?after=<n>`` answers at once with its
state and the events after the ``n``-th (each run keeps its events, bounded: ``RunEvents``).
A client that hangs up interrupts the call unless it asked for ``detach`` (MCP's default):
the run then goes on up to its own timeout, to be followed again.
The id of a run is its call id.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import math
import time
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ..errors import ConflictError, InvalidRequestError, NotFoundError
from ..events.activity import CALL_ID, new_call_id
from ..execution.kernel.control import CallControl
from ..execution.kernel.observer import ExecutionObserver
from ..execution.kernel.stdin import StdinPolicy, StdinSpec
from ..fields import unknown_fields
from .caller import Caller

__all__ = [
    "BackgroundRun",
    "FollowUp",
    "RelayObserver",
    "RunEvents",
    "RunInputTool",
    "RunRegistry",
    "RunWork",
    "parse_cursor",
    "take_run_fields",
]

#: The authorizer resource and action of answering a run (it runs code further).
RESOURCE, ACTION = "kernels", "execute"

#: Seconds a finished run's result stays available to ``GET`` and late answers.
RETENTION = 600.0
#: Finished runs kept at most (the oldest are forgotten first): results may hold images.
MAX_FINISHED = 200
#: Seconds a ``run_id`` without ``answer`` follows the run by default, and at most.
DEFAULT_WAIT, MAX_WAIT = 30.0, 600.0
#: Events of one run kept for ``?after=<n>`` at most, and their size in bytes (as JSON; a chunk
#: its text's characters, see ``RunEvents``): past either the oldest are dropped (the answer
#: says how many it ``skipped``).
MAX_EVENTS, MAX_EVENT_BYTES = 5000, 4 * 1024 * 1024
#: What a chunk event adds to its text's length in ``RunEvents``' bound (its JSON's keys).
CHUNK_ENVELOPE = len(json.dumps({"type": "chunk", "index": 0, "text": ""}))
#: The largest cursor taken (more is past any run's end).
MAX_CURSOR = 2**53 - 1


@dataclass(frozen=True)
class FollowUp:
    """A tool call that continues a run: answer its prompt, or follow it for ``wait`` s."""

    run_id: str
    answer: str | None
    wait: float


def take_run_fields(
    body: dict[str, Any], kept: frozenset[str] = frozenset()
) -> tuple[dict[str, Any], FollowUp | None, bool]:
    """Split a tool's body into the request, a follow-up of a run, and ``detach``.

    With ``run_id`` the body is a follow-up: only ``answer`` or ``wait`` (and the names in
    ``kept``, e.g. the notebook tool's ``notebook_path``) may come with it. Null means "not
    given". ``InvalidRequestError`` says what is wrong.
    """
    given = {k: v for k, v in body.items() if v is not None or k not in _RUN_FIELDS}
    detach = given.pop("detach", False)
    if not isinstance(detach, bool):
        raise InvalidRequestError("detach must be a boolean")
    run_id, answer, wait = (given.pop(name, None) for name in ("run_id", "answer", "wait"))
    if run_id is None:
        if answer is not None or wait is not None:
            raise InvalidRequestError("answer and wait need run_id (the run to continue)")
        return given, None, detach
    if not isinstance(run_id, str) or not CALL_ID.fullmatch(run_id):
        raise InvalidRequestError("run_id must be a run id (32 hex digits, awaitingInput.runId)")
    others = sorted(k for k, v in given.items() if k not in kept and v is not None)
    if others or detach:
        extra = ", ".join(others or ["detach"])
        raise InvalidRequestError(f"With run_id, give only answer or wait (not {extra})")
    if answer is not None and wait is not None:
        raise InvalidRequestError("Give answer or wait, not both")
    if answer is not None and not isinstance(answer, str):
        raise InvalidRequestError("answer must be a string")
    if wait is None:
        wait = DEFAULT_WAIT
    if (
        isinstance(wait, bool)
        or not isinstance(wait, (int, float))
        or not math.isfinite(wait)
        or wait < 0
    ):
        raise InvalidRequestError("wait must be a number of seconds (0 or more)")
    return given, FollowUp(run_id, answer, min(float(wait), MAX_WAIT)), False


_RUN_FIELDS = ("run_id", "answer", "wait", "detach")


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


class RunEvents(ExecutionObserver):
    """A run's progress as the lines of its stream (``PythonStreamEvent``), numbered from 0.

    Bounded: past ``max_events`` events or ``max_bytes`` bytes the oldest are dropped; the
    numbers of the others do not change, so a cursor (``next``) stays valid. An event's bytes
    are its JSON's length, but a chunk of output counts its text's characters plus
    ``CHUNK_ENVELOPE``: serialising each chunk only to measure it took the event loop ~3 ms a
    MiB of output, and what the bound limits is the memory the kept text holds.
    """

    def __init__(self, max_events: int = MAX_EVENTS, max_bytes: int = MAX_EVENT_BYTES) -> None:
        self.max_events = max_events
        self.max_bytes = max_bytes
        self.first = 0  # the number of the oldest event kept
        self.bytes = 0
        self._events: deque[tuple[dict[str, Any], int]] = deque()

    @property
    def next(self) -> int:
        """The number the next event will have: the cursor of everything so far."""
        return self.first + len(self._events)

    def add(self, event: dict[str, Any], size: int | None = None) -> None:
        """Keep ``event``, dropping the oldest past the bounds (never the newest).

        ``size``: what it counts in ``max_bytes``; default, its JSON's length.
        """
        if size is None:
            size = len(json.dumps(event))
        self._events.append((event, size))
        self.bytes += size
        while len(self._events) > 1 and (
            len(self._events) > self.max_events or self.bytes > self.max_bytes
        ):
            _, dropped = self._events.popleft()
            self.bytes -= dropped
            self.first += 1

    def after(self, cursor: int) -> tuple[list[dict[str, Any]], int]:
        """The events numbered ``cursor`` on, and how many of those are no longer kept."""
        start = max(cursor, self.first)
        kept = itertools.islice(self._events, start - self.first, None)
        return [event for event, _ in kept], start - cursor

    def call_started(self, call: dict[str, Any]) -> None:  # noqa: D102
        self.add({"type": "start", **call})

    def cell_status(self, index: int, status: str) -> None:  # noqa: D102
        self.add({"type": "cell", "index": index, "status": status})

    def chunk(self, index: int, text: str) -> None:  # noqa: D102
        self.add({"type": "chunk", "index": index, "text": text}, len(text) + CHUNK_ENVELOPE)

    def display(self, index: int, kind: str, data: Any) -> None:  # noqa: D102
        self.add({"type": "display", "index": index, "kind": kind, "data": data})

    def status_event(self, index: int, event: dict[str, Any]) -> None:  # noqa: D102
        self.add({"type": "status", "index": index, "event": event})

    def input_requested(self, index: int, prompt: dict[str, Any]) -> None:  # noqa: D102
        self.add({"type": "input", "index": index, "state": "waiting", **prompt})

    def input_ended(self, how: str) -> None:  # noqa: D102
        self.add({"type": "input", "state": how})


def parse_cursor(raw: str) -> int:
    """The ``after`` of ``GET /api/xcsh/runs/<id>?after=<n>``; ``InvalidRequestError`` if bad."""
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 16 or int(raw) > MAX_CURSOR:
        raise InvalidRequestError(
            f"after must be an event number (an integer, 0 or more: the `next` of an earlier "
            f"answer), got {raw!r}"
        )
    return int(raw)


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
        owner: CallControl | None = None,
    ) -> None:
        self.id = run_id
        self.stdin = stdin
        self.control = control
        #: The control of the request that started the run (whose call it is): an MCP
        #: ``notifications/cancelled`` of that request interrupts the run, detached or not.
        self.owner = owner
        self.session = session  # None for a call on a kernel of its own (per-call mode)
        self.cwd = cwd
        self.notebook = notebook  # the API path of a run in place, which holds its kernel
        self.relay = RelayObserver()
        self.events = RunEvents()
        self.relay.targets.append(self.events)  # kept for ``?after=<n>``, whoever follows
        self.finished_at: float | None = None
        #: Called once the call has ended (``RunRegistry`` notes the run as finished).
        self.on_finish: Callable[[BackgroundRun], None] | None = None
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
        if self.on_finish is not None:
            self.on_finish(self)
        if not task.cancelled():
            task.exception()  # retrieved: a follower gets it, or nobody needs it

    @property
    def waiting(self) -> bool:
        """Whether the kernel waits for an answer now."""
        return self.stdin.waiting is not None

    @property
    def running(self) -> bool:
        """Whether the call is still going (started and not ended)."""
        return self._task is not None and not self._task.done()

    async def next_stop(
        self,
        observer: ExecutionObserver | None = None,
        control: CallControl | None = None,
        *,
        answer: str | None = None,
        wait: float | None = None,
        detach: bool = False,
    ) -> dict[str, Any]:
        """Wait until the call ends or waits for input; its result (partial while waiting).

        ``answer`` is first sent to the waiting prompt (``ConflictError`` when nothing waits).
        ``observer`` gets the call's progress meanwhile. Cancelling ``control`` (its client
        went away) cancels the call, or with ``detach`` only stops following it. After
        ``wait`` seconds the result so far is returned, marked ``running``.
        """
        task = self._task
        assert task is not None, "start() the run first"
        if answer is not None and self.stdin.waiting is None:
            self.stdin.answer(answer)  # raises the ConflictError before anything is followed
        gone = asyncio.Event()
        if control is not None:
            control.attach(gone.set if detach else self.control.cancel)
        deadline = None if wait is None else time.monotonic() + wait
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
                    now = time.monotonic()
                    if gone.is_set() or (deadline is not None and now >= deadline):
                        if partial is not None:
                            return await self._running_result(partial)
                        deadline = now + 0.05  # not under way yet: its result so far soon
                    self._wake.clear()
                    woken = asyncio.ensure_future(self._wake.wait())
                    left = max(0.0, deadline - now) if deadline is not None else None
                    stop = asyncio.ensure_future(
                        gone.wait() if left is None else asyncio.sleep(left)
                    )
                    try:
                        await asyncio.wait({task, woken, stop}, return_when=asyncio.FIRST_COMPLETED)
                    except asyncio.CancelledError:
                        if not detach:  # the follower's own task ended: the call with it
                            self.control.cancel()
                        raise
                    finally:
                        woken.cancel()
                        stop.cancel()
        finally:
            if control is not None:
                control.attach(None)

    def progress(self, after: int) -> dict[str, Any]:
        """The run's state and its events after the ``after``-th, at once (``RunProgress``).

        ``InvalidRequestError`` when ``after`` is past the events so far. A run that ended
        carries its result (a run that failed raises its error).
        """
        events = self.events
        if after > events.next:
            raise InvalidRequestError(
                f"after={after} is past the end of run {self.id}'s events ({events.next} so far)"
            )
        task = self._task
        body: dict[str, Any] = {"runId": self.id, "after": after}
        if task is not None and task.done():
            result = task.result()
            body["state"] = "finished"
        else:
            result = None
            body["state"] = "waiting" if self.stdin.waiting is not None else "running"
        listed, skipped = events.after(after)
        body.update(next=events.next, skipped=skipped, events=listed)
        if result is not None:
            body["result"] = result
        elif self.stdin.waiting is not None:
            body["awaitingInput"] = self.stdin.waiting.describe(self.id)
        return body

    async def _running_result(self, partial: Any) -> dict[str, Any]:
        """The result so far of a call still running, saying how to follow it."""
        result: dict[str, Any] = await partial()
        result["running"] = True
        result["text"] += (
            f"\n\n[run {self.id} is still running: call the tool again with "
            f'{{"run_id": "{self.id}", "wait": <seconds>}} to follow it, or '
            f"GET /api/xcsh/runs/{self.id}]"
        )
        return result

    async def close(self) -> None:
        """Cancel the call and wait for it to end (the server is stopping)."""
        if self._task is not None and not self._task.done():
            self.control.cancel()
            await asyncio.wait({self._task})


#: A call to run in the background: given the observer and control of its run, the stdin policy
#: answering its prompts and its run id (= call id), it runs the call and returns the result.
RunWork = Callable[[ExecutionObserver, CallControl, StdinPolicy, str], Awaitable[dict[str, Any]]]


class RunRegistry:
    """The background runs, by id: waiting for input, running on, or recently finished.

    The one registry of the calls running code: every cancel of one call by who or what it
    is — ``POST /api/xcsh/calls/<callId>/interrupt`` (``interrupt``), an MCP
    ``notifications/cancelled`` (``interrupt_owned``), a client gone away (``next_stop``),
    the server stopping (``close``) — goes through the run's ``control`` found here. (A cancel
    by place — a session's running call, the calls queued behind a prompt — is the engines':
    only they know whose turn it is.)
    """

    def __init__(self, retention: float = RETENTION, max_finished: int = MAX_FINISHED) -> None:
        self.retention = retention
        self.max_finished = max_finished
        self._runs: dict[str, BackgroundRun] = {}
        # The runs not ended yet, and those ended in the order they ended (with when): every
        # call asks whether a run waits for input and forgets old ones, which a scan of the
        # ``max_finished`` kept runs made cost more the more calls had been made.
        self._going: dict[str, BackgroundRun] = {}
        self._finished: OrderedDict[str, float] = OrderedDict()

    def add(self, run: BackgroundRun) -> None:
        """Keep ``run`` findable by its id (until ``retention`` seconds after it ends)."""
        self.prune()
        self._runs[run.id] = run
        if run.finished_at is None:
            self._going[run.id] = run
            run.on_finish = self._ended
        else:
            self._ended(run)

    def _ended(self, run: BackgroundRun) -> None:
        if self._runs.get(run.id) is run and run.finished_at is not None:
            self._going.pop(run.id, None)
            self._finished[run.id] = run.finished_at

    async def start(
        self,
        work: RunWork,
        stdin: StdinSpec,
        input_timeout: float,
        observer: ExecutionObserver | None,
        control: CallControl | None,
        *,
        detach: bool,
        reject_queued: Callable[[], None] | None = None,
        session: str | None = None,
        cwd: str = "",
        notebook: str | None = None,
    ) -> dict[str, Any]:
        """Run ``work`` as a new run; return at its end or (``ask``) at its first prompt.

        ``reject_queued`` ends the calls queued behind this one (on its session or notebook)
        whenever one of its prompts waits: they would only wait out their deadline. ``session``
        and ``cwd``, or ``notebook``, say where the run holds a kernel.
        """
        run_id = new_call_id()
        policy = StdinPolicy(stdin, input_timeout, run_id)
        run = BackgroundRun(
            run_id,
            policy,
            CallControl(),
            session=session,
            cwd=cwd,
            notebook=notebook,
            owner=control,
        )
        if reject_queued is not None and stdin.asks:
            refuse = reject_queued

            def refuse_queued() -> None:
                if policy.waiting is not None:
                    refuse()

            policy.listen(refuse_queued)
        # The task starts at next_stop's first wait, its follower in place: it sees everything.
        run.start(work(run.relay, run.control, policy, run_id))
        self.add(run)
        return await run.next_stop(observer, control, detach=detach)

    def get(self, run_id: str) -> BackgroundRun:
        """The run ``run_id``; ``NotFoundError`` if there is none (or no longer)."""
        self.prune()
        run = self._runs.get(run_id)
        if run is None:
            raise NotFoundError(f"No such run: {run_id}")
        return run

    def interrupt(self, call_id: str) -> None:
        """Cancel the call ``call_id``; ``NotFoundError`` when no such call is running."""
        run = self._runs.get(call_id)
        if run is None or not run.running:
            raise NotFoundError(f"No running call: {call_id}")
        run.control.cancel()

    def interrupt_owned(self, owner: CallControl) -> bool:
        """Cancel the calls the request of ``owner`` started; whether it started any.

        A request that started calls goes on to answer with their result (``cancelled``),
        even a detached one's: ``owner`` itself is left alone.
        """
        owned = [run for run in self._runs.values() if run.owner is owner]
        for run in owned:
            if run.running:
                run.control.cancel()
        return bool(owned)

    def waiting_on(self, session: str, cwd: str) -> BackgroundRun | None:
        """The run waiting for input on the session ``session`` in ``cwd``, if any."""
        for run in self._going.values():
            if run.session == session and run.cwd == cwd and run.waiting:
                return run
        return None

    def waiting_in(self, notebook: str) -> BackgroundRun | None:
        """The run in place waiting for input in notebook ``notebook`` (API path), if any."""
        for run in self._going.values():
            if run.notebook == notebook and run.waiting:
                return run
        return None

    def prune(self) -> None:
        """Forget runs that ended more than ``retention`` s ago, or past ``max_finished``."""
        now = time.monotonic()
        finished = self._finished
        while finished:
            run_id, finished_at = next(iter(finished.items()))
            if len(finished) <= self.max_finished and now - finished_at <= self.retention:
                return  # the runs after it ended later
            del finished[run_id]
            del self._runs[run_id]

    async def close(self, *, waiting_only: bool = False) -> None:
        """Cancel every run still going (``waiting_only``: those waiting for input) and wait.

        The server stops in two steps: the calls waiting for input are interrupted first, then
        the sessions are shut down, which ends the other calls ("Session was shut down"), and
        only then is every run left cancelled.
        """
        runs = [run for run in self._runs.values() if run.waiting or not waiting_only]
        await asyncio.gather(*(run.close() for run in runs))
        if not waiting_only:
            self._runs.clear()
            self._going.clear()
            self._finished.clear()


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
            raise InvalidRequestError(unknown_fields(unknown, ["value"], prefix="Unknown field(s)"))
        value = body.get("value")
        if not isinstance(value, str):
            raise InvalidRequestError("value must be a string")
        await caller.require(ACTION, RESOURCE)
        return await self.runs.get(run_id).next_stop(observer, answer=value)

    async def follow(self, run_id: str, caller: Caller) -> dict[str, Any]:
        """The run's next stop without answering: its end, or its prompt (at once if waiting)."""
        await caller.require(ACTION, RESOURCE)
        return await self.runs.get(run_id).next_stop()

    async def progress(self, run_id: str, after: str, caller: Caller) -> dict[str, Any]:
        """The run's state and events after the cursor ``after`` (the query argument), at once.

        ``InvalidRequestError`` for a cursor that is not an event number or is past the end,
        ``NotFoundError`` for an unknown run.
        """
        cursor = parse_cursor(after)
        await caller.require(ACTION, RESOURCE)
        return self.runs.get(run_id).progress(cursor)

    async def follow_up(
        self,
        follow: FollowUp,
        caller: Caller,
        observer: ExecutionObserver | None = None,
        control: CallControl | None = None,
    ) -> dict[str, Any]:
        """A tool's ``run_id`` + ``answer`` (answer, then follow) or + ``wait`` (follow).

        Following never cancels the run when the follower goes away.
        """
        await caller.require(ACTION, RESOURCE)
        run = self.runs.get(follow.run_id)
        if follow.answer is not None:
            return await run.next_stop(observer, control, answer=follow.answer, detach=True)
        return await run.next_stop(observer, control, wait=follow.wait, detach=True)

    async def refuse(
        self,
        run_id: str,
        notice: str,
        observer: ExecutionObserver | None = None,
        control: CallControl | None = None,
    ) -> dict[str, Any]:
        """End-of-file for the run's waiting prompt (``notice`` says why); its next stop."""
        run = self.runs.get(run_id)
        run.stdin.refuse(notice)
        return await run.next_stop(observer, control, detach=True)

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
    """The error of a call on a session waiting for an answer (docs/developers/contract.md §8.3)."""
    return ConflictError(f"Session {name} is waiting for input")
