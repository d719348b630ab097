"""The one registry of running calls: a call is cancelled by its id, or by the request that
started it, while it runs, and never after (``tools/runs.RunRegistry``).

The end-to-end paths (``POST /api/xcsh/calls/<callId>/interrupt``, MCP
``notifications/cancelled``, a client that disconnects) are tested against a real server in
``test_python_interrupts.py``, ``test_notebook_run.py`` and ``test_mcp_tools.py``; this file
pins the registry's own rules, on real asyncio tasks.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from jupyter_xcsh.calls.control import CallCancelledError, CallControl
from jupyter_xcsh.errors import NotFoundError
from jupyter_xcsh.execution.kernel.stdin import StdinSpec
from jupyter_xcsh.runs.registry import RunRegistry


class Work:
    """A call that waits until released or cancelled, noting its run id."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.run_id = ""
        self.task: asyncio.Task[Any] | None = None  # the task it ran in

    async def __call__(
        self, observer: Any, control: CallControl, stdin: Any, run_id: str
    ) -> dict[str, Any]:
        self.run_id = run_id
        self.task = asyncio.current_task()
        try:
            await control.guard(self.release.wait())
        except CallCancelledError:
            return {"text": "Command cancelled", "cancelled": True}
        return {"text": "done", "cancelled": False}


def start(
    runs: RunRegistry, work: Work, owner: CallControl, stdin: StdinSpec | None = None
) -> asyncio.Future[Any]:
    # Detached, as MCP's calls are by default: the request's control alone would not stop it.
    spec = stdin or StdinSpec()
    return asyncio.ensure_future(runs.start(work, spec, 300.0, None, owner, detach=True))


async def test_a_running_call_is_cancelled_by_its_id_and_an_ended_one_is_not_found():
    runs, work = RunRegistry(), Work()
    call = start(runs, work, CallControl())
    await asyncio.sleep(0.01)

    runs.interrupt(work.run_id)

    assert (await call)["cancelled"] is True
    with pytest.raises(NotFoundError, match=f"No running call: {work.run_id}"):
        runs.interrupt(work.run_id)  # ended: kept for followers, no longer cancellable
    with pytest.raises(NotFoundError, match="No running call: " + "0" * 32):
        runs.interrupt("0" * 32)


async def test_a_request_cancels_the_calls_it_started_and_no_others():
    runs, mine, theirs = RunRegistry(), Work(), Work()
    owner, other = CallControl(), CallControl()
    # Cancelled before the call has even begun: it is registered from its start. (A call
    # that may ask for input has a task of its own, which has not run yet.)
    call = start(runs, mine, owner, StdinSpec(mode="ask"))
    await asyncio.sleep(0)  # the request is in RunRegistry.start's first wait
    assert mine.run_id == ""  # the call's own task has not run yet
    assert runs.interrupt_owned(owner) is True
    assert runs.interrupt_owned(CallControl()) is False
    theirs_call = start(runs, theirs, other)

    assert (await call)["cancelled"] is True
    assert owner.cancelled is False  # the request goes on, to answer with the call's result
    assert runs.interrupt_owned(owner) is True  # it did start one (ended now): nothing to do
    theirs.release.set()
    assert (await theirs_call)["cancelled"] is False


async def test_a_call_that_cannot_ask_runs_in_its_request_followed_as_any_run():
    """Nothing makes such a request answer before the call's end: the call runs in the
    request's own task (a task of its own, and waking the request at its end, cost every
    call a turn of the event loop), and is registered, followed and cancelled as any run."""
    runs, work, owner = RunRegistry(), Work(), CallControl()
    call = start(runs, work, owner)
    try:
        await asyncio.sleep(0)  # the request's first step: the call is under way in it

        assert work.task is call
        run = runs.get(work.run_id)
        assert run.running
        follower = asyncio.ensure_future(run.next_stop())  # another request following it
        await asyncio.sleep(0.01)
        assert not follower.done()
    finally:
        work.release.set()
        result = await call

    assert result == {"text": "done", "cancelled": False}
    assert await follower == result
    assert not run.running and runs.interrupt_owned(owner) is True
    with pytest.raises(NotFoundError, match=f"No running call: {work.run_id}"):
        runs.interrupt(work.run_id)


async def test_a_call_running_in_its_request_is_cancelled_by_its_id():
    runs, work = RunRegistry(), Work()
    call = start(runs, work, CallControl())
    await asyncio.sleep(0)

    runs.interrupt(work.run_id)

    assert (await call)["cancelled"] is True
    assert work.task is call
    assert (await runs.get(work.run_id).next_stop())["cancelled"] is True


async def _ended_run(runs: RunRegistry) -> str:
    work = Work()
    call = start(runs, work, CallControl())
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    work.release.set()
    await call
    return work.run_id


async def test_ended_runs_are_kept_up_to_the_bound_the_oldest_forgotten_first():
    runs = RunRegistry(max_finished=3)
    ended = [await _ended_run(runs) for _ in range(5)]
    work = Work()
    call = start(runs, work, CallControl())  # a run going on is never forgotten for the bound
    await asyncio.sleep(0.01)
    for run_id in ended[:2]:
        with pytest.raises(NotFoundError, match=f"No such run: {run_id}"):
            runs.get(run_id)
    assert [runs.get(run_id).id for run_id in ended[2:]] == ended[2:]
    assert runs.get(work.run_id).running
    work.release.set()
    await call


async def test_an_ended_run_is_forgotten_after_the_retention_time():
    runs = RunRegistry(retention=0.2)
    first = await _ended_run(runs)
    await asyncio.sleep(0.3)
    second = await _ended_run(runs)
    with pytest.raises(NotFoundError, match=f"No such run: {first}"):
        runs.get(first)
    assert runs.get(second).id == second
