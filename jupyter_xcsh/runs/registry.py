"""Calls that outlive the request that started them: runs, followed by whoever asks.

Every python call and run in place is a run (a ``BackgroundRun``), which the request that
started it follows. With ``stdin: "ask"`` the run has a task of its own and that request
returns at the first prompt with the output so far and ``awaitingInput``; the kernel keeps
waiting. A call that cannot ask runs in the task of the request that started it (nothing would
make it answer earlier), followed by others all the same. Whoever answers
(``POST /api/xcsh/runs/<runId>/input``, the tool's own ``run_id`` + ``answer``: the agent, or a
person in the lab's activity panel) gets what the request would have got next: the end of the
call, or its next prompt. ``GET /api/xcsh/runs/<runId>`` and ``run_id`` + ``wait`` follow the
call without answering; ``GET /api/xcsh/runs/<runId>?after=<n>`` answers at once with its
state and the events after the ``n``-th (a run keeps its events, bounded, while it goes on:
``RunEvents``; once it has ended, only its result). A client that hangs up interrupts the
call unless it asked for ``detach`` (MCP's default): the run then goes on up to its own
timeout, to be followed again. The id of a run is its call id.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import math
import time
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from jupyter_xcsh.calls.caller import Caller, Permission
from jupyter_xcsh.calls.control import CallControl
from jupyter_xcsh.calls.observer import ExecutionObserver
from jupyter_xcsh.errors import ConflictError, InvalidRequestError, NotFoundError
from jupyter_xcsh.events.activity import CALL_ID, new_call_id
from jupyter_xcsh.execution.kernel.stdin import StdinPolicy, StdinSpec
from jupyter_xcsh.fields import unknown_fields

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
#: A cell event's JSON length, less its index's digits and its status (both ASCII).
CELL_ENVELOPE = len(json.dumps({"type": "cell", "index": 0, "status": ""})) - 1
#: What a start event's ``type`` adds to its call's size (``_held``).
START_ENVELOPE = len('"type": "start", ')
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
    MiB of output, and what the bound limits is the memory the kept text holds. A cell event's
    length is counted, not serialised (every call has two per cell). Once the run has ended
    (``close``) none are kept: its result holds the whole output.
    """

    def __init__(self, max_events: int = MAX_EVENTS, max_bytes: int = MAX_EVENT_BYTES) -> None:
        self.max_events = max_events
        self.max_bytes = max_bytes
        self.first = 0  # the number of the oldest event kept
        self.bytes = 0
        self.closed = False
        self._events: deque[tuple[dict[str, Any], int]] = deque()

    @property
    def next(self) -> int:
        """The number the next event will have: the cursor of everything so far."""
        return self.first + len(self._events)

    def add(self, event: dict[str, Any], size: int | None = None) -> None:
        """Keep ``event``, dropping the oldest past the bounds (never the newest).

        ``size``: what it counts in ``max_bytes``; default, its JSON's length. After
        ``close`` the event is only counted (the cursor goes on), not kept.
        """
        if self.closed:
            self.first += 1
            return
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

    def close(self) -> None:
        """Keep no event from now on (the run ended).

        Every cursor stays valid: the events an answer lacks are counted as ``skipped``.
        """
        self.closed = True
        self.first = self.next
        self.bytes = 0
        self._events.clear()

    def after(self, cursor: int) -> tuple[list[dict[str, Any]], int]:
        """The events numbered ``cursor`` on, and how many of those are no longer kept."""
        start = max(cursor, self.first)
        kept = itertools.islice(self._events, start - self.first, None)
        return [event for event, _ in kept], start - cursor

    def call_started(self, call: dict[str, Any]) -> None:  # noqa: D102
        self.add({"type": "start", **call}, _held(call) + START_ENVELOPE)

    def cell_status(self, index: int, status: str) -> None:  # noqa: D102
        size = CELL_ENVELOPE + len(str(index)) + len(status)
        self.add({"type": "cell", "index": index, "status": status}, size)

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


def _held(value: Any) -> int:
    """About the length of ``value`` as JSON, without serialising it.

    Its strings' lengths, its keys and punctuation, 12 for anything else: what a run's start
    event (a call's names, and its cells: flat objects) holds, as a chunk counts its text.
    """
    if isinstance(value, str):
        return len(value) + 2
    if isinstance(value, list):
        return 2 + sum(_held(item) + 2 for item in value)
    if not isinstance(value, dict):
        return 12
    size = 2
    for key, item in value.items():
        size += len(key) + 4
        if isinstance(item, str):  # the common case, without a call
            size += len(item) + 2
        else:
            size += _held(item)
    return size


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
        # The call: its own task (``start``), or the future of a call run by the request
        # that started it (``run_here``).
        self._task: asyncio.Future[dict[str, Any]] | None = None
        # The followers' waits (one future each): woken when the call ends or a prompt starts
        # or stops waiting. A future each, not tasks waiting on events: a call's follower
        # made two tasks and cancelled them, per call, for nothing.
        self._waiters: list[asyncio.Future[None]] = []
        # Listeners of its prompts, let go once the call has ended: the run and its stdin
        # referred to each other, so every run ended as garbage for the cyclic collector.
        self._unlisten = [stdin.listen(self._wake)]

    def start(self, work: Awaitable[dict[str, Any]]) -> None:
        """Run ``work`` (the call, reporting to ``self.relay``) in a task of its own."""
        self._task = asyncio.ensure_future(work)
        self._task.add_done_callback(self._done)

    async def run_here(
        self,
        work: Awaitable[dict[str, Any]],
        observer: ExecutionObserver | None = None,
        control: CallControl | None = None,
        *,
        detach: bool = False,
    ) -> dict[str, Any]:
        """Run ``work`` in the calling task, to its end; its result.

        For a call that cannot ask for input: nothing would make its request answer before the
        end, so it needs no task of its own and nobody to wake its request. Whoever else
        follows it meanwhile (``next_stop``, ``progress``) does as for a run in its own task.
        ``observer`` and ``control`` are the request's, as ``next_stop`` takes them (a client
        gone away cancels the call unless ``detach``: then the call just goes on).
        """
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        future.add_done_callback(self._done)
        self._task = future
        if observer is not None:
            self.relay.targets.append(observer)
        if control is not None and not detach:
            control.attach(self.control.cancel)
        try:
            result = await work
        except Exception as e:
            future.set_exception(e)  # a follower gets it too (retrieved in ``_done``)
            raise
        except BaseException:
            future.cancel()
            raise
        finally:
            if observer is not None:
                self.relay.targets.remove(observer)
            if control is not None and not detach:
                control.attach(None)
        future.set_result(result)
        return result

    def on_prompt(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` whenever one of the call's prompts starts or stops waiting."""
        self._unlisten.append(self.stdin.listen(callback))

    def _wake(self) -> None:
        """Wake every follower: the call ended, or one of its prompts started or stopped."""
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None)

    def _done(self, task: asyncio.Future[dict[str, Any]]) -> None:
        self.finished_at = time.monotonic()
        # Kept for re-attach is the result, not the stream: the events held up to 4 MiB of
        # output for as long as the run is kept (10 minutes), the result holds all of it.
        self.events.close()
        self._wake()
        for unlisten in self._unlisten:
            unlisten()
        self._unlisten.clear()
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
        gone = False

        def went_away() -> None:
            nonlocal gone
            gone = True
            self._wake()

        if control is not None:
            control.attach(went_away if detach else self.control.cancel)
        deadline = None if wait is None else time.monotonic() + wait
        if observer is not None:
            self.relay.targets.append(observer)
        try:
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
                if gone or (deadline is not None and now >= deadline):
                    if partial is not None:
                        return await self._running_result(partial)
                    deadline = now + 0.05  # not under way yet: its result so far soon
                left = None if deadline is None else max(0.0, deadline - now)
                try:
                    await self._woken(left)
                except asyncio.CancelledError:
                    if not detach:  # the follower's own task ended: the call with it
                        self.control.cancel()
                    raise
        finally:
            if observer is not None:
                self.relay.targets.remove(observer)
            if control is not None:
                control.attach(None)

    async def _woken(self, timeout: float | None) -> None:
        """Wait until ``_wake`` (or ``timeout`` seconds)."""
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[None] = loop.create_future()
        self._waiters.append(waiter)
        timer = None if timeout is None else loop.call_later(timeout, _wake_one, waiter)
        try:
            await waiter
        finally:
            self._waiters.remove(waiter)
            if timer is not None:
                timer.cancel()

    def progress(self, after: int) -> dict[str, Any]:
        """The run's state and its events after the ``after``-th, at once (``RunProgress``).

        ``InvalidRequestError`` when ``after`` is past the events so far. A run that ended
        carries its result (a run that failed raises its error) and no events: ``skipped``
        counts those after ``after``.
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


def _wake_one(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


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
        # Runs are forgotten as others end, after their request has answered (freeing an
        # old run and its result was work on the way of every new call before it began).
        self.prune()

    async def start(
        self,
        work: RunWork,
        stdin: StdinSpec,
        input_timeout: float,
        observer: ExecutionObserver | None,
        control: CallControl | None,
        *,
        detach: bool,
        reject_queued: Callable[[BackgroundRun], None] | None = None,
        session: str | None = None,
        cwd: str = "",
        notebook: str | None = None,
    ) -> dict[str, Any]:
        """Run ``work`` as a new run; return at its end or (``ask``) at its first prompt.

        ``reject_queued(run)`` ends the calls queued behind this one (on its session or
        notebook) whenever one of its prompts waits: they would only wait out their deadline.
        ``session`` and ``cwd``, or ``notebook``, say where the run holds a kernel.
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
                    refuse(run)

            run.on_prompt(refuse_queued)
        call = work(run.relay, run.control, policy, run_id)
        if not stdin.asks:
            # Nothing returns before the call's end: the request runs it itself (a task of its
            # own, woken at the end, cost every call a turn of the loop and ~4% of its work).
            self.add(run)
            return await run.run_here(call, observer, control, detach=detach)
        # The task starts at next_stop's first wait, its follower in place: it sees everything.
        run.start(call)
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

    #: Answering or following a run runs code further.
    permission: ClassVar[Permission] = Permission("execute", "kernels")

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
        await caller.require(*self.permission)
        return await self.runs.get(run_id).next_stop(observer, answer=value)

    async def follow(self, run_id: str, caller: Caller) -> dict[str, Any]:
        """The run's next stop without answering: its end, or its prompt (at once if waiting)."""
        await caller.require(*self.permission)
        return await self.runs.get(run_id).next_stop()

    async def progress(self, run_id: str, after: str, caller: Caller) -> dict[str, Any]:
        """The run's state and events after the cursor ``after`` (the query argument), at once.

        ``InvalidRequestError`` for a cursor that is not an event number or is past the end,
        ``NotFoundError`` for an unknown run.
        """
        cursor = parse_cursor(after)
        await caller.require(*self.permission)
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
        await caller.require(*self.permission)
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


def session_waiting(name: str, run: BackgroundRun) -> ConflictError:
    """The error of a call on a session waiting for an answer (docs/developers/contract.md §8.3).

    ``name`` is the session's name, or the notebook's path as the caller gave it, and ``run``
    the run whose prompt waits. The message names the run, its prompt (never an answer: a
    password's is never kept) and both ways out, in the tools' own words, so an agent that
    forgot its prompt is not left with a session blocked for ``input_timeout`` seconds.
    """
    waiting = run.stdin.waiting
    if waiting is None:  # its wait just ended: what the caller may do is try again
        return ConflictError(f"Session {name} is waiting for input", reason="waiting_for_input")
    where: dict[str, str]
    if run.notebook is not None:
        where = {"notebook_path": name}
    else:
        where = {"session": name} | ({"cwd": run.cwd} if run.cwd else {})
    answer = json.dumps({"run_id": run.id, "answer": "..."})
    interrupt = json.dumps({"action": "interrupt"} | where)
    kind = "a password prompt" if waiting.password else "the prompt"
    left = run.stdin.input_timeout - (time.monotonic() - waiting.since)
    message = (
        f"Session {name} is waiting for input: run {run.id} waits for an answer to {kind} "
        f"{waiting.prompt!r}. Answer it with the python tool: {answer}; or end its wait with "
        f"the kernel tool: {interrupt} (over REST: POST /api/xcsh/runs/{run.id}/input "
        f'{{"value": "..."}}, or POST /api/xcsh/calls/{run.id}/interrupt).'
    )
    if math.isfinite(left):
        message += f" Unanswered, it gets end of file in {max(0, math.ceil(left))} seconds."
    details: dict[str, Any] = {
        "runId": run.id,
        "prompt": waiting.prompt,
        "password": waiting.password,
        "cellIndex": waiting.cell_index,
    }
    if run.notebook is not None:
        details["notebookPath"] = run.notebook
    else:
        details["session"] = name
        details["cwd"] = run.cwd
    return ConflictError(message, reason="waiting_for_input", details=details)
