"""Stopping calls: deadlines a cell cannot ignore, interrupts that reach only their own call,
callers hanging up before their kernel is even ready, and the timeout notice's wording."""

from __future__ import annotations

import json

import pytest
from tornado.httpclient import HTTPClientError

from jupyter_xcsh.execution.kernel.result import timeout_notice, whole_seconds
from jupyter_xcsh.execution.python.call import ESCALATED
from tests.support.gateway import KERNELS, kernel_gateway, use_kernels  # noqa: F401
from tests.support.python_tool import (
    StreamedCall,
    eventually,
    interrupt_call,
    kernel_ids,
    run,
    sessions,
    write_python_kernel_spec,
)

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(params=KERNELS)
def jp_server_config(request, jp_server_config):
    return use_kernels(request, jp_server_config)


IGNORES_SIGINT = (
    "import signal, time\n"
    "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
    "print('ignoring interrupts', flush=True)\n"
    "while True:\n"
    "    time.sleep(0.05)"
)


@pytest.mark.slow
async def test_a_cell_ignoring_its_interrupt_ends_within_the_deadline_and_says_state_is_lost(
    jp_fetch,
):
    before = await run(jp_fetch, "import os\nkept = 1\nprint(os.getpid())")

    result = await run(jp_fetch, IGNORES_SIGINT, timeout=2)

    assert result["timedOut"] is True
    assert result["text"] == "[Command timed out after 2 seconds]\nignoring interrupts"
    cell = result["cells"][0]
    assert (cell["status"], cell["exitCode"]) == ("error", None)
    # The contract is deadline + 1 s (the cell started right away on the warm session).
    assert cell["durationMs"] < 3000
    session = result["session"]
    assert (session["stateLost"], session["stateLostReason"]) == (True, ESCALATED)
    # One restart more than before the call: a kernel that died at its start (another process
    # took its port between jupyter_client choosing it and the kernel binding it) is restarted
    # and re-run by the first call, and counted there.
    restarts, generation = before["session"]["restartCount"], before["session"]["generation"]
    assert (session["restartCount"], session["generation"]) == (restarts + 1, generation + 1)
    after = await run(jp_fetch, "import os\nprint('kept' in globals(), os.getpid())", timeout=120)
    seen, pid = after["text"].split()
    assert (seen, after["isError"]) == ("False", False)
    assert pid != before["text"]  # a new kernel process
    assert after["session"]["stateLost"] is False  # already said by the timed-out call
    assert after["session"]["generation"] == generation + 1


#: A cell that runs until the test creates the file ``go`` (in the session's cwd, the root).
GATED = (
    "import os, time\nprint('{name} runs', flush=True)\n"
    "while not os.path.exists('go'):\n    time.sleep(0.05)\nprint('{name} done')"
)


async def test_interrupting_a_call_by_its_id_stops_only_that_call(jp_fetch, jp_root_dir):
    a = StreamedCall(jp_fetch, {"cells": [{"code": GATED.format(name="a")}], "session": "a"})
    b = StreamedCall(jp_fetch, {"cells": [{"code": GATED.format(name="b")}], "session": "b"})
    # Both cells are running in their kernels (not merely accepted).
    await eventually(a.printed("a runs"), timeout=120)
    await eventually(b.printed("b runs"), timeout=120)

    assert await interrupt_call(jp_fetch, a.call_id) == {"interrupted": True}
    stopped = await a.result(30)

    assert (stopped["cancelled"], stopped["callId"]) == (True, a.call_id)
    assert "KeyboardInterrupt" in stopped["text"]
    assert await _busy(jp_fetch, {"b"})  # b is still running
    (jp_root_dir / "go").write_text("")
    finished = await b.result(60)
    assert (finished["cancelled"], finished["text"]) == (False, "b runs\nb done")
    assert finished["callId"] == b.call_id


async def _busy(jp_fetch, names):
    return {s["name"] for s in await sessions(jp_fetch) if s["busy"]} == names


@pytest.mark.slow
async def test_interrupting_a_queued_call_by_its_id_ends_it_at_once(jp_fetch, jp_root_dir):
    running = StreamedCall(jp_fetch, {"cells": [{"code": GATED.format(name="first")}]})
    await eventually(running.printed("first runs"), timeout=120)
    queued = StreamedCall(jp_fetch, {"cells": [{"code": "print('never')"}], "timeout": 120})
    await eventually(queued.started)
    await eventually(lambda: _queue_length(jp_fetch, 1))

    await interrupt_call(jp_fetch, queued.call_id)
    ended = await queued.result(30)

    assert (ended["cancelled"], ended["isError"], ended["timedOut"]) == (True, True, False)
    assert ended["text"] == "[Command cancelled]\n\n(no output)"
    assert ended["cells"][0]["status"] == "pending"
    assert await _busy(jp_fetch, {"default"})  # the running call is untouched
    (jp_root_dir / "go").write_text("")
    first = await running.result(60)
    assert (first["cancelled"], first["text"]) == (False, "first runs\nfirst done")


async def _queue_length(jp_fetch, n):
    return [s["queueLength"] for s in await sessions(jp_fetch)] == [n]


async def test_interrupting_a_call_that_is_not_running_is_a_404(jp_fetch):
    with pytest.raises(HTTPClientError) as e:
        await interrupt_call(jp_fetch, "0" * 32)

    assert e.value.code == 404
    assert json.loads(e.value.response.body)["message"] == f"No running call: {'0' * 32}"


@pytest.mark.slow
async def test_the_timeout_notice_gives_whole_seconds_rounded_half_up(jp_fetch):
    await run(jp_fetch, "import time")

    result = await run(jp_fetch, "time.sleep(30)", timeout=2.6)

    # The cell started with ~2.6 s left (the session was warm): 3, not "2.6".
    assert result["text"].startswith("[Command timed out after 3 seconds]\n")


def test_whole_seconds_round_half_up_and_are_at_least_one():
    assert [whole_seconds(s) for s in (0.01, 0.4, 0.5, 1.49, 1.5, 2.5, 9.5, 600)] == [
        1,
        1,
        1,
        1,
        2,
        3,
        10,
        600,
    ]
    assert timeout_notice(0.2) == "Command timed out after 1 seconds"


#: A kernel whose process starts at once but answers only after a minute (a slow cluster).
SLOW_READY = (
    "import runpy, sys, time\n"
    "time.sleep(60)\n"
    "sys.argv = ['ipykernel_launcher', '-f', sys.argv[1]]\n"
    "runpy.run_module('ipykernel_launcher', run_name='__main__')"
)


@pytest.fixture
def slow_ready_kernel(jp_kernel_dir):
    """A local kernel spec whose kernels answer only after a minute."""
    return write_python_kernel_spec(
        jp_kernel_dir, "slow-ready", "Python 3 (slow to answer)", SLOW_READY
    )


@pytest.mark.parametrize("jp_server_config", ["local"], indirect=True)
class TestCallerGoneWhileAPerCallKernelStarts:
    @pytest.mark.slow
    async def test_the_kernel_is_shut_down_without_waiting_for_it_to_answer(
        self, jp_fetch, jp_serverapp, slow_ready_kernel
    ):
        body = {
            "cells": [{"code": "1"}],
            "mode": "per-call",
            "kernel_name": slow_ready_kernel,
            "timeout": 120,  # the call itself would wait for the kernel
        }
        km = jp_serverapp.kernel_manager
        with pytest.raises(HTTPClientError) as e:
            # The client gives up after 3 s, while the tool waits for the kernel to answer.
            await jp_fetch(
                "api", "xcsh", "python", method="POST", body=json.dumps(body), request_timeout=3
            )
        assert e.value.code == 599
        assert len(km.list_kernel_ids()) <= 1

        # Shut down long before the minute its kernel takes to answer.
        await eventually(lambda: _no_kernels(jp_fetch), timeout=20)


async def _no_kernels(jp_fetch):
    return await kernel_ids(jp_fetch) == set()
